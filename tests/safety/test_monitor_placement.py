"""The safety monitor follows each episode's context (issue 37): its approach boxes move with the
fixture a context moves (``SafetyMonitor.place``, through ``CompiledRules.placed``), announced by the
robot node on the latched ``placement`` topic; a placement it cannot read leaves the boxes where the
safety YAML puts them and says so.  Before, in the simulated ROS graph (``deploy --backend sim``,
``train --session train`` with domain randomisation) the monitor judged every episode at the nominal
fixture while the robot node's inner layer and the in-process shield moved theirs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_safety_monitor import XYZ, released

from morl_robot.contexts.schema import context_by_reference
from morl_robot.errors import ConfigError
from morl_robot.safety.monitor import SafetyMonitor

#: The fixture raised 11 cm and moved 3 cm along x: its wall box fixture_nx then lies 1 cm below the
#: peg tip at the home pose (0.65, 0, 0.02), where the nominal fixture is 12 cm below it.
RAISED = {"fixture": [0.03, 0.0, 0.11]}
DOWN = [0.0, 0.0, -0.1]  # m/s


def test_a_command_toward_the_moved_fixture_is_limited_at_the_moved_box_not_the_nominal_one() -> None:
    m = released(watchdogs=False)
    out = m.on_command(DOWN, XYZ, 0.1)
    assert out.command.values == pytest.approx(DOWN) and not out.violations  # the nominal fixture: far below
    m.place(RAISED, "raised", episode=2)
    out = m.on_command(DOWN, XYZ, 0.2)
    # (distance 1 cm − margin 1 mm) / braking time 0.2 s, toward the moved wall box
    assert out.command.values[2] == pytest.approx(-0.045, abs=1e-4)
    assert "fixture_nx" in {v.key for v in out.violations if v.rule == "approach"}
    assert m.placement == {"fixture": (0.03, 0.0, 0.11)} and m.placement_episode == 2
    assert set(m.moved_boxes()) == {"fixture_base", "fixture_px", "fixture_nx", "fixture_py", "fixture_ny"}
    values = m.placement_values()
    assert json.loads(values["placement"]) == {"fixture": [0.03, 0.0, 0.11]} and values["placement_context"] == "raised"
    lower, upper = json.loads(values["approach_moved"])["fixture_nx"]
    assert lower == pytest.approx([0.62, -0.06, -0.04]) and upper == pytest.approx([0.6665, 0.06, 0.01])
    assert "moved with fixture by (+30.0, +0.0, +110.0) mm (context raised)" in m.describe_placement()
    # a context-free episode: back to the YAML's cell
    m.place(None)
    assert m.on_command(DOWN, XYZ, 0.3).command.values == pytest.approx(DOWN)
    assert m.placement == {} and not m.moved_boxes()


def test_only_the_approach_boxes_move_every_threshold_stays() -> None:
    m = released(watchdogs=False)
    yaml_rules, limits = m.rules, m.describe_rules()
    ctx = context_by_reference("sawyer_peg_in_hole:inside_mix").robot_context(0)  # hole_offset (2, -2, 0) mm
    m.place(ctx, "inside_mix")  # a RobotContext, as the robot's own
    placed = yaml_rules.placed(ctx)
    np.testing.assert_array_equal(m.rules.approach.lower, placed.approach.lower)  # the one definition
    np.testing.assert_array_equal(m.rules.approach.upper, placed.approach.upper)
    assert m.describe_rules() == limits
    for rule in ("position", "velocity", "effort", "wrench", "workspace", "deadlines", "period", "slow_scale"):
        assert getattr(m.rules, rule) is getattr(yaml_rules, rule), rule
    m.place(RAISED)  # placements never accumulate: each is from the YAML's cell
    np.testing.assert_allclose(m.rules.approach.lower[1] - yaml_rules.approach.lower[1], [0.03, 0.0, 0.11])


def test_it_checks_its_boxes_against_the_robot_inner_layers_and_says_where_they_differ() -> None:
    """The robot node announces the boxes its inner layer judges the episode at; a monitor whose YAML
    was already placed for a context (the driver-emulator path's safety.yaml) and is placed again,
    or that reads another YAML, says so (the placement is never applied twice silently)."""
    m = released(watchdogs=False)
    yaml_rules = m.rules
    placed = yaml_rules.placed(context_by_reference("sawyer_peg_in_hole:inside_mix").robot_context(0)).approach

    def boxes(rule) -> dict[str, list[list[float]]]:
        return {n: [list(rule.lower[i]), list(rule.upper[i])] for i, (n, b) in enumerate(zip(rule.names, rule.bodies))
                if b}

    offset = {"fixture": [0.002, -0.002, 0.0]}
    m.place(offset, "inside_mix", 1, robot_boxes=boxes(placed))  # the robot's inner layer placed the same
    assert m.placement_mismatch == "" and m.counters["placement_mismatches"] == 0
    # a monitor whose YAML is already placed for inside_mix (as deploy writes it for the emulator) ...
    m = SafetyMonitor(yaml_rules.placed(context_by_reference("sawyer_peg_in_hole:inside_mix").robot_context(0)),
                      watchdogs=False, action_labels=XYZ)
    m.place(offset, "inside_mix", 2, robot_boxes=boxes(placed))  # ... and placed again
    assert "approach box 'fixture_base': the robot node's inner layer at [0.5920, -0.0620, -0.1600]" in \
        m.placement_mismatch, m.placement_mismatch
    assert "placed again" in m.describe_placement() and m.placement_values()["placement_mismatch"]
    assert m.counters["placement_mismatches"] == 1
    m.place({}, "", 3, robot_boxes=boxes(placed))  # the emulator path: no offsets, both YAMLs placed: agree
    assert m.placement_mismatch == ""
    fewer = {n: b for n, b in boxes(placed).items() if n != "fixture_ny"}
    m.place({}, "", 4, robot_boxes=fewer)
    assert "has approach box 'fixture_ny' on a body, the robot node's inner layer none" in m.placement_mismatch


@pytest.mark.parametrize("announced, says", [
    ({"fixtre": [0.03, 0.0, 0.11]}, "body 'fixtre' has none of the approach boxes"),
    ({"fixture": [0.03, 0.0]}, "body_offset.fixture must be 3 finite numbers"),
    ({"fixture": [0.03, float("nan"), 0.11]}, "body_offset.fixture must be 3 finite numbers"),
    ({"fixture": "0.03"}, "body_offset.fixture must be 3 finite numbers"),
    ([0.03, 0.0, 0.11], "body_offset must map static bodies"),
])
def test_a_placement_it_cannot_read_keeps_the_yaml_boxes_and_says_so(announced, says) -> None:
    m = released(watchdogs=False)
    m.place(RAISED, "raised", episode=1)
    with pytest.raises(ConfigError, match=says):
        m.place(announced, "broken", episode=2)
    # not the previous episode's placement: the YAML's, and said so
    assert m.on_command(DOWN, XYZ, 0.1).command.values == pytest.approx(DOWN)
    assert m.placement == {} and says in m.placement_error and m.placement_episode == 2
    assert m.describe_placement().startswith("approach boxes where the safety YAML puts them, refused")
    assert says in m.placement_values()["placement_error"]
    assert m.counters["placement_errors"] == 1
    m.place({"fixture": [0.0, 0.0, 0.0]}, "nominal_draw", episode=3)  # the next good one clears it
    assert not m.placement_error and m.counters["placements"] == 2


def test_the_placement_message_round_trips_and_names_what_is_wrong() -> None:
    pytest.importorskip("rclpy")
    from morl_robot.errors import WireError
    from morl_robot.nodes import wire

    text = wire.placement_json(4, "train#17", {"fixture": (0.001, -0.002, 0.0)}, {"box": [[0, 0, 0], [1, 1, 1]]})
    p = wire.read_placement(text)
    assert (p.episode, p.context, p.body_offset) == (4, "train#17", {"fixture": [0.001, -0.002, 0.0]})
    assert p.approach == {"box": [[0, 0, 0], [1, 1, 1]]} and wire.read_placement(wire.placement_json(1, "", {})).approach is None
    assert wire.read_placement(wire.placement_json(5, None, {})).context == ""
    for bad, says in (("{", "not JSON"), ('{"episode": 1}', "with 'body_offset'"),
                      ('{"episode": "1", "body_offset": {}}', "'episode' must be an integer")):
        with pytest.raises(WireError, match=says):
            wire.read_placement(bad)
    assert wire.episode_of_key(wire.step_key(7, 3)) == 7 and wire.step_of_key(wire.step_key(7, 3)) == 3
    assert "placement" in {t.name for t in wire.TOPICS}


POLICY = Path(__file__).resolve().parents[2] / "results/generalization/sawyer_dr_contact/policies/conditioned_seed1.onnx"


def test_the_sim_graphs_monitor_judges_a_moved_fixture_episode_at_the_moved_boxes(tmp_path: Path) -> None:
    """``deploy --backend sim`` in inside_mix (the hole moved (2, -2, 0) mm): the graph's monitor places
    its approach boxes where the robot node's context put the fixture, so the graph's episode is the
    in-process one (the shield moves its boxes too).  Before: the monitor clamped at the nominal
    fixture's boxes and the graph's returns were 0.008 (task) and 0.11 (wrist_force) off the in-process
    ones on this seed; no placement in its diagnostics.  About 10 s (a 1 s episode)."""
    pytest.importorskip("rclpy")
    from morl_robot.safety.compiled import load_rules
    from tests.conftest import run_cli

    out = tmp_path / "deploy"
    proc = run_cli(["deploy", str(POLICY), "--backend", "sim", "--episodes", "1", "--set", "task.contexts=inside_mix",
                    "--set", "task.episode_duration=1.0", "--out", str(out)], timeout=300, out=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "deploy_report.json").read_text())
    log = (out / "logs" / "safety_monitor.log").read_text()
    # the monitor says where it put the boxes when the first episode's placement arrives
    moved = load_rules("sawyer").placed(context_by_reference("sawyer_peg_in_hole:inside_mix").robot_context(0)).approach
    fixture_boxes = [n for n, b in zip(moved.names, moved.bodies) if b == "fixture"]
    assert (f"approach boxes {', '.join(fixture_boxes)} moved with fixture by (+2.0, -2.0, +0.0) mm "
            "(context inside_mix)") in log, log[-3000:]
    assert "placement refused" not in log and "before its placement" not in log, log[-3000:]
    assert "disagrees with the robot node" not in log, log[-3000:]  # its inner layer's boxes are these
    # its diagnostics say so too (the report keeps the newest status the deploy saw: a 1 Hz status
    # may predate the first placement in so short a run)
    monitor = report["safety_monitor"]
    if int(monitor.get("placement_episode", -1)) >= 0:
        offset = context_by_reference("sawyer_peg_in_hole:inside_mix").values["hole_offset"]
        assert json.loads(monitor["placement"]) == {"fixture": pytest.approx(offset)}, monitor
        boxes = json.loads(monitor["approach_moved"])
        assert set(boxes) == set(fixture_boxes), monitor
        for i, name in enumerate(moved.names):
            if name in boxes:
                assert boxes[name] == [pytest.approx(list(moved.lower[i])), pytest.approx(list(moved.upper[i]))]
        assert monitor["placement_error"] == "" and monitor["placement_mismatch"] == "", monitor
        assert int(monitor.get("placement_late", 0)) == 0, monitor
    # the same episode as in process, where the shield judges at the moved boxes
    assert max(report["max_abs_difference"]) < 1e-3, report


@pytest.mark.ros
def test_the_monitor_node_logs_and_shows_a_placement_it_cannot_read(ros_session) -> None:
    """The node: an announcement it cannot read is logged as an error and shown on ``/diagnostics``
    (status warn, ``placement_error``) with the YAML's boxes; the next good one is applied."""
    from std_msgs.msg import String

    from morl_robot.nodes import wire
    from morl_robot.session.processes import NodeSpec

    s, ns = ros_session, "/arm"
    s.group.start(NodeSpec("safety_monitor", "safety_monitor", ns, {
        "robot": "sawyer", "action_labels": "vx,vy,vz", "watchdogs": False, "diagnostics_period": 0.2}))
    pub = s.probe.publisher(f"{ns}/placement", String, wire.LATCHED_QOS)

    def status() -> dict[str, str]:
        return s.probe.diagnostics("safety_monitor")

    # latched: it reaches the monitor however late it subscribes
    pub.publish(String(data=wire.placement_json(3, "typo", {"fixtre": [0.0, 0.0, 0.01]})))
    s.probe.wait_for(lambda: "body 'fixtre' has none of the approach boxes" in status().get("placement_error", ""),
                     60, "the refused placement on /diagnostics")
    assert status()["approach_moved"] == "{}" and status()["placement"] == "{}"
    pub.publish(String(data=wire.placement_json(4, "raised", RAISED)))
    s.probe.wait_for(lambda: status().get("placement_episode") == "4", 10, "the next placement")
    assert status()["placement_error"] == "" and json.loads(status()["placement"]) == RAISED
    assert "fixture_nx" in json.loads(status()["approach_moved"])
    pub.publish(String(data="{not json"))
    s.probe.wait_for(lambda: "not JSON" in status().get("placement_error", ""), 10, "the unreadable placement")
    assert status()["approach_moved"] == "{}"
    log = s.logs()
    assert "episode placement refused: placement of context 'typo': body 'fixtre'" in log, log[-3000:]
    assert "the approach boxes stay where the safety YAML puts them" in log
