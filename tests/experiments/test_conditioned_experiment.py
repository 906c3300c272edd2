"""``morl-robot experiment conditioned`` and ``conditioned-report`` through the real CLI parser, on
tiny budgets: the results file has the documented shape, the E-step tracked every sampled ε, and
the three methods write comparable results."""
import json
from pathlib import Path

import numpy as np
import pytest

from morl_robot.cli import main

TINY = ["--steps", "300", "--min-replay", "100", "--eval-episodes", "1", "--no-progress"]


def test_conditioned_on_deep_sea_treasure(tmp_path, capsys):
    out = tmp_path / "cond"
    assert main(["experiment", "conditioned", "--env", "deep-sea-treasure-v0", *TINY, "--out", str(out)]) == 0
    r = json.loads((out / "results.json").read_text())
    assert np.asarray(r["points"]).shape == (11, 2) and len(r["preferences"]) == 11
    assert r["ref"] == [-100.0, -100.0] and r["method"] == "conditioned" and r["steps"] == 300
    assert np.isfinite(r["hypervolume"]) and r["hypervolume"] >= 0
    # every sequence of the last update was learned at its own sampled ε, solved exactly
    assert r["kl_tracking"]["within_1pct"] == 1.0 and r["kl_tracking"]["sequences"] > 1
    assert (out / "front.png").stat().st_size > 0 and (out / "kl_tracking.png").stat().st_size > 0
    assert r["preference_space"]["ranges"] == [[0.01, 0.5], [0.01, 0.5]]
    assert "hypervolume" in capsys.readouterr().out


def test_a_rerun_resumes_and_says_so(tmp_path):
    """The same command again continues from the run's last checkpoint (here: the finished one),
    and results.json records the step it resumed from."""
    out = tmp_path / "cond"
    argv = ["experiment", "conditioned", "--env", "deep-sea-treasure-v0", *TINY, "--points", "3", "--out", str(out)]
    assert main(argv) == 0
    assert json.loads((out / "results.json").read_text())["resumed_from_step"] is None
    assert main(argv) == 0
    assert json.loads((out / "results.json").read_text())["resumed_from_step"] == 300


def test_sweep_splits_the_steps_and_report_summarises_methods(tmp_path, capsys):
    cond = tmp_path / "cond"
    sweep = tmp_path / "sweep"
    assert main(["experiment", "conditioned", "--env", "deep-sea-treasure-v0", *TINY, "--out", str(cond)]) == 0
    assert main(["experiment", "conditioned", "--env", "deep-sea-treasure-v0", *TINY, "--method", "sweep",
                 "--sweep-settings", "2", "--out", str(sweep)]) == 0
    s = json.loads((sweep / "results.json").read_text())
    assert len(s["points"]) == 2 and s["steps_per_setting"] == 150
    np.testing.assert_allclose(s["preferences"], [[0.5, 0.01], [0.01, 0.5]])  # the grid's two ends
    capsys.readouterr()
    assert main(["experiment", "conditioned-report", str(cond), str(sweep / "results.json"),
                 "--out", str(tmp_path / "report")]) == 0
    text = capsys.readouterr().out
    assert "conditioned" in text and "sweep" in text
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert set(summary["methods"]) == {"conditioned", "sweep"}
    assert json.loads((cond / "results.json").read_text())["middle_action_policy"] is None  # discrete actions
    # another reference point: every hypervolume recomputed from the stored points
    assert main(["experiment", "conditioned-report", str(cond), str(sweep), "--ref", "-1000", "-1000"]) == 0
    far = capsys.readouterr().out
    assert "reference [-1000.0, -1000.0]" in far
    assert main(["experiment", "conditioned-report", str(cond), "--ref", "0"]) == 2
    assert (tmp_path / "report" / "fronts.png").exists()


def test_capql_baseline_on_a_continuous_env(tmp_path):
    pytest.importorskip("morl_baselines", reason="`make test` installs it (make capql-deps)")
    out = tmp_path / "capql"
    assert main(["experiment", "conditioned", "--env", "mo-mountaincarcontinuous-v0", "--method", "capql",
                 "--steps", "200", "--eval-episodes", "1", "--points", "3", "--no-progress", "--out", str(out)]) == 0
    r = json.loads((out / "results.json").read_text())
    assert r["method"] == "capql" and r["preference_kind"] == "linear_weights"
    assert np.asarray(r["points"]).shape[1] == len(r["ref"]) and len(r["points"]) == len(r["preferences"]) == 3
    # the constant middle-of-the-box policy, for scale: its returns and hypervolume
    still = r["middle_action_policy"]
    assert len(still["returns"]) == len(r["ref"]) and still["hypervolume"] >= 0


def test_bad_input_is_named(tmp_path, capsys):
    base = ["experiment", "conditioned", "--env", "deep-sea-treasure-v0", "--out", str(tmp_path / "x")]
    assert main([*base, "--steps", "0"]) == 2
    assert "--steps must be >= 1" in capsys.readouterr().err
    assert main([*base, "--steps", "10", "--config", "mo_mpo_cpu_small"]) == 2
    assert "has no 'preferences' section" in capsys.readouterr().err
    assert main([*base, "--steps", "10", "--ref", "0", "0", "0"]) == 2
    assert "--ref has 3 values but the environment has 2 objectives" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--steps", "10", "--method", "pcn"])
    assert main(["experiment", "conditioned-report", str(tmp_path / "missing.json")]) == 2


COMMITTED = Path(__file__).resolve().parents[2] / "results" / "conditioned"
CASES = [("mo-halfcheetah-v5", "report", None, 9), ("mo-halfcheetah-v5", "report_wide", ["-100", "-6000"], 9),
         ("mo-hopper-v5", "report", None, 6)]


@pytest.mark.skipif(not COMMITTED.is_dir(), reason="no committed conditioned comparisons")
@pytest.mark.parametrize("env, report, ref, count", CASES)
def test_the_committed_summaries_follow_from_their_points(tmp_path, env, report, ref, count):
    """The README's HalfCheetah and Hopper tables: every hypervolume recomputed from the committed points."""
    runs = sorted(p for p in (COMMITTED / env).iterdir() if (p / "results.json").is_file())
    assert len(runs) == count
    argv = ["experiment", "conditioned-report", *map(str, runs), "--out", str(tmp_path)]
    assert main(argv + (["--ref", *ref] if ref else [])) == 0
    got = json.loads((tmp_path / "summary.json").read_text())
    want = json.loads((COMMITTED / env / report / "summary.json").read_text())
    for method, stats in want["methods"].items():
        assert got["methods"][method]["hypervolume_per_seed"] == pytest.approx(stats["hypervolume_per_seed"])


VARIANT = COMMITTED / "mo-hopper-v5" / "variants" / "samples_per_insert_64"
CHEETAH_VARIANT = COMMITTED / "mo-halfcheetah-v5" / "variants" / "samples_per_insert_64"


@pytest.mark.skipif(not VARIANT.is_dir(), reason="no committed Hopper update-ratio variant")
def test_the_committed_hopper_variant_with_twice_the_updates_is_ahead_of_capql(tmp_path):
    """The README's Hopper row for `learner/conditioned_spi64.yaml`: its summary follows from the committed
    points, each run names the command that made it, and its hypervolume IQM is above CAPQL's at equal steps."""
    hopper = COMMITTED / "mo-hopper-v5"
    runs = [*(VARIANT / f"conditioned_s{s}" for s in (0, 1, 2)), *(hopper / f"{m}_s{s}" for m in ("capql", "sweep")
                                                                      for s in (0, 1)), VARIANT / "capql_s2"]
    _check_variant_report(tmp_path, runs, VARIANT / "report", None)


@pytest.mark.skipif(not (CHEETAH_VARIANT / "report").is_dir(), reason="no committed HalfCheetah update-ratio variant")
@pytest.mark.parametrize("report, ref", [("report", None), ("report_wide", ["-100", "-6000"])])
def test_the_committed_halfcheetah_variant_with_twice_the_updates_is_ahead_of_capql(tmp_path, report, ref):
    """The README's HalfCheetah row for `learner/conditioned_spi64.yaml`, at both references: its summary
    follows from the committed points and its hypervolume IQM is above CAPQL's at equal steps (CAPQL: 3 seeds)."""
    cheetah = COMMITTED / "mo-halfcheetah-v5"
    variant = sorted(CHEETAH_VARIANT.glob("conditioned_s*"))
    assert len(variant) >= 2
    runs = [*variant, *(cheetah / f"{m}_s{s}" for m in ("capql", "sweep") for s in (0, 1, 2))]
    _check_variant_report(tmp_path, runs, CHEETAH_VARIANT / report, ref, len(variant))


def _check_variant_report(tmp_path: Path, runs: list[Path], report: Path, ref: list[str] | None,
                          variant_runs: int = 3) -> None:
    argv = ["experiment", "conditioned-report", *map(str, runs), "--out", str(tmp_path)]
    assert main(argv + (["--ref", *ref] if ref else [])) == 0
    got = json.loads((tmp_path / "summary.json").read_text())["methods"]
    want = json.loads((report / "summary.json").read_text())["methods"]
    for method, stats in want.items():
        assert got[method]["hypervolume_per_seed"] == pytest.approx(stats["hypervolume_per_seed"])
    for run in runs[:variant_runs]:
        r = json.loads((run / "results.json").read_text())
        assert "--config learner/conditioned_spi64.yaml" in r["command"]
        # a resumed run refills its replay before updating again, so it makes fewer updates
        assert r["updates"] == 14016 if r.get("resumed_from_step") is None else 0 < r["updates"] < 14016
    assert got["conditioned"]["hypervolume"]["iqm"] > got["capql"]["hypervolume"]["iqm"]


def test_the_recorded_command_carries_every_non_default_option(tmp_path):
    from morl_robot.experiments.conditioned import ConditionedExperiment, command_line

    cfg = ConditionedExperiment(env_id="mo-hopper-v5", steps=100, seed=2, learner="learner/conditioned_spi64.yaml",
                                points=27, eval_episodes=1, min_size_to_sample=50)
    line = command_line(cfg, tmp_path)
    for part in ("--seed 2", "--config learner/conditioned_spi64.yaml", "--points 27", "--eval-episodes 1",
                 "--min-replay 50"):
        assert part in line
    assert "--config" not in command_line(ConditionedExperiment(env_id="mo-hopper-v5", steps=100), tmp_path)


def test_every_committed_run_names_the_learner_config_it_was_trained_with():
    """The default config changed (conditioned.yaml → conditioned_spi64.yaml), so every committed run
    records its config: its command, parsed by the real CLI parser, loads a config whose update ratio
    gives the run's update count (samples per insert / batch size per step after the replay's warm-up)."""
    import shlex

    from morl_robot.cli import build_parser
    from morl_robot.learning.config import load_learner_config

    runs = [p for p in COMMITTED.glob("**/results.json")
            if json.loads(p.read_text()).get("method") == "conditioned"]
    assert len(runs) >= 11
    for path in runs:
        r = json.loads(path.read_text())
        args = build_parser().parse_args(shlex.split(r["command"])[1:])
        assert args.learner, f"{path}: the command does not name its learner config"
        cfg = load_learner_config(args.learner)
        warm = args.min_replay or cfg.replay.min_size_to_sample
        want = (r["steps"] - warm) * cfg.replay.samples_per_insert / cfg.batch_size
        if r.get("resumed_from_step") is None:
            assert r["updates"] == pytest.approx(want, rel=0.01), path
        else:  # the replay refills after the resume
            assert want * 0.8 < r["updates"] < want, path
