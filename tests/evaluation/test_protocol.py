"""The evaluation protocol (`morl_robot.evaluation.protocol`) and `morl-robot evaluate`, run
through the real CLI parser on small exported policies."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.cli import main
from morl_robot.evaluation.protocol import (
    bootstrap_ci,
    evaluate_policy,
    load_policy,
    run_episode,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from policy_models import SAWYER, SHADOW, make_policy, task_contract


def _export(tmp_path, task=SAWYER, name="policy.onnx"):
    from morl_robot.serving.export import export_policy

    contract = task_contract(task)
    path = tmp_path / name
    export_policy(make_policy(contract), contract, path)
    return path


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=30))
def test_bootstrap_ci_brackets_the_mean(xs):
    lo, hi = bootstrap_ci(xs)
    mean = float(np.mean(xs))
    tol = 1e-9 * max(1.0, abs(mean))
    assert lo - tol <= mean <= hi + tol
    assert (lo, hi) == bootstrap_ci(xs)  # seeded: the same returns give the same interval


def test_bootstrap_ci_narrows_with_more_episodes():
    rng = np.random.default_rng(0)
    small, large = rng.normal(size=10), rng.normal(size=1000)
    assert np.subtract(*bootstrap_ci(large)[::-1]) < np.subtract(*bootstrap_ci(small)[::-1]) / 3


def test_evaluation_is_repeatable_and_uses_consecutive_seeds(tmp_path):
    loaded = load_policy(_export(tmp_path))
    a = evaluate_policy(loaded.act, loaded.task, episodes=2, seed=5)
    b = evaluate_policy(loaded.act, loaded.task, episodes=2, seed=5)
    assert [e.seed for e in a.episodes] == [5, 6]
    np.testing.assert_array_equal(a.returns, b.returns)
    # episode i is the same episode whichever evaluation it is part of (robot_node's seed + i)
    c = evaluate_policy(loaded.act, loaded.task, episodes=1, seed=6)
    np.testing.assert_array_equal(c.returns[0], a.returns[1])
    data = a.to_json()
    assert data["episodes"] == 2 and set(data["objectives"]) == {"task", "wrist_force"}
    for s in data["objectives"].values():
        assert s["ci_low"] <= s["mean"] <= s["ci_high"]
    assert 0.0 <= data["success_rate"] <= 1.0
    assert sum(data["terminations"].values()) == 2
    assert data["peak_force"] >= data["mean_force"] >= 0.0


def test_contact_force_is_the_tasks_own_measure(tmp_path):
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv(SAWYER)
    try:
        rec = run_episode(env, lambda obs: np.array([0.0, 0.0, -1.0]), seed=0)  # press down
    finally:
        env.close()
    # the Sawyer's contact force is the tared wrist force norm, the quantity the threshold acts on
    assert rec.forces.shape == (rec.steps,)
    assert rec.peak_force > 1.0


def test_evaluate_cli_json(tmp_path, capsys):
    path = _export(tmp_path)
    assert main(["evaluate", str(path), "--episodes", "2", "--seed", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["episodes"] == 2 and data["seeds"] == [3, 4]
    assert {"objectives", "success_rate", "terminations", "peak_force", "mean_force"} <= set(data)
    # a run directory means its policy.onnx
    assert main(["evaluate", str(tmp_path), "--episodes", "2", "--seed", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objectives"] == data["objectives"]


def test_evaluate_cli_markdown_and_random_baseline(capsys):
    assert main(["evaluate", "random", "--task", SHADOW, "--episodes", "2"]) == 0
    text = capsys.readouterr().out
    assert "| return: task |" in text and "| success rate |" in text and "peak contact force" in text


@pytest.mark.parametrize("argv, words", [
    (["evaluate", "random"], "needs --task"),
    (["evaluate", "random", "--task", "nope"], "unknown task"),
    (["evaluate", "/no/such/policy.onnx"], "no such policy"),
    (["evaluate", "random", "--task", SAWYER, "--episodes", "0"], "--episodes"),
])
def test_evaluate_cli_bad_input(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_evaluate_refuses_a_policy_for_another_task(tmp_path, capsys):
    path = _export(tmp_path)
    assert main(["evaluate", str(path), "--task", SHADOW]) == 2
    assert "trained for task 'sawyer_peg_in_hole'" in capsys.readouterr().err


def test_run_directory_without_policy(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "has no policy.onnx" in capsys.readouterr().err


def test_the_safety_rules_act_in_process_as_on_the_graph():
    """A policy that reverses its velocity every step is rate-limited by the Sawyer's safety rules
    (config/safety/sawyer.yaml: 4 m/s², 0.2 m/s per 50 ms step); a steady one is not touched."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.safety.shield import SafetyShield

    env = MORobotEnv(SAWYER)
    try:
        flip = iter(np.tile([[1.0, 0, 0], [-1.0, 0, 0]], (200, 1)))
        shield = SafetyShield(env)
        chatter = run_episode(env, lambda obs: next(flip), seed=0, shield=shield)
        summary = shield.summary()
        assert summary["clamped"] >= chatter.steps // 2 - 2 and summary["violations"]["command.rate/soft"] >= 1
        bare = run_episode(env, lambda obs: next(flip), seed=0)
        assert not np.allclose(chatter.returns, bare.returns)  # the executed motion differs

        steady = SafetyShield(env)
        still = run_episode(env, lambda obs: np.zeros(3), seed=0, shield=steady)
        assert steady.summary()["clamped"] == 0
        np.testing.assert_allclose(still.returns, run_episode(env, lambda obs: np.zeros(3), seed=0).returns)
    finally:
        env.close()


def test_an_estop_holds_the_robot_and_is_reported_as_safety(tmp_path):
    """Pressing the peg onto the fixture trips the collision level: the e-stop latches, the robot is
    held for the rest of the episode (as deployed) and the episode counts as a safety stop.  The
    compliant controller and the approach limit keep a full-speed push below the robot's 40 N, so
    this test's safety YAML has no approach limit and a collision level of 10 N (raw wrist force; the
    tool alone reads 3.4 N): the push arrives at full speed and keeps pressing (~11 N tared)."""
    import yaml

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.resources import config_path
    from morl_robot.safety.shield import SafetyShield

    data = yaml.safe_load(config_path("safety/sawyer.yaml").read_text())
    data["wrench"]["force_norm"].update(contact=8.0, collision=10.0)
    data["wrench"]["accelerating"]["force_norm"].update(contact=8.0, collision=10.0)
    del data["approach"]
    path = tmp_path / "sawyer_10N.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    env = MORobotEnv(SAWYER, overrides={"force_threshold": 1e6})  # let the safety monitor act, not the task
    try:
        shield = SafetyShield(env, str(path))
        rec = run_episode(env, lambda obs: np.array([0.0, 0.0, -1.0]), seed=0, shield=shield)
    finally:
        env.close()
    assert rec.termination == "safety"
    assert shield.summary()["held"] > 0
    assert any("collision" in k for k in shield.summary()["violations"])


def test_the_scripted_insertion_controller_inserts_through_the_cli(capsys):
    """The hand-written reference controller inserts the peg (the task is feasible behind the safety
    rules); a scripted policy for a task without one is refused."""
    from morl_robot.errors import UsageError
    from morl_robot.evaluation.protocol import scripted_policy

    assert main(["evaluate", "scripted", "--task", "sawyer_peg_in_hole", "--episodes", "2", "--seed", "10000",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["success_rate"] >= 0.5 and got["objectives"]["task"]["mean"] > 80
    with pytest.raises(UsageError, match="shadow_turn, shadow_orient only, not 'nope'"):
        scripted_policy("nope")


def test_the_scripted_grasp_lifts_and_turns_the_peg(capsys):
    """shadow_orient's hand-written controller (thumb to opposition, pinch, wrist extension; the phase
    read off the observation) holds, lifts and tilts the peg: each objective far above the random
    policy's (50 episodes on seeds 0–49: touch 15.8, lift 0.70, orient 0.42 per episode), in both
    action modes (the same targets)."""
    for mode in ("absolute", "delta"):
        assert main(["evaluate", "scripted", "--task", "shadow_orient", "--action-mode", mode, "--episodes", "2",
                     "--seed", "10000", "--json"]) == 0
        got = json.loads(capsys.readouterr().out)["objectives"]
        assert got["touch"]["mean"] > 35 and got["lift"]["mean"] > 8 and got["orient"]["mean"] > 8, got


def test_the_scripted_slow_press_touches_the_block_gently(capsys):
    """shadow_touch's hand-written controller (the demonstrator of the Shadow front) presses the
    block past 5 N, slowly enough that the pain stays far from its −20 clip."""
    assert main(["evaluate", "scripted", "--task", "shadow_touch", "--episodes", "3", "--seed", "10000",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["success_rate"] >= 2 / 3 and got["terminations"].get("success", 0) >= 2
    assert -8.0 < got["objectives"]["pain"]["mean"] < 0.0


@pytest.mark.parametrize("task, mode", [("shadow_touch", "delta"), ("shadow_turn", "absolute"), ("shadow_turn", "delta")])
def test_the_scripted_shadow_controllers_succeed_in_either_action_mode(task, mode, capsys):
    """The slow press (touch) and the slow sweep of the dial (turn), written as absolute targets or
    as their changes (``--action-mode``), succeed on seeds 10000–10003 through the CLI with little pain."""
    assert main(["evaluate", "scripted", "--task", task, "--action-mode", mode, "--episodes", "4", "--seed", "10000",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["success_rate"] >= 0.75 and got["terminations"].get("success", 0) >= 3
    assert -8.0 < got["objectives"]["pain"]["mean"] <= 0.0


def test_action_error_against_the_scripted_controller(capsys):
    """``--against scripted``: the controller against itself errs by exactly 0 on every motor, along
    its own trajectories; ``--action-mode`` is refused for an ONNX policy (its contract declares it)."""
    assert main(["evaluate", "scripted", "--task", "shadow_touch", "--action-mode", "delta", "--against", "scripted",
                 "--episodes", "2", "--seed", "10000", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["units"] == "rad" and len(got["labels"]) == 20 and got["labels"][0].endswith("/delta")
    assert got["steps"] > 20 and max(got["max_abs"]) == 0.0
    assert main(["evaluate", "scripted", "--task", "sawyer_peg_in_hole", "--action-mode", "delta"]) == 2
    assert "no action modes" in capsys.readouterr().err


def test_random_delta_actions_through_the_cli(capsys):
    """``evaluate random --action-mode delta``: uniform random changes of the motor targets (the
    baseline of the delta-action fronts) run through the protocol on the task built in that mode."""
    assert main(["evaluate", "random", "--task", "shadow_turn", "--action-mode", "delta", "--episodes", "2",
                 "--seed", "0", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["episodes"] == 2 and got["policy"] == "uniform random actions"
    assert sum(got["terminations"].values()) == 2


def test_progress_is_the_final_insertion_depth_and_success_is_a_threshold_on_it(capsys):
    """The Sawyer reports how deep the peg got (mm), so a near miss is visible: the scripted
    controller inserts (success: depth reached success_depth of the hole), a slow one stops short."""
    from morl_robot.envs.mo_env import make_sim_robot
    from morl_robot.tasks.registry import load_task

    task = load_task(SAWYER)
    robot = make_sim_robot(task)
    try:  # the hole's depth from the scene's landmarks, as the task measures it
        hole_mm = 1e3 * float(robot.landmark("hole_top")[2] - robot.landmark("hole_bottom")[2])
    finally:
        robot.close()
    threshold = task.config.success_depth * hole_mm
    assert main(["evaluate", "scripted", "--task", SAWYER, "--gain", "3", "--episodes", "2", "--seed", "10000",
                 "--json"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert fast["progress"]["name"] == "insertion depth" and fast["progress"]["unit"] == "mm"
    for ep in fast["per_episode"]:  # the scripted controller holds the peg in: its final depth decides
        assert ep["success"] == (ep["progress"] >= threshold - 1e-6)
    assert fast["progress"]["min"] >= threshold
    assert main(["evaluate", "scripted", "--task", SAWYER, "--gain", "0.5", "--episodes", "2", "--seed", "10000"]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("| final insertion depth (mm)"))
    assert 0.0 < float(row.split("|")[2]) < threshold  # too slow for the 8 s: partly in, no success
    assert main(["evaluate", "random", "--task", SHADOW, "--episodes", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["progress"] is None
