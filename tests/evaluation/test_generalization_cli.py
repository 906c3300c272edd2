"""``morl-robot generalization`` through the real CLI on a tiny budget (issue 37)."""
from __future__ import annotations

import json

from morl_robot.cli import main

#: the committed experiment's command (docs/howto/generalization.md), run here on a tiny budget
DOC_ARGS = ["generalization", "--policies",
            "nominal_trained=results/sawyer_conditioned_compliant/policies/conditioned_seed0.onnx", "zero",
            "--task", "sawyer_peg_in_hole", "--preferences", "0.1,0.005", "0.1,0.1", "--contexts", "held_out",
            "--episodes", "50"]


def test_generalization_cli_writes_results_markdown_plots_and_reuses_cells(tmp_path, capsys):
    out = tmp_path / "gen"
    argv = ["generalization", "--policies", "zero", "scripted", "--task", "sawyer_peg_in_hole",
            "--contexts", "nominal,heavy_tool", "--episodes", "1", "--out", str(out)]
    assert main(argv) == 0
    data = json.loads((out / "results.json").read_text())
    assert [c["name"] for c in data["contexts"]] == ["nominal", "heavy_tool"]
    assert data["contexts"][1]["outside_training"] == ["tool_mass"]
    assert set(data["methods"]) == {"zero", "scripted"}
    run = data["methods"]["scripted"]["runs"][0]["contexts"]["heavy_tool"]
    assert {"hv", "hv_norm", "nhgr", "eum", "eugr", "success_rate", "success_ci", "force_threshold_rate"} <= set(run)
    agg = data["methods"]["scripted"]["aggregate"]["nhgr"]
    # a context whose reference front is one point (the scripted press dominating standing still) has
    # no NHGR: it is named in "excluded"; the rest are aggregated (none left: undefined, not an error)
    assert agg["contexts"] + len(agg["excluded"]) == 2
    assert agg["iqm"]["value"] >= 0.0 if agg["contexts"] else agg["iqm"]["value"] is None
    cell = json.loads((out / run["cells"][0]["file"]).read_text())
    assert cell["context"]["name"] == "heavy_tool" and cell["per_episode"][0]["context"] == "heavy_tool"
    assert "provenance" in data
    for f in ("results.md", "fronts.png", "metrics.png", "rates.png"):
        assert (out / f).is_file(), f
    assert "heavy_tool" in (out / "results.md").read_text()
    capsys.readouterr()
    assert main(argv) == 0  # every cell is reused: nothing evaluated again
    assert "episodes" not in capsys.readouterr().err


def test_generalization_cli_unknown_context_is_a_usage_error(tmp_path, capsys):
    rc = main(["generalization", "--policies", "zero", "--task", "sawyer_peg_in_hole", "--contexts", "heavy_tol",
               "--episodes", "1", "--out", str(tmp_path / "x")])
    assert rc == 2
    assert "heavy_tool" in capsys.readouterr().err


def test_the_committed_experiments_command_on_a_tiny_budget(tmp_path):
    out = tmp_path / "exp"
    assert main([*DOC_ARGS, "--contexts", "nominal,laggy_link", "--episodes", "1", "--out", str(out)]) == 0
    data = json.loads((out / "results.json").read_text())
    runs = data["methods"]["nominal_trained"]["runs"]
    assert len(runs[0]["contexts"]["laggy_link"]["front"]) == 2  # one point per preference
    assert [c["preference"] for c in runs[0]["contexts"]["laggy_link"]["cells"]] == [[0.1, 0.005], [0.1, 0.1]]
    assert data["contexts"][1]["outside_training"] == ["latency", "jitter"]
