"""End to end through the real CLI (issue 34): `morl-robot deploy results/demo/seed0/policy.onnx
--backend hardware --emulate …` for two episodes.  Before, the reset after the first episode drove
the inserted peg straight home in joint space: 105-245 N at the wrist, right_j1 at its 80 N·m limit,
an e-stop, and a robot node fault after the 20 s reset timeout.  Now the reset backs the peg out
first: the second episode starts, and the monitor saw no force or effort violation at all."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli

POLICY = Path(__file__).resolve().parents[2] / "results" / "demo" / "seed0" / "policy.onnx"


def _resets(policy_server_log: str) -> list[float]:
    """Seconds the policy server went without task_step (a reset on hardware) before serving again."""
    out, start = [], None
    for line in policy_server_log.splitlines():
        m = re.search(r"\[(\d+\.\d+)\]", line)
        if m is None:
            continue
        t = float(m.group(1))
        if "holding (missing_input): newest task_step" in line and start is None:
            start = t
        elif "serving again" in line and start is not None:
            out.append(t - start)
            start = None
    return out


def test_the_second_episode_starts_after_a_reset_that_never_pushed(tmp_path: Path, domain_id: int) -> None:
    from morl_robot.session.processes import ros_env

    done = run_cli(["deploy", str(POLICY), "--backend", "hardware", "--emulate", "latency=0.02",
                    "--duration", "40", "--out", str(tmp_path)], 300, env=ros_env(domain_id), out=str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    status = json.loads(done.stdout[done.stdout.index("{"):done.stdout.rindex("}") + 1])
    monitor = status["safety_monitor"]
    pushed = {k: v for k, v in monitor.items() if k.startswith(("violations/wrench", "violations/joints.effort"))}
    assert not pushed, f"the monitor saw forces/efforts (force rules at 20/40 N, effort at 80 %/100 %): {pushed}"
    if int(monitor.get("estops", 0)):  # only a watchdog's, for sensor streams the loaded host delivered late
        assert any(k.startswith("violations/stale.") for k in monitor), monitor
        assert int(monitor.get("deadline_misses", 0)) > 0, monitor
    robot_log = (tmp_path / "logs" / "robot_node.log").read_text()
    assert "reset did not reach its start configuration" not in robot_log
    assert "reset stopped, " not in robot_log  # the force guard never had to act
    resets = _resets((tmp_path / "logs" / "policy_server.log").read_text())
    assert resets, "no reset completed: the second episode never started"
    assert all(r < 20.0 for r in resets), resets  # (before: 20 s and a fault)


def test_an_e_stop_engaged_during_the_reset_stops_it(tmp_path: Path, domain_id: int) -> None:
    """``safety/trigger`` while the robot node resets the arm after episode 1: the robot node (its
    executor busy with the reset) hears the latched e-stop on its driver link and stops the reset
    with an error saying so, instead of driving on."""
    import subprocess
    import sys
    import time

    from std_srvs.srv import Trigger

    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.session.processes import ros_env
    domain = domain_id  # the fixture: this run's own block of domain ids (a second import of conftest would not be)
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", str(POLICY), "--backend", "hardware",
           "--emulate", "latency=0.02", "--duration", "30", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, env=ros_env(domain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    probe = GraphProbe(domain, "estopper")
    log = tmp_path / "logs" / "policy_server.log"
    try:
        deadline = time.monotonic() + 120
        # the reset after episode 1 has begun when the policy server stops hearing task_step
        while not (log.exists() and "newest task_step is" in log.read_text()):
            if proc.poll() is not None:
                pytest.fail(f"deploy exited {proc.returncode} before episode 1 ended:\n{proc.stderr.read()[-3000:]}")
            assert time.monotonic() < deadline, "episode 1 never ended"
            time.sleep(0.1)
        time.sleep(1.0)  # into the retract
        assert probe.call("/morl/safety/trigger", Trigger, Trigger.Request(), timeout=30).success
        out, err = proc.communicate(timeout=120)
    finally:
        probe.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out[-2000:] + err[-3000:]
    robot_log = (tmp_path / "logs" / "robot_node.log").read_text()
    assert "reset stopped: the safety monitor's e-stop is latched" in robot_log
    stamp = r"\[(\d+\.\d+)\].*"
    triggered = float(re.search(stamp + "triggered by request",
                                (tmp_path / "logs" / "safety_monitor.log").read_text()).group(1))
    stopped = float(re.search(stamp + "reset stopped: the safety monitor's e-stop is latched", robot_log).group(1))
    # at the next reset period, not after the reset's timeout; the monitor logs its trip after it has
    # published the e-stop, so on a busy host the robot's line may carry the earlier stamp by a few ms
    assert -0.1 <= stopped - triggered < 1.0
    assert "reset did not reach its start configuration" not in robot_log
    monitor = json.loads(out[out.index("{"):out.rindex("}") + 1])["safety_monitor"]
    assert not {k for k in monitor if k.startswith(("violations/wrench", "violations/joints.effort"))}
