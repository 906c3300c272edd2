"""``experiment peer-comparison`` (issue 36): the plan, its wall-time estimate and resumption, through
the CLI (``--dry-run``: the 200k-step comparison itself is days of compute, not a test)."""
from __future__ import annotations

import json

import pytest

from morl_robot.cli import main


def test_dry_run_prints_the_plan_and_an_estimate(tmp_path, capsys):
    assert main(["experiment", "peer-comparison", "--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "mo-halfcheetah-v5, mo-hopper-v5 x conditioned, sweep, capql x 5 seeds, 200000 env steps" in out
    assert "30 runs, 0 done" in out and "estimated wall time" in out
    full = float(out.split("machine: ")[1].split(" h")[0])
    assert full > 0
    # a finished run is kept and skipped: the estimate covers only the rest
    done = tmp_path / "mo-hopper-v5" / "capql_s0"
    done.mkdir(parents=True)
    (done / "results.json").write_text(json.dumps({"ref": [-100.0, -100.0, -100.0]}))
    assert main(["experiment", "peer-comparison", "--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "30 runs, 1 done" in out
    assert float(out.split("machine: ")[1].split(" h")[0]) < full


def test_bad_arguments_are_usage_errors(tmp_path, capsys):
    assert main(["experiment", "peer-comparison", "--out", str(tmp_path), "--seeds", "0", "--dry-run"]) == 2
    assert "--seeds must be >= 1" in capsys.readouterr().err
    assert main(["experiment", "peer-comparison", "--out", str(tmp_path), "--methods", "ppo", "--dry-run"]) == 2
    assert "unknown ['ppo']" in capsys.readouterr().err


@pytest.mark.extended  # make test-extended: two tiny training runs and their report (~1 min loaded)
def test_a_tiny_comparison_runs_reports_and_resumes(tmp_path, capsys):
    argv = ["experiment", "peer-comparison", "--out", str(tmp_path), "--envs", "deep-sea-treasure-v0",
            "--methods", "conditioned", "--seeds", "2", "--steps", "300", "--min-replay", "64"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "hypervolume per method (IQM [95 % CI] over seeds), reference [-100.0, -100.0]" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["envs"]["deep-sea-treasure-v0"]["methods"]["conditioned"]["seeds"] == [0, 1]
    assert "provenance" in summary
    assert main(argv + ["--dry-run"]) == 0  # both runs kept: nothing left to train
    assert "2 runs, 2 done" in capsys.readouterr().out
