"""``ros2 launch morl_robot safety_test.launch.py robot:=shadow_hand``: the probes attach to the
launched graph and write the same report, plots and result as ``morl-robot safety-test``; the
launch ends with the result: PASS, exit 0, as the CLI's (the fingertip probe's force gauge reaches the
60 N collision level since issue 33; tests/faults/test_shadow_gauge_press.py)."""
import json
import tempfile
from pathlib import Path

from launch_helpers import domain_for, require_ros_workspace, run_until_it_ends

require_ros_workspace()


def test_the_launched_safety_test_writes_the_report_and_ends_with_the_result():
    out = Path(tempfile.mkdtemp()) / "report"
    run = run_until_it_ends("safety_test.launch.py", domain_for(__file__), timeout=600, robot="shadow_hand",
                            out=str(out), namespace="launch_safety")
    assert run.ended_by_itself, run.output
    assert run.reasons[0] == f"safety test finished: PASS; report in {out}/report.md", run.reasons
    assert run.exit_codes.pop(run.process("safety_test")) == 0
    assert set(run.exit_codes.values()) == {0}, run.exit_codes  # the nodes stopped cleanly
    report = json.loads((out / "report.json").read_text())
    assert report["result"] == "pass"
    rules = {c["rule"] for c in report["checks"]}
    assert {"tactile", "stale.joint_states", "command.non_finite", "stale.heartbeat"} <= rules, rules
    assert (out / "report.md").is_file() and list(out.glob("*.png"))
