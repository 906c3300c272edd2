"""``use_sim_time``: the simulated robot node is the graph's one ``/clock`` source, so every timer
that drives the simulation or watches a stream runs on the steady clock.  With sim-time timers
nothing ever ticked (no ``/clock``, no ``joint_states``, the reset refused as stale, 0 training
steps).  Here a realtime deploy graph and a short training run go with ``use_sim_time`` on."""
from __future__ import annotations

import itertools
import subprocess
import sys
import time

import pytest
import yaml

from morl_robot.errors import ConfigError
from morl_robot.session.config import load_session_config
from morl_robot.session.graph import deploy_nodes, safety_test_nodes, train_nodes


def test_every_node_of_every_graph_gets_the_session_clock(tmp_path):
    for flag in (False, True):
        train = train_nodes(load_session_config("train", {"actors": 2, "use_sim_time": flag}), tmp_path)
        deploy = deploy_nodes(load_session_config("deploy", {"use_sim_time": flag, "policy": "/p.onnx"}))
        safety = safety_test_nodes(load_session_config("safety_test", {"use_sim_time": flag}))
        for spec in train + deploy + safety:
            assert spec.parameters["use_sim_time"] is flag, spec


def test_sim_time_without_the_simulated_clock_is_refused():
    with pytest.raises(ConfigError, match="use_sim_time.*needs backend sim"):
        load_session_config("deploy", {"use_sim_time": True, "backend": "hardware"})


@pytest.mark.ros
def test_realtime_deploy_graph_runs_on_sim_time(ros_session, tmp_path):
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import Trigger

    from morl_robot.bench.graph import _export_policy
    from morl_robot.nodes import wire

    s = ros_session
    policy = tmp_path / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", policy)
    cfg = load_session_config("deploy", {"namespace": "simtime", "policy": str(policy), "use_sim_time": True})
    clocks = s.probe.subscribe("/clock", Clock, wire.CLOCK_QOS)
    joints = s.probe.subscribe("/simtime/joint_states", JointState, wire.SENSOR_QOS)
    safe = s.probe.subscribe("/simtime/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    for spec in deploy_nodes(cfg):
        s.group.start(spec)
    s.probe.wait_for(lambda: len(joints) > 5 and len(clocks) > 5, 90, "joint_states and /clock on sim time")
    deadline = time.monotonic() + 60
    while not s.probe.call("/simtime/safety/reset", Trigger, timeout=10).success:  # sensors fresh: released
        assert time.monotonic() < deadline, s.logs()
        time.sleep(0.5)
    released = len(safe)
    s.probe.wait_for(lambda: len(safe) > released + 20, 60, "policy commands through the released monitor")
    stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in list(joints)[-20:]]
    sim_now = max(m.clock.sec + 1e-9 * m.clock.nanosec for _, m in list(clocks))
    # stamps are simulated time (seconds since the episode began), not the system clock, and they advance
    assert 0 < stamps[-1] <= sim_now + 0.5 and stamps[-1] < 1e6, stamps
    # they advance, except where an episode ends: a reset restarts the simulated time (a new episode's
    # settled start may sit just below where a short episode ended, e.g. 3.05 -> 3.0 s)
    steps = [b - a for a, b in itertools.pairwise(stamps)]
    assert sum(d < 0 for d in steps) <= 1, stamps
    assert sum(d > 0 for d in steps) >= len(steps) // 2, stamps
    for rc in s.group.stop().values():
        assert rc == 0, s.logs()


@pytest.mark.ros
def test_train_cli_with_use_sim_time_reaches_its_steps(tmp_path, domain_id):
    from morl_robot.session.processes import ros_env

    out = tmp_path / "run"
    demos = "learner.training.demonstrations"  # the recipe's 3 000-update cloning at the end cut to 10
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", "sawyer_peg_in_hole", "--steps", "200",
           "--use-sim-time", "--out", str(out), "--no-progress", "--namespace", "simtrain",
           "--domain-id", str(domain_id), "--set", f"{demos}.pretrain_updates=10",
           "--set", f"{demos}.critic_warmup_updates=2"]
    done = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert yaml.safe_load((out / "session.yaml").read_text())["use_sim_time"] is True
    # the learner exits by itself once 200 env steps arrived: its final checkpoint says so
    steps = [int(p.stem.split("-")[1]) for p in (out / "checkpoints").glob("ckpt-*.pt")]
    assert steps and max(steps) >= 200, steps
    assert (out / "policy.onnx").is_file()
