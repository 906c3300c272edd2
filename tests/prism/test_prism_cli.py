"""``morl-robot prism`` through the real entry point: mirror-check's verdict, and errors that name what
is wrong (exit 2) before anything trains.  ``prism run`` end to end is run by the docs harness
(docs/explanation/prism.md, tiny budget) and committed in results/prism/."""
import pytest

from morl_robot.cli import main

pytest.importorskip("mo_gymnasium")


def test_mirror_check_reports_an_exact_map_and_the_papers_inexact_one(capsys):
    assert main(["prism", "mirror-check", "--map", "mo-swimmer-v5-exact", "--rollouts", "1", "--steps", "10"]) == 0
    out = capsys.readouterr().out
    assert "involution: True; declared exact: True" in out and "= 0" in out
    assert main(["prism", "mirror-check", "--map", "mo-hopper-v5", "--rollouts", "1", "--steps", "10"]) == 0
    assert "declared exact: False" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--variants", "nope"], "--variants must be among oracle, baseline, prism"),
    (["--prism", "no_such"], "unknown PRISM config 'no_such'"),
    (["--env", "mo-nothing-v0"], "--env 'mo-nothing-v0': cannot make the environment"),
    (["--steps-per-cycle", "0"], "--steps-per-cycle must be >= 1"),
])
def test_prism_run_refuses_bad_options(argv, message, tmp_path, capsys):
    prism = ["--prism", "mo-hopper-v5"] if "--prism" not in argv else []
    assert main(["prism", "run", "--out", str(tmp_path / "out"), *prism, *argv, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_prism_report_recomputes_the_committed_pipeline_check(tmp_path, capsys):
    import json
    from pathlib import Path

    committed = Path(__file__).parents[2] / "results" / "prism" / "pipeline_check" / "results.json"
    assert main(["prism", "report", str(committed)]) == 0
    out = capsys.readouterr().out
    assert "recomputed from their fronts: match" in out and "HV prism − baseline, paired by seed (3)" in out
    data = json.loads(committed.read_text())
    data["runs"][0]["hypervolume"] *= 2  # a tampered figure is named
    tampered = tmp_path / "results.json"
    tampered.write_text(json.dumps(data))
    assert main(["prism", "report", str(tampered)]) == 1
    assert "oracle seed 0: hypervolume" in capsys.readouterr().err
    assert main(["prism", "report", str(tmp_path / "none.json")]) == 2
