"""Every committed summary agrees with the per-seed reports it summarises."""
import copy
import json
from pathlib import Path

import pytest

from morl_robot.evaluation.results_index import (
    check_summaries,
    summary_folders,
    summary_mismatches,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
# The stale demo summary (issue 34): its seed 0 said 0.8 insertion and task 19.19 while
# seed0/demo_report.json said 100 % and 134.21. Kept verbatim to show the check catches it.
STALE = Path(__file__).parent / "data" / "stale_demo_summary.json"


def baseline_demo() -> Path:
    found = sorted(RESULTS.glob("**/baseline_stiff/demo"))
    assert found, "results/**/baseline_stiff/demo is gone"
    return found[0]


@pytest.mark.parametrize("folder", summary_folders(RESULTS), ids=lambda p: p.relative_to(RESULTS).as_posix())
def test_every_summary_agrees_with_its_per_seed_reports(folder):
    assert summary_mismatches(folder) == []


def test_the_summaries_checked_include_every_kind():
    names = {p.relative_to(RESULTS).as_posix() for p in summary_folders(RESULTS)}
    assert "demo" in names and any(n.endswith("baseline_stiff/demo") for n in names)
    assert sum(n.startswith("conditioned/") for n in names) >= 5
    assert "button_world" in names and "deep_sea_treasure_learned/exploring_starts/es_h1_table_c51" in names
    assert check_summaries(RESULTS) == {}


def test_the_stale_demo_summary_is_caught():
    """Regression: the old summary fails the check against the same per-seed reports."""
    stale = json.loads(STALE.read_text())
    bad = summary_mismatches(baseline_demo(), summary=stale)
    assert "seed 0.after.success_rate: summary 0.8 != report 1.0" in bad
    assert any(m.startswith("seed 0.after.task.mean: summary 19.1928 != report 134.21") for m in bad)
    report = json.loads((baseline_demo() / "seed0" / "demo_report.json").read_text())
    assert report["after"]["success_rate"] == 1.0


def test_a_changed_figure_or_a_missing_seed_is_caught():
    summary = json.loads((RESULTS / "demo" / "results.json").read_text())
    assert summary_mismatches(RESULTS / "demo", summary=summary) == []
    changed = copy.deepcopy(summary)
    changed["seeds"]["1"]["after"]["peak_force"]["max"] += 0.5
    assert summary_mismatches(RESULTS / "demo", summary=changed) == [
        (f"seed 1.after.peak_force.max: summary {changed['seeds']['1']['after']['peak_force']['max']} "
        f"!= report {summary['seeds']['1']['after']['peak_force']['max']}")]
    del changed["seeds"]["2"]
    assert "seed 2: seed2/demo_report.json is not in the summary" in summary_mismatches(RESULTS / "demo", changed)


def test_a_conditioned_report_with_a_wrong_seed_is_caught():
    report = RESULTS / "conditioned" / "mo-hopper-v5" / "report"
    summary = json.loads((report / "summary.json").read_text())
    assert summary_mismatches(report, summary) == []
    summary["methods"]["capql"]["hypervolume_per_seed"][1] *= 1.01
    (bad,) = summary_mismatches(report, summary)
    assert bad.startswith("report: capql seed 1: summary hypervolume")


def test_a_button_world_curve_that_is_not_its_runs_front_is_caught():
    folder = RESULTS / "button_world"
    summary = json.loads((folder / "results.json").read_text())
    seed0 = summary["pairs"]["term-term"]["with_crm"]["seeds"][0]
    assert seed0["seed"] == 0 and seed0["curve"][1]["front"]
    seed0["curve"][1]["front"] = [[0.0, 0.0]]  # the step-2000 front the runs do not give
    (bad,) = summary_mismatches(folder, summary)
    assert bad.startswith("term-term with_crm seed 0 step 2000: summary front [[0.0, 0.0]]")


def test_a_deep_sea_treasure_setting_that_is_not_its_run_is_caught():
    folder = RESULTS / "deep_sea_treasure_learned" / "exploring_starts" / "es_h1_table_c51"
    summary = json.loads((folder / "results.json").read_text())
    summary["mo-mpo"]["per_setting"][0]["returns"] = [23.7, -19.0]
    del summary["mo-mpo"]["per_setting"][1]
    bad = summary_mismatches(folder, summary)
    assert bad[0].startswith("mo-mpo eps_time=0.02,c=0.500 seed 0: summary returns [23.7, -19.0]")
    assert bad[-1] == "mo-mpo: 1 finished runs of sweep_mo-mpo.json are not in the summary"
