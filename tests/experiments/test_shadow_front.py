"""`morl-robot experiment shadow-front` through the real CLI parser on a tiny budget (--quick): both
algorithms train at the same budget, export ONNX, evaluate with the protocol, write the front with
the paper's reference point; a second sitting skips finished runs; the orient check; bad settings;
committed fronts re-evaluate to their figures."""
import json
from pathlib import Path

import pytest

from morl_robot.cli import main
from morl_robot.experiments.shadow_front import discounted_task_returns

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_a_quick_touch_sweep_compares_both_algorithms_at_equal_budget(tmp_path, capsys):
    argv = ["experiment", "shadow-front", "--task", "shadow_touch", "--out", str(tmp_path), "--quick", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "runs finished: 4 of 4 (300 env steps per run)" in out
    assert "mo-mpo: hypervolume (ref [0.0, -20.0])" in out and "scalarized-mpo: hypervolume" in out
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["fronts"]) == {"mo-mpo", "scalarized-mpo"}
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
    (["--task", "shadow_touch", "--eps-pain", "nan"], "--eps-pain"),
    (["--task", "shadow_orient", "--algorithms", "scalarized-mpo"], "orient check"),
])
def test_bad_sweep_settings_are_refused(tmp_path, capsys, extra, message):
    assert main(["experiment", "shadow-front", "--out", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_discounted_task_return_is_the_success_step_discounted():
    eps = [{"steps": 1, "success": True}, {"steps": 11, "success": True}, {"steps": 100, "success": False}]
    assert discounted_task_returns(eps) == pytest.approx([1.0, 0.99 ** 10, 0.0])


@pytest.mark.parametrize("folder", sorted(RESULTS.glob("shadow_*_front")), ids=lambda p: p.name)
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


def test_demonstrations_need_a_task_with_a_scripted_controller(tmp_path, capsys):
    """shadow_front_demos.yaml on shadow_orient (no scripted controller) is refused before training."""
    from morl_robot.cli import main

    assert main(["experiment", "shadow-front", "--task", "shadow_orient", "--algorithms", "mo-mpo", "--out", str(tmp_path),
                 "--config", "learner/shadow_front_demos.yaml", "--quick", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "training.demonstrations needs a scripted controller" in err and "shadow_turn" in err
    assert not (tmp_path / "runs").exists()


def test_a_touch_run_learns_from_the_scripted_press(tmp_path, capsys, caplog):
    """With ``training.demonstrations`` the first episode is the scripted slow press (noisy), cloned
    (at its own learning rate) and the critics warmed up before the policy acts; the run records the
    demonstrations it learned from."""
    import re

    from morl_robot.cli import main

    yaml = (Path(__file__).resolve().parents[2] / "config" / "learner" / "shadow_front_demos.yaml").read_text()
    cfg = tmp_path / "demos.yaml"
    small = re.sub(r"episodes: \d+", "episodes: 1", yaml)
    small = re.sub(r"pretrain_updates: \d+", "pretrain_updates: 5", small)
    cfg.write_text(re.sub(r"critic_warmup_updates: \d+", "critic_warmup_updates: 7", small))
    caplog.set_level("INFO", logger="morl_robot.learning.session")
    assert main(["experiment", "shadow-front", "--task", "shadow_touch", "--out", str(tmp_path / "sweep"),
                 "--config", str(cfg), "--quick", "--algorithms", "mo-mpo", "--eps-pain", "0.01", "--seeds", "0",
                 "--steps", "300", "--no-progress"]) == 0
    run = next(r for r in json.loads((tmp_path / "sweep" / "results.json").read_text())["runs"] if r["finished"])
    demos = run["eval"]["demonstrations"]
    assert demos["episodes"] == 1 and demos["critic_warmup_updates"] == 7 and demos["pretrain_lr"] == 3e-4
    assert "critic warm-up: 7 policy-evaluation updates" in caplog.text
    first = (tmp_path / "sweep" / "runs" / "mo-mpo" / "eps_pain=0.01" / "seed0" / "episodes.csv").read_text().splitlines()[1]
    assert "success" in first  # the scripted press (σ 0.01) ends its episode by pressing the block
