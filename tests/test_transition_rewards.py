"""Task rewards as pure functions of stored transitions: they reproduce what the task's evaluate()
returned online, declared next-state-only rewards really ignore s and a, and the EPIC CLI runs on
them through the real parser (tiny budgets)."""
import json

import numpy as np
import pytest

from morl_robot.cli import main
from morl_robot.envs.coverage import (
    collect_transitions,
    load_coverage,
    load_transitions,
    save_transitions,
)
from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.tasks.registry import load_task, task_names


@pytest.mark.parametrize("task", task_names())
def test_rewards_from_stored_transitions_match_the_online_reward(task):
    env = MORobotEnv(task)
    rng = np.random.default_rng(0)
    fns = env.task.transition_rewards()
    assert "objectives" in fns and all(n in fns for n in env.task.objective_names)
    env.reset(seed=0)
    s = env.task.transition_features(env.state)
    rows = []
    for _ in range(60):
        a = rng.uniform(-1, 1, env.action_space.shape)
        _, r, terminated, truncated, _ = env.step(a)
        s2 = env.task.transition_features(env.state)
        rows.append((s, a, s2, r))
        s = s2
        if terminated or truncated:
            env.reset(seed=1)
            s = env.task.transition_features(env.state)
    env.close()
    S, A, S2, R = (np.array([row[i] for row in rows]) for i in range(4))
    assert S.shape[1] == len(env.task.transition_feature_labels())
    np.testing.assert_allclose(fns["objectives"](S, A, S2), R, rtol=0, atol=1e-12)
    for k, name in enumerate(env.task.objective_names):
        np.testing.assert_allclose(fns[name](S, A, S2), R[:, k], rtol=0, atol=1e-12)
    # declared next-state-only rewards ignore s and a; the others are evaluated on foreign transitions
    perm = rng.permutation(len(S))
    for name, fn in fns.items():
        out = fn(S, A, S2)
        assert out.shape[0] == len(S) and np.all(np.isfinite(out))
        if getattr(fn, "next_state_only", False):
            np.testing.assert_array_equal(fn(S[perm], A[perm], S2), out)


def test_pain_variants_differ_where_they_should():
    task = load_task("shadow_touch")
    task._num_tactile = 2
    fns = task.transition_rewards()
    # features: 2 tactile + block_force
    s = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    s2 = np.array([[3.0, 0.0, 0.0], [3.0, 0.0, 0.0]])  # impact, then steady contact
    a = np.zeros((2, 20))
    assert fns["pain"](s, a, s2).tolist() == [-2.0, 0.0]  # 3 N rise − 1 N threshold; no rise
    assert fns["force_level"](s, a, s2).tolist() == [-3.0, -3.0]
    dt = task.config.control_period
    np.testing.assert_allclose(fns["impulse"](s, a, s2), [-1.5 * dt, -3.0 * dt])


def test_coverage_log_round_trip_and_mixture(tmp_path):
    log = collect_transitions("sawyer_peg_in_hole", "random", 50, seed=0)
    path = save_transitions(tmp_path / "transitions.npz", log)
    back = load_transitions(path)
    assert back.feature_labels == log.feature_labels and np.array_equal(back.states, log.states)
    mix = load_coverage("sawyer_peg_in_hole", [str(path), "random"], steps=80, seed=1)
    assert len(mix) == 100  # equal shares: 50 + 50
    with pytest.raises(Exception, match="not 'shadow_touch'"):
        load_coverage("shadow_touch", [str(path)], steps=10)
    (tmp_path / "bad.npz").write_bytes(b"not a file")
    with pytest.raises(Exception, match="not a transition log"):
        load_transitions(tmp_path / "bad.npz")


def test_epic_cli_task_rewards(tmp_path, capsys):
    # orient: a random hand touches the peg often enough for the contact rewards to vary (it rarely
    # presses the calibrated touch block, so shadow_touch random coverage has no contacts)
    out = tmp_path / "out"
    rc = main(["epic", "--task", "shadow_orient", "--rewards", "pain", "force_level", "impulse",
               "--steps", "300", "--n-v", "256", "--n-m", "128", "--bootstrap", "50", "--out", str(out),
               "--save-coverage", str(tmp_path / "cov.npz"), "--no-progress"])
    assert rc == 0
    r = json.loads((out / "results.json").read_text())
    assert r["names"] == ["pain", "force_level", "impulse"] and r["n_v"] == 256
    for a in r["names"]:
        for b in r["names"]:
            assert 0.0 <= r["ci_lower"][a][b] <= r["ci_upper"][a][b] <= 1.0
    assert (out / "epic.png").stat().st_size > 0 and "| pain |" in (out / "results.md").read_text()
    # the saved coverage is reusable, and a reward equivalent to itself rescaled is at 0
    rc = main(["epic", "--task", "shadow_orient", "--rewards", "pain", "--coverage", str(tmp_path / "cov.npz"),
               "--n-v", "64", "--n-m", "32", "--bootstrap", "0"])
    assert rc == 2  # one reward: nothing to compare
    assert "fewer than two rewards" in capsys.readouterr().err


def test_epic_cli_errors_are_one_line(capsys):
    assert main(["epic", "--task", "sawyer_peg_in_hole", "--rewards", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown nope" in err and "allowed: objectives, task" in err
    assert main(["epic", "--task", "sawyer_peg_in_hole", "--coverage", "/nonexistent.onnx"]) == 2
    assert "allowed: random" in capsys.readouterr().err
    assert main(["epic", "--task", "sawyer_peg_in_hole", "--gamma", "1.0"]) == 2


def test_epic_cli_objectives_of_a_run_dir(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "session.yaml").write_text("task: shadow_orient\n")
    save_transitions(run / "transitions.npz", collect_transitions("shadow_orient", "random", 300, seed=0))
    out = tmp_path / "out"
    rc = main(["epic", "--objectives", str(run), "--coverage", str(run), "--n-v", "512", "--n-m", "64",
               "--bootstrap", "20", "--weight-points", "3", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    r = json.loads((out / "results.json").read_text())
    assert r["names"] == ["touch", "lift", "orient"]
    scal = r["scalarisations"]
    assert len(scal["weights"]) == 6 and np.allclose(np.sum(scal["weights"], axis=1), 1.0)
    assert (out / "scalarisations.png").is_file()
    d = r["epic"]
    assert 0 < d["touch"]["lift"] <= 1 and d["touch"]["lift"] == d["lift"]["touch"]


def test_epic_cli_objectives_needs_coverage_where_every_objective_varies(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "session.yaml").write_text("task: sawyer_peg_in_hole\n")
    log = collect_transitions("sawyer_peg_in_hole", "random", 100, seed=0)
    log.next_states[:, 3:6] = 0.0  # no force on the wrist anywhere: wrist_force is constant
    save_transitions(run / "transitions.npz", log)
    assert main(["epic", "--objectives", str(run), "--coverage", str(run), "--n-v", "64", "--n-m", "8"]) == 2
    assert "constant: wrist_force" in capsys.readouterr().err


def test_epic_cli_list(capsys):
    assert main(["epic", "--task", "sawyer_peg_in_hole", "--list"]) == 0
    out = capsys.readouterr().out
    assert "sparse_insertion" in out and "tip_dx" in out


def test_bench_epic_through_the_cli(capsys):
    assert main(["bench", "epic", "--task", "shadow_touch", "--n-v", "64", "--n-m", "32", "--coverage-steps", "200",
                 "--bootstrap", "10", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "K = 2 objectives" in out and "general (black-box) path" in out


def test_experiments_through_the_cli(tmp_path, capsys):
    assert main(["experiment", "epic-gridworld", "--out", str(tmp_path / "g")]) == 0
    r = json.loads((tmp_path / "g" / "results.json").read_text())
    names = ["Sparse", "Dense", "Penalty", "Center", "Path", "Cliff"]
    assert all(set(r["epic"][a]) == set(names) for a in names)
    assert "Path-Cliff 0.267" in capsys.readouterr().out
    assert main(["experiment", "epic-pointmass", "--out", str(tmp_path / "p"), "--coverage", "2000",
                 "--bootstrap", "20"]) == 0
    assert "equivalent pairs" in capsys.readouterr().out


def test_epic_cli_mixture_of_random_and_a_policys_rollouts(tmp_path, capsys):
    """The README's mixture example: random rollouts + a committed policy's (exploring) rollouts."""
    out = tmp_path / "mix"
    rc = main(["epic", "--task", "sawyer_peg_in_hole", "--coverage", "random", "results/demo/seed0/policy.onnx",
               "--steps", "200", "--n-v", "256", "--n-m", "32", "--bootstrap", "0", "--out", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    r = json.loads((out / "results.json").read_text())
    assert r["coverage"] == "random x 200 + results/demo/seed0/policy.onnx x 200" and r["coverage_transitions"] == 400
    assert 0 < r["epic"]["task"]["wrist_force"] <= 1
