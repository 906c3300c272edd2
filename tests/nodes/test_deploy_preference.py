"""Deploying an ε-conditioned policy through the whole graph (robot node, safety monitor, policy
server): the preference chosen at start (``morl-robot deploy --preference``, the session's
``policy_server.preference``) is what the graph serves, and changing it while the robot runs
(parameter) is accepted, reported, and the commands keep flowing through the monitor."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from morl_robot.session.config import load_session_config
from morl_robot.session.graph import deploy_nodes
from tests.conftest import run_cli

RANGES = [[0.01, 1.0], [0.01, 1.0]]


def _export_conditioned(path) -> None:
    """An untrained ε-conditioned policy for the peg task whose actions depend clearly on ε (in-process
    returns on seed 500: task 3.60 / 3.12 / 2.79 under ε = (0.01, 1), the centre, (1, 0.01), measured
    before the compliant controller; 3.63 under (0.01, 1) with it)."""
    import torch

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.learning import ActionSpec, MOMPOLearner
    from morl_robot.learning.config import config_from_dict
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy

    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        cfg = config_from_dict({"objective_names": list(env.task.objective_names), "preferences": {"ranges": RANGES},
                                "networks": {"policy_hidden": [32, 24], "critic_hidden": [16, 16]}})
        learner = MOMPOLearner(env.observation_space.shape[0], ActionSpec.box(env.action_space.shape[0]), 2, cfg)
        with torch.no_grad():
            learner.policy.mean_head.weight.normal_(0.0, 0.01)  # gentle: no e-stop in an episode
            first = next(m for m in learner.policy.torso.modules() if isinstance(m, torch.nn.Linear))
            first.weight[:, -2:] *= 30.0
        export_policy(learner.policy, contract_for_task(env.task, env.robot, cfg, policy_version=1, run_id="pref"),
                      path)
    finally:
        env.close()


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("policy") / "conditioned.onnx"
    _export_conditioned(path)
    return path


def deploy(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    out = args[args.index("--out") + 1] if "--out" in args else None
    return run_cli(["deploy", *args], timeout, out=out)


def test_deploy_refuses_a_preference_that_does_not_fit(policy, tmp_path) -> None:
    done = deploy(str(policy), "--preference", "0.5", "3", "--out", str(tmp_path))
    assert done.returncode == 2 and "--preference: ε for objective 'wrist_force' is 3.0, outside its range [0.01, 1]" \
        in done.stderr, done.stderr
    done = deploy(str(policy), "--preference", "0.5", "--out", str(tmp_path))
    assert done.returncode == 2 and "has 1 values but the policy takes 2" in done.stderr, done.stderr


@pytest.mark.ros
def test_sim_to_sim_check_under_a_chosen_preference(policy, tmp_path) -> None:
    done = deploy(str(policy), "--preference", "0.01", "1.0", "--episodes", "1", "--seed", "500",
                  "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "preference task=0.01, wrist_force=1" in done.stderr
    report = json.loads((tmp_path / "deploy_report.json").read_text())
    assert report["preference"] == [0.01, 1.0]
    # the graph served the chosen preference: its episode is the in-process one under that preference
    # (under the centre the task return would be 3.12, see _export_conditioned)
    assert max(report["max_abs_difference"]) < 1e-3, report
    assert report["in_process_returns"][0][0] == pytest.approx(3.63, abs=0.01)


@pytest.mark.ros
def test_preference_changes_while_the_robot_runs(ros_session, policy) -> None:
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from std_msgs.msg import Float64MultiArray

    from morl_robot.nodes import wire

    s = ros_session

    def preference_task() -> float:
        return float(s.probe.diagnostics("policy").get("preference/task", "nan"))

    cfg = load_session_config("deploy", {"namespace": "pref", "policy": str(policy),
                                         "policy_server": {"preference": [1.0, 0.01]}})
    safe = s.probe.subscribe("/pref/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    s.probe.diagnostics()
    for spec in deploy_nodes(cfg):
        s.group.start(spec)
    s.probe.wait_for(lambda: preference_task() == pytest.approx(1.0), 60, "the start preference in diagnostics")
    done = subprocess.run([sys.executable, "-m", "morl_robot.cli", "release", "--namespace", "pref", "--timeout", "60",
                           "--domain-id", str(s.domain_id)], env=s.env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr + s.logs()
    s.probe.wait_for(lambda: len(safe) > 10, 30, "commands through the released monitor")

    def set_preference(value):
        param = Parameter(name="preference", value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                                                                  double_array_value=value))
        return s.probe.call("/pref/policy_server/set_parameters", SetParameters,
                            SetParameters.Request(parameters=[param])).results[0]

    result = set_preference([0.01, 1.0])
    assert result.successful, result.reason
    s.probe.wait_for(lambda: preference_task() == pytest.approx(0.01), 10, "the new preference in diagnostics")
    n = len(safe)
    s.probe.wait_for(lambda: len(safe) > n + 10, 10, "commands keep flowing after the change")
    result = set_preference([0.001, 1.0])
    assert not result.successful and "'task' is 0.001, outside its range [0.01, 1]" in result.reason
    s.probe.wait_for(lambda: s.probe.diagnostics("policy").get("rejected_preferences") == "1", 10,
                     "the refusal counted in diagnostics")
    assert s.probe.diagnostics("policy")["preference_changes"] == "1"
    assert s.probe.diagnostics("safety")  # the monitor is still there and reporting
    last = np.asarray(wire.read_labelled(safe[-1][1])[0])
    assert np.all(np.isfinite(last))
    for rc in s.group.stop().values():
        assert rc == 0, s.logs()


def test_session_preference_must_be_positive_numbers() -> None:
    from morl_robot.errors import ConfigError

    cfg = load_session_config("deploy", {"policy": "/p.onnx", "policy_server": {"preference": [1, 0.5]}})
    assert cfg.policy_server.preference == [1.0, 0.5]  # floats: a ROS double array
    (server,) = [s for s in deploy_nodes(cfg) if s.name == "policy_server"]
    assert server.parameters["preference"] == [1.0, 0.5] and server.parameters["timing"] == "realtime"
    for bad, words in (("0.1,0.5", r"policy_server.preference': expected a list"),
                       ([0.1, -1.0], r"policy_server.preference': must be positive numbers"),
                       ([0.1, True], r"policy_server.preference\[1\]': expected a number, got bool")):
        with pytest.raises(ConfigError, match=words):
            load_session_config("deploy", {"policy": "/p.onnx", "policy_server": {"preference": bad}})
