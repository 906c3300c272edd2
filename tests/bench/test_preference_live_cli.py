"""`morl-robot bench preference-live` through the real CLI parser against a real deploy graph (robot
node and policy server in real time, the safety monitor with its watchdogs) on a test domain: one
short episode per condition; the live change is accepted (the policy server's diagnostics count it
and its log says so), and the switched trace has samples under both preferences."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.ros


def _export_conditioned(path) -> None:
    """An untrained ε-conditioned peg policy with the box of the Sawyer conditioned runs (task fixed at
    0.1, wrist_force in [0.005, 0.1]); gentle, so that a short episode has no e-stop."""
    import torch

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.learning import ActionSpec, MOMPOLearner
    from morl_robot.learning.config import config_from_dict
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy

    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        cfg = config_from_dict({"objective_names": list(env.task.objective_names),
                                "preferences": {"ranges": [[0.1, 0.1], [0.005, 0.1]]},
                                "networks": {"policy_hidden": [32, 24], "critic_hidden": [16, 16]}})
        torch.manual_seed(0)
        learner = MOMPOLearner(env.observation_space.shape[0], ActionSpec.box(env.action_space.shape[0]), 2, cfg)
        with torch.no_grad():
            learner.policy.mean_head.weight.normal_(0.0, 0.01)
        export_policy(learner.policy, contract_for_task(env.task, env.robot, cfg, policy_version=1, run_id="live"),
                      path)
    finally:
        env.close()


@pytest.mark.parametrize("via", [pytest.param("parameter", marks=pytest.mark.extended), "topic"])  # (15 s each)
def test_a_short_live_switch_is_accepted_and_traced(tmp_path, domain_id, via) -> None:
    from morl_robot.cli import main

    policy = tmp_path / "conditioned.onnx"
    _export_conditioned(policy)
    out = tmp_path / "live"
    code = main(["bench", "preference-live", str(policy), "--out", str(out), "--episodes", "1",
                 "--seed", "3", "--switch-after", "1.0", "--max-seconds", "2.5", "--via", via, "--domain-id", str(domain_id)])
    logs = "\n".join(p.read_text()[-3000:] for p in (out / "logs").glob("*.log"))
    assert code == 0, logs
    assert (out / "preference_live.png").stat().st_size > 5000
    report = json.loads((out / "preference_live.json").read_text())
    assert report["before"] == [pytest.approx(0.1), 0.005] and report["after"] == [pytest.approx(0.1), 0.1]
    assert report["force_objective"] == "wrist_force" and report["via"] == via
    (episode,) = report["episodes"]
    assert episode["seed"] == 3 and set(episode) >= {"switch_s", "switched", "before", "after"}
    switched = episode["switched"]
    assert 1.0 <= switched["switch_requested_s"] <= switched["switch_accepted_s"] == episode["switch_s"] < 1.5
    # the change was accepted: counted in the policy server's diagnostics (the only one during the
    # episode) and logged; the controls changed nothing while they ran
    assert switched["preference_changes_in_episode"] == 1, switched
    assert episode["before"]["preference_changes_in_episode"] == 0 == episode["after"]["preference_changes_in_episode"]
    log = (out / "logs" / "policy_server.log").read_text()
    assert f"preference ({via}): task=0.1, wrist_force=0.005 -> task=0.1, wrist_force=0.1" in log
    for name in ("switched", "before", "after"):
        run = episode[name]
        trace = run["trace"]
        assert set(trace) == {"t", "force_N", "force_raw_N", "command", "preference"}
        assert len({len(v) for v in trace.values()}) == 1
        assert run["force"]["samples_before_switch"] >= 10 and run["force"]["samples_after_switch"] >= 10, run["force"]
        assert trace["force_N"][0] == 0.0 and all(np.isfinite(trace["force_N"]))  # tared at the reset reading
        assert all(c is None or len(c) == 3 for c in trace["command"]) and trace["command"][-1] is not None
        assert run["robot_episode"] >= 1 and run["duration_s"] == pytest.approx(2.5, abs=0.3)
    # the three runs start from the same state (one seed): the same reset reading (the tare)
    starts = [episode[name]["trace"]["force_raw_N"][0] for name in ("switched", "before", "after")]
    assert starts == [starts[0]] * 3, starts
    t = np.asarray(switched["trace"]["t"])
    prefs = np.asarray(switched["trace"]["preference"])
    np.testing.assert_allclose(prefs[t < episode["switch_s"]], [[0.1, 0.005]] * int((t < episode["switch_s"]).sum()))
    np.testing.assert_allclose(prefs[t >= episode["switch_s"]], [[0.1, 0.1]] * int((t >= episode["switch_s"]).sum()))
    np.testing.assert_allclose(episode["after"]["trace"]["preference"], [[0.1, 0.1]] * len(t_after := episode["after"]["trace"]["t"]))
    assert len(t_after) >= 20
    assert report["policy_server"]["preference"] == "task=0.1, wrist_force=0.1"
