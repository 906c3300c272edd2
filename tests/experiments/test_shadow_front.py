"""`morl-robot experiment shadow-front` through the real CLI parser on a tiny budget (--quick): both
algorithms train at the same budget, export ONNX, evaluate with the protocol, write the front with
the paper's reference point; a second sitting skips finished runs; the orient check; bad settings;
committed fronts re-evaluate to their figures."""
import json
from pathlib import Path

import pytest

from morl_robot.cli import main
from morl_robot.experiments.shadow_front import discounted_task_returns, format_table

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_a_quick_touch_sweep_compares_both_algorithms_at_equal_budget(tmp_path, capsys):
    argv = ["experiment", "shadow-front", "--task", "shadow_touch", "--out", str(tmp_path), "--quick", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "runs finished: 4 of 4 (300 env steps per run)" in out
    assert "mo-mpo: hypervolume (ref [0.0, -20.0])" in out and "scalarized-mpo: hypervolume" in out
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["fronts"]) == {"mo-mpo", "scalarized-mpo"}
    assert out.count("with its pain setting, Spearman ρ within seeds:") == 2
    assert set(results["fronts"]["mo-mpo"]["preference_response"]) == {"task (discounted)", "pain"}
    assert results["hypervolume_reference"]["point"] == [0.0, -20.0]
    assert results["budget"]["runs_per_algorithm"] == {"mo-mpo": 2, "scalarized-mpo": 2}
    runs = [r for r in results["runs"] if r["finished"]]
    assert {r["eval"]["env_steps"] for r in runs} == {300} and all(r["eval"]["updates"] > 0 for r in runs)
    learners = {r["eval"]["algorithm"]: r["eval"]["learner"] for r in runs}
    assert learners["mo-mpo"]["algorithm"] == "mo_mpo" and learners["mo-mpo"]["epsilons"][0] == 0.1
    assert learners["scalarized-mpo"]["algorithm"] == "scalarized_mpo"
    assert sum(learners["scalarized-mpo"]["scalarization_weights"]) == pytest.approx(1.0)
    for r in runs:
        assert 0.0 <= r["eval"]["discounted_task_return"] <= 1.0
        assert (tmp_path / r["policy"]).stat().st_size > 0
    assert {p.name for p in (tmp_path / "policies" / "mo-mpo").iterdir()} == {"eps_pain=0.01_seed0.onnx",
                                                                             "eps_pain=0.1_seed0.onnx"}
    assert (tmp_path / "plots" / "front.png").stat().st_size > 0
    assert "success_rate" in results["random"] and results["random"]["hypervolume"] >= 0.0
    # a committed-style policy re-evaluates to its recorded figures through `morl-robot evaluate`
    ev = runs[0]["eval"]
    assert main(["evaluate", str(tmp_path / runs[0]["policy"]), "--episodes", str(ev["episodes"]),
                 "--seed", str(ev["seed"]), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["objectives"]["pain"]["mean"] == pytest.approx(ev["objectives"]["pain"]["mean"], abs=1e-6)
    # a second sitting: nothing retrained or re-evaluated
    evals = sorted(tmp_path.glob("runs/*/*/seed0/eval.json"))
    assert len(evals) == 4
    stamps = [p.stat().st_mtime_ns for p in evals]
    assert main(argv) == 0
    assert [p.stat().st_mtime_ns for p in evals] == stamps


def test_the_orient_check_compares_mo_mpo_with_random(tmp_path, capsys):
    argv = ["experiment", "shadow-front", "--task", "shadow_orient", "--out", str(tmp_path), "--quick",
            "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "MO-MPO improves all three objectives over random:" in out
    results = json.loads((tmp_path / "results.json").read_text())
    check = results["orient_check"]
    assert set(check["per_objective"]) == {"touch", "lift", "orient"}
    for v in check["per_objective"].values():
        assert v["improves"] == (v["mo_mpo_mean"] > v["random"]["ci_high"])
    assert results["hypervolume_reference"]["point"] == [0.0, 0.0, 0.0]
    assert list(results["fronts"]) == ["mo-mpo"]


@pytest.mark.parametrize("extra, message", [
    (["--task", "shadow_touch", "--weights-pain", "1.5"], "--weights-pain"),
    (["--task", "shadow_turn", "--algorithms", "ppo"], "--algorithms"),
    (["--task", "shadow_touch", "--epsilon", "pain=nan"], "pain"),
    (["--task", "shadow_orient", "--algorithms", "scalarized-mpo"], "orient check"),
])
def test_bad_sweep_settings_are_refused(tmp_path, capsys, extra, message):
    assert main(["experiment", "shadow-front", "--out", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_discounted_task_return_is_the_success_step_discounted():
    eps = [{"steps": 1, "success": True}, {"steps": 11, "success": True}, {"steps": 100, "success": False}]
    assert discounted_task_returns(eps) == pytest.approx([1.0, 0.99 ** 10, 0.0])


@pytest.mark.parametrize("folder", sorted(RESULTS.glob("shadow_*_front")) + sorted(RESULTS.glob("archive/shadow_*_front")),
                         ids=lambda p: p.name)
def test_committed_front_policies_reproduce_their_figures(folder, capsys):
    results = json.loads((folder / "results.json").read_text())
    run = next(r for r in results["runs"] if r["finished"])
    ev = run["eval"]
    argv = ["evaluate", str(folder / run["policy"]), "--episodes", str(ev["episodes"]), "--seed", str(ev["seed"]),
            "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    for name, stats in ev["objectives"].items():
        assert got["objectives"][name]["mean"] == pytest.approx(stats["mean"], abs=1e-6)
    assert got["success_rate"] == ev["success_rate"]


def test_demonstrations_need_a_task_with_a_scripted_controller(tmp_path, capsys, monkeypatch):
    """shadow_front_demos.yaml on a task without a scripted controller (every Shadow task has one now:
    here orient's is taken away) is refused before training."""
    from morl_robot.cli import main
    from morl_robot.evaluation import protocol

    monkeypatch.setattr(protocol, "SCRIPTED_TASKS", ("shadow_touch", "shadow_turn"))
    assert main(["experiment", "shadow-front", "--task", "shadow_orient", "--algorithms", "mo-mpo", "--out", str(tmp_path),
                 "--learner", "learner/shadow_front_demos.yaml", "--quick", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "training.demonstrations needs a scripted controller" in err and "shadow_turn" in err
    assert not (tmp_path / "runs").exists()


def test_a_touch_run_learns_from_the_scripted_press(tmp_path, capsys):
    """With ``training.demonstrations`` the first episode is the scripted slow press (noisy), cloned
    (at its own learning rate) and the critics warmed up before the policy acts; the run records the
    demonstrations it learned from."""
    import re

    from morl_robot.cli import main
    from tests.log_capture import captured, messages

    yaml = (Path(__file__).resolve().parents[2] / "config" / "learner" / "shadow_front_demos.yaml").read_text()
    cfg = tmp_path / "demos.yaml"
    small = re.sub(r"episodes: \d+", "episodes: 1", yaml)
    small = re.sub(r"pretrain_updates: \d+", "pretrain_updates: 5", small)
    cfg.write_text(re.sub(r"critic_warmup_updates: \d+", "critic_warmup_updates: 7", small))
    # a handler on the logger the learner's info goes to (training.run_directory.warnings_log): under
    # `colcon test` ROS's launch makes it non-propagating, so caplog (a root handler) sees nothing
    with captured("morl_robot.training.session") as records:
        assert main(["experiment", "shadow-front", "--task", "shadow_touch", "--out", str(tmp_path / "sweep"),
                     "--learner", str(cfg), "--quick", "--algorithms", "mo-mpo", "--epsilon", "pain=0.01",
                     "--seeds", "0", "--steps", "300", "--no-progress"]) == 0
    run = next(r for r in json.loads((tmp_path / "sweep" / "results.json").read_text())["runs"] if r["finished"])
    demos = run["eval"]["demonstrations"]
    assert demos["episodes"] == 1 and demos["critic_warmup_updates"] == 7 and demos["pretrain_lr"] == 3e-4
    assert "critic warm-up: 7 policy-evaluation updates" in messages(records)
    first = (tmp_path / "sweep" / "runs" / "mo-mpo" / "eps_pain=0.01" / "seed0" / "episodes.csv").read_text().splitlines()[1]
    assert "success" in first  # the scripted press (σ 0.01) ends its episode by pressing the block


def test_a_turn_run_learns_from_the_scripted_sweep_in_delta_actions(tmp_path, capsys):
    """``--action-mode delta`` reaches every environment of the sweep: the demonstrations (the
    scripted sweep of the dial, written as target changes), the exported policy's contract, and its
    evaluation, which `morl-robot evaluate` repeats from the contract alone."""
    import re

    yaml = (Path(__file__).resolve().parents[2] / "config" / "learner" / "shadow_front_demos.yaml").read_text()
    cfg = tmp_path / "demos.yaml"
    small = re.sub(r"episodes: \d+", "episodes: 1", yaml)
    small = re.sub(r"pretrain_updates: \d+", "pretrain_updates: 5", small)
    cfg.write_text(re.sub(r"critic_warmup_updates: \d+", "critic_warmup_updates: 3", small))
    out = tmp_path / "sweep"
    assert main(["experiment", "shadow-front", "--task", "shadow_turn", "--out", str(out), "--learner", str(cfg),
                 "--action-mode", "delta", "--quick", "--algorithms", "mo-mpo", "--epsilon", "pain=0.01", "--seeds", "0",
                 "--steps", "200", "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["action_mode"] == "delta"
    run = next(r for r in results["runs"] if r["finished"])
    assert run["eval"]["task_overrides"] == {"action_mode": "delta"}
    assert json.loads((out / "random_eval.json").read_text())["task_overrides"] == {"action_mode": "delta"}
    first = (out / "runs" / "mo-mpo" / "eps_pain=0.01" / "seed0" / "episodes.csv").read_text().splitlines()[1]
    assert "success" in first  # the scripted sweep (noisy) turned the dial into the target window
    from morl_robot.serving.runtime import OnnxPolicy

    assert OnnxPolicy.from_file(out / run["policy"]).contract.action_mode == "delta"
    capsys.readouterr()
    ev = run["eval"]
    assert main(["evaluate", str(out / run["policy"]), "--episodes", str(ev["episodes"]), "--seed", str(ev["seed"]),
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["objectives"]["pain"]["mean"] == pytest.approx(ev["objectives"]["pain"]["mean"], abs=1e-6)


# --- the committed delta-action touch front (README "Delta actions") ------------------------------
DELTA_FRONT = RESULTS / "shadow_touch_delta_front"


def _mean_error(err: dict, motors: set[str], held: bool) -> float:
    """Mean |Δ target| (rad) over the held motors (not in ``motors``) or the moving ones."""
    from morl_robot.robots.spec import delta_actuator

    values = [m for lab, m in zip(err["labels"], err["mean_abs"])
              if ((delta_actuator(lab) or lab) in motors) != held]
    return sum(values) / len(values)


def test_the_clone_error_diagnosis(capsys):
    """The clones of the absolute-target front miss the demonstrator's held motors by a fraction of
    its 0.01 rad lead and more; the delta-action clones by two orders of magnitude less; one figure
    re-checked through `morl-robot evaluate --against scripted`."""
    from morl_robot.evaluation.protocol import SHADOW_PRESS_POSTURE

    moving = set(SHADOW_PRESS_POSTURE)
    errs = {p.stem: json.loads(p.read_text()) for p in sorted((DELTA_FRONT / "clone_error").glob("*.json"))}
    absolute = {k: v for k, v in errs.items() if k.startswith("absolute")}
    delta = {k: v for k, v in errs.items() if k.startswith("delta")}
    assert len(absolute) == 2 and len(delta) == 3
    assert all(v["units"] == "rad" and v["steps"] > 300 for v in errs.values())
    held_abs = [_mean_error(v, moving, True) for v in absolute.values()]
    held_delta = [_mean_error(v, moving, True) for v in delta.values()]
    assert min(held_abs) > 20 * max(held_delta)
    assert min(held_abs) > 0.004 and max(held_delta) < 0.0005  # the README's figures
    name = "delta_eps_pain=0.01_seed1"
    assert main(["evaluate", str(DELTA_FRONT / "policies" / "mo-mpo" / f"{name[len('delta_'):]}.onnx"),
                 "--against", "scripted", "--episodes", "10", "--seed", "10000", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["mean_abs"] == pytest.approx(errs[name]["mean_abs"], abs=1e-9)


def test_random_delta_actions_press_more_often_than_random_targets():
    """The README's random-policy figures with delta actions (seeds 0–49)."""
    cal = RESULTS / "shadow_calibration"
    touch = json.loads((cal / "random_shadow_touch_delta.json").read_text())
    turn = json.loads((cal / "random_shadow_turn_delta.json").read_text())
    absolute = json.loads((cal / "random_shadow_touch_after.json").read_text())
    assert touch["episodes"] == turn["episodes"] == 50 and touch["seed"] == 0
    assert touch["success_rate"] == 0.3 and turn["success_rate"] == 0.0
    assert absolute["success_rate"] < touch["success_rate"]


def test_the_delta_touch_front_presses_on_every_seed():
    """README: with delta actions every MO-MPO policy of the three seeds presses the block in at least
    95 % of the protocol's episodes (the absolute-target front: 85 % on seed 0, ≤ 10 % on seed 1),
    and the two algorithms' hypervolumes are within 0.2 of each other."""
    results = json.loads((DELTA_FRONT / "results.json").read_text())
    assert results["config"]["action_mode"] == "delta" and results["config"]["seeds"] == [0, 1, 2]
    assert results["runs_finished"] == results["runs_total"] == 18
    mo = [r["eval"] for r in results["runs"] if r["eval"]["algorithm"] == "mo-mpo"]
    assert len(mo) == 9 and min(e["success_rate"] for e in mo) >= 0.95
    assert all(e["task_overrides"] == {"action_mode": "delta"} for e in mo)
    hv = {a: f["pooled_hypervolume"] for a, f in results["fronts"].items()}
    assert hv["mo-mpo"] == pytest.approx(11.506, abs=1e-3) and hv["scalarized-mpo"] == pytest.approx(11.511, abs=1e-3)
    assert results["random"]["success_rate"] == 0.15
    # no trade-off measured: pain does not fall as either algorithm weights it more (within seeds)
    for front in results["fronts"].values():
        pain = front["preference_response"]["pain"]
        assert pain["n"] == 9 and abs(pain["rho"]) < 0.2 and pain["p"] > 0.5
    assert "with its pain setting, Spearman ρ within seeds: task (discounted) -0.67 (p 0.11), pain +0.17 (p 0.89)" \
        in format_table(results)


def test_the_delta_turn_front_turns_the_dial_on_every_seed():
    """README: every turn policy (2 settings per algorithm × 3 seeds, from the scripted sweep's
    demonstrations) succeeds in all 20 protocol episodes; both fronts' hypervolume is 16.92."""
    results = json.loads((RESULTS / "shadow_turn_delta_front" / "results.json").read_text())
    assert results["config"]["action_mode"] == "delta" and results["config"]["task"] == "shadow_turn"
    assert results["runs_finished"] == results["runs_total"] == 12
    assert all(r["eval"]["success_rate"] == 1.0 for r in results["runs"])
    for front in results["fronts"].values():
        assert front["pooled_hypervolume"] == pytest.approx(16.918, abs=1e-3)
    assert results["random"]["success_rate"] == 0.0


def test_the_committed_orient_check_passes_from_demonstrations():
    """README, orient from demonstrations (the scripted grasp and lift, delta actions, 3 seeds): the
    MO-MPO policies' mean is above the random policy's upper 95 % bound on touch, lift and orient,
    against random delta actions (the sweep's own baseline) and random absolute targets (the stronger
    random policy, from the orient front without demonstrations); seeds 0 and 2 pass alone."""
    demos = json.loads((RESULTS / "shadow_orient_delta_front" / "results.json").read_text())
    assert demos["orient_check"]["improves_all"] is True
    absolute_random = json.loads((RESULTS / "archive" / "shadow_orient_front" / "random_eval.json").read_text())["objectives"]
    evals = {r["eval"]["train_seed"]: r["eval"]["objectives"] for r in demos["runs"] if r["finished"]}
    assert sorted(evals) == [0, 1, 2]
    for name in ("touch", "lift", "orient"):
        mean = sum(e[name]["mean"] for e in evals.values()) / 3
        assert mean > absolute_random[name]["ci_high"] > demos["random"]["objectives"][name]["ci_high"], name
        assert all(evals[seed][name]["mean"] > absolute_random[name]["ci_high"] for seed in (0, 2)), name
