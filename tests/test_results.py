"""The figures the README quotes from results/ can be re-checked without retraining: the committed
policies, re-evaluated with `morl-robot evaluate` (the real CLI parser), give the committed numbers."""
import json
from pathlib import Path

import pytest

from morl_robot.cli import main

RESULTS = Path(__file__).resolve().parents[1] / "results"


@pytest.mark.parametrize("report", sorted(RESULTS.glob("demo/seed*/demo_report.json")), ids=lambda p: p.parent.name)
def test_demo_policies_reproduce_their_after_figures(report, capsys):
    data = json.loads(report.read_text())
    after = data["after"]
    argv = ["evaluate", str(report.parent / "policy.onnx"), "--episodes", str(after["episodes"]),
            "--seed", str(data["eval_seed"]), "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    for name, stats in after["objectives"].items():
        assert got["objectives"][name]["mean"] == pytest.approx(stats["mean"], abs=1e-6)
    assert got["success_rate"] == after["success_rate"]


def test_there_are_results_to_check():
    assert len(list(RESULTS.glob("demo/seed*/policy.onnx"))) >= 3
