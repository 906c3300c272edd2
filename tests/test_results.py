"""The figures the README quotes from results/ can be re-checked without retraining: the committed
policies, re-evaluated with `morl-robot evaluate` (the real CLI parser), give the committed numbers."""
import json
from pathlib import Path

import pytest

from morl_robot.cli import main

RESULTS = Path(__file__).resolve().parents[1] / "results"


DEMO_REPORTS = [(p, "compliant") for p in sorted(RESULTS.glob("demo/seed*/demo_report.json"))] + \
    [(p, "stiff") for p in sorted(RESULTS.glob("archive/baseline_stiff/demo/seed*/demo_report.json"))]


@pytest.mark.parametrize("report,control", DEMO_REPORTS, ids=lambda x: x.parent.parent.parent.name + "-" + x.parent.name
                         if isinstance(x, Path) else x)
def test_demo_policies_reproduce_their_after_figures(report, control, capsys):
    """The committed demo policies (results/demo, trained under the compliant contact control) and
    the baseline from before it (results/archive/baseline_stiff/demo, re-checked with --contact-control stiff)."""
    data = json.loads(report.read_text())
    after = data["after"]
    argv = ["evaluate", str(report.parent / "policy.onnx"), "--episodes", str(after["episodes"]),
            "--seed", str(data["eval_seed"]), "--json", "--contact-control", control]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    for name, stats in after["objectives"].items():
        assert got["objectives"][name]["mean"] == pytest.approx(stats["mean"], abs=1e-6)
    assert got["success_rate"] == after["success_rate"]
    if control == "compliant":  # the force block the demo table shows
        assert got["force"]["peak"]["max"] == pytest.approx(after["force"]["peak"]["max"], abs=1e-6)


def test_there_are_results_to_check():
    assert len(list(RESULTS.glob("demo/seed*/policy.onnx"))) >= 3
