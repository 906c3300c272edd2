"""`morl-robot bench preference-live`: the plain parts (checks and defaults against the preference box,
traces from what the probe received, the before/after-switch summary, the table, the figure) and the
CLI's refusals of policies and preferences it cannot use (exit 2, the problem named)."""
from __future__ import annotations

import numpy as np
import pytest

from morl_robot.bench.preference_live import (
    build_trace,
    episode_record,
    force_objective,
    format_table,
    plot,
    relative_time,
    resolve_preferences,
    summarise,
)
from morl_robot.errors import UsageError
from morl_robot.serving.contract import PreferenceInputs

BOX = PreferenceInputs(["task", "wrist_force"], [[0.1, 0.1], [0.005, 0.1]])


def test_defaults_are_the_ends_of_the_force_range_with_the_rest_at_the_centre() -> None:
    before, after = resolve_preferences(BOX, "wrist_force", None, None)
    np.testing.assert_allclose(before, [0.1, 0.005])
    np.testing.assert_allclose(after, [0.1, 0.1])
    box = PreferenceInputs(["task", "wrist_force"], [[0.01, 1.0], [0.01, 1.0]])
    before, after = resolve_preferences(box, "wrist_force", None, [1.0, 0.5])
    np.testing.assert_allclose(before, [0.1, 0.01])  # task at the centre
    np.testing.assert_allclose(after, [1.0, 0.5])


def test_preferences_outside_the_box_or_equal_are_refused() -> None:
    with pytest.raises(UsageError, match=r"--after: ε for objective 'wrist_force' is 0.5, outside its range \[0.005, 0.1\]"):
        resolve_preferences(BOX, "wrist_force", None, [0.1, 0.5])
    with pytest.raises(UsageError, match="--before has 1 values but the policy takes 2"):
        resolve_preferences(BOX, "wrist_force", [0.01], None)
    with pytest.raises(UsageError, match="--before and --after are the same preference"):
        resolve_preferences(BOX, "wrist_force", [0.1, 0.02], [0.1, 0.02])
    fixed = PreferenceInputs(["task", "wrist_force"], [[0.1, 0.1], [0.05, 0.05]])
    with pytest.raises(UsageError, match=r"range of 'wrist_force' is \[0.05, 0.05\]"):
        resolve_preferences(fixed, "wrist_force", None, None)


def test_force_objective_needs_a_wrench_sensor_and_a_conditioned_policy() -> None:
    from types import SimpleNamespace

    assert force_objective(SimpleNamespace(robot="sawyer", task="sawyer_peg_in_hole", preferences=BOX)) == "wrist_force"
    with pytest.raises(UsageError, match="not preference-conditioned"):
        force_objective(SimpleNamespace(robot="sawyer", task="sawyer_peg_in_hole", preferences=None))
    with pytest.raises(UsageError, match="robot 'shadow_hand'.*no wrist wrench sensor"):
        force_objective(SimpleNamespace(robot="shadow_hand", task="shadow_touch", preferences=BOX))


def _wrench(t0: float, forces: list[float], period: float = 0.05) -> list[tuple[float, tuple[float, float, float]]]:
    """The previous episode's last reading just before the start, the reset state's (tare: 3 N down),
    then one reading per control step: 3 N + the contact force along z."""
    return ([(t0 - 0.003, (0.0, 0.0, -9.0)), (t0 - 0.001, (0.0, 0.0, -3.0))]
            + [(t0 + (i + 1) * period, (0.0, 0.0, -3.0 - f)) for i, f in enumerate(forces)])


def test_trace_tares_at_the_reset_reading_and_pairs_commands_and_preferences() -> None:
    t0 = 100.0
    wrench = _wrench(t0, [1.0, 2.0, 4.0, 8.0]) + [(t0 + 9.0, (0.0, 0.0, 50.0))]  # after the end: left out
    commands = [(t0 - 0.5, (9.0, 9.0, 9.0)), (t0 + 0.07, (0.0, 0.0, -0.1)), (t0 + 0.16, (0.0, 0.0, -0.05))]
    prefs = [(t0 - 1.0, (0.1, 0.005)), (t0 + 0.12, (0.1, 0.1))]
    trace = build_trace(t0, t0 + 1.0, wrench, commands, prefs)
    assert trace["t"] == [-0.001, 0.05, 0.1, 0.15, 0.2]
    np.testing.assert_allclose(trace["force_N"], [0.0, 1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(trace["force_raw_N"], [3.0, 4.0, 5.0, 7.0, 11.0])
    assert trace["command"] == [None, None, [0.0, 0.0, -0.1], [0.0, 0.0, -0.1], [0.0, 0.0, -0.05]]
    assert trace["preference"] == [[0.1, 0.005]] * 3 + [[0.1, 0.1]] * 2
    assert build_trace(t0, t0 + 1.0, [], commands, prefs)["t"] == []


def test_the_start_events_force_names_the_reset_reading_however_early_it_arrived() -> None:
    """On a loaded machine the reset reading once reached the probe 30+ ms before the start event (outside
    the timing window), and the trace began a step late.  The event carries the reset state's force:
    the sample equal to it is the tare and the first row."""
    t0 = 100.0
    wrench = [(t0 - 0.2, (0.0, 0.0, -9.0)), (t0 - 0.04, (0.0, 0.0, -3.25)),
              (t0 + 0.05, (0.0, 0.0, -4.0)), (t0 + 0.1, (0.0, 0.0, -5.0))]
    late = build_trace(t0, t0 + 1.0, wrench, [], [(t0 - 1.0, (0.1, 0.005))])
    assert late["force_raw_N"][0] == 4.0  # timing alone: the first step's reading becomes the tare
    trace = build_trace(t0, t0 + 1.0, wrench, [], [(t0 - 1.0, (0.1, 0.005))], reset_force=(0.0, 0.0, -3.25))
    assert trace["t"] == [-0.04, 0.05, 0.1]
    np.testing.assert_allclose(trace["force_raw_N"], [3.25, 4.0, 5.0])
    np.testing.assert_allclose(trace["force_N"], [0.0, 0.75, 1.75])
    # the reset state republished as step 0 (bit-identical at rest): the copy before the event starts the trace
    again = sorted(wrench + [(t0 + 0.01, (0.0, 0.0, -3.25))])
    trace = build_trace(t0, t0 + 1.0, again, [], [(t0 - 1.0, (0.1, 0.005))], reset_force=(0.0, 0.0, -3.25))
    assert trace["t"] == [-0.04, 0.01, 0.05, 0.1]
    # only a copy after the event: that one
    after = [r for r in again if r[0] != t0 - 0.04]
    trace = build_trace(t0, t0 + 1.0, after, [], [(t0 - 1.0, (0.1, 0.005))], reset_force=(0.0, 0.0, -3.25))
    assert trace["t"] == [0.01, 0.05, 0.1]


def test_a_reading_at_the_reported_switch_time_carries_the_new_preference() -> None:
    """The switch time is reported to 0.1 ms; a reading received 0.03 ms before the acceptance has the
    same reported time, and a trace split at the switch time must give it the new preference."""
    t0 = 100.0
    accepted = t0 + 1.23449
    wrench = [(t0, (0.0, 0.0, -3.0)), (t0 + 1.23446, (0.0, 0.0, -4.0)), (t0 + 1.3, (0.0, 0.0, -5.0))]
    trace = build_trace(t0, t0 + 2.0, wrench, [], [(t0 - 1.0, (0.1, 0.005)), (accepted, (0.1, 0.1))])
    switch_s = relative_time(accepted, t0)
    assert trace["t"] == [0.0, switch_s, 1.3]
    assert trace["preference"] == [[0.1, 0.005], [0.1, 0.1], [0.1, 0.1]]
    assert summarise(trace, switch_s)["samples_after_switch"] == 2


def _run(forces: list[float], switch: float | None = None, success: bool | None = False) -> dict:
    t0 = 10.0
    trace = build_trace(t0, t0 + 5, _wrench(t0, forces, period=0.5), [], [(0.0, (0.1, 0.005))])
    return {"trace": trace, "switch_accepted_s": switch, "success": success}


def test_summary_splits_every_run_at_the_switched_runs_switch_time() -> None:
    runs = {"switched": _run([1, 1, 1, 3, 5], switch=1.6), "before": _run([1, 1, 1, 9, 9], success=True),
            "after": _run([1, 1, 1, 2, 2], success=None)}
    e = episode_record(7, runs, switch_after=1.5)
    assert e["seed"] == 7 and e["switch_s"] == 1.6 and e["split_s"] == 1.6
    assert e["switched"]["force"] == {"mean_before_switch": pytest.approx(0.75), "peak_before_switch": 1.0,
                                      "samples_before_switch": 4, "mean_after_switch": 4.0, "peak_after_switch": 5.0,
                                      "samples_after_switch": 2}
    assert e["before"]["force"]["mean_after_switch"] == 9.0 and e["after"]["force"]["peak_after_switch"] == 2.0
    assert e["pre_switch_difference_N"] == 0.0  # the same forces until the switch
    shifted = episode_record(7, {**runs, "before": _run([1, 3, 1, 9, 9])}, switch_after=1.5)
    assert shifted["pre_switch_difference_N"] == pytest.approx(2.0 / 4)  # one step of four 2 N apart
    # the episode ended before the switch: the controls split at the nominal time, nothing after it
    e2 = episode_record(8, {**runs, "switched": _run([1, 2], switch=None)}, switch_after=1.5)
    assert e2["switch_s"] is None and e2["split_s"] == 1.5
    assert e2["switched"]["force"]["mean_after_switch"] is None and e2["switched"]["force"]["samples_after_switch"] == 0
    assert summarise({"t": [], "force_N": []}, None)["mean_before_switch"] is None

    report = {"policy": "/x/conditioned.onnx", "objectives": ["task", "wrist_force"], "force_objective": "wrist_force",
              "before": [0.1, 0.005], "after": [0.1, 0.1], "force_threshold_N": 30.0, "episodes": [e, e2]}
    table = format_table(report).splitlines()
    assert "mean ‖F‖ (N) before the switch" in table[0] and "inserted" in table[0]
    assert table[3].split() == ["7", "1.60", "|", "0.75", "0.75", "0.75", "|", "4.00", "9.00", "2.00", "|", "no/yes/?"]
    assert table[4].split()[:2] == ["8", "none"] and table[4].split()[7] == "-"
    # the mean over episodes: the switched run only where it switched; e2's controls split at 1.5 s,
    # so one more step counts after it: before only (9 + (1 + 9 + 9) / 3) / 2, after only (2 + 5 / 3) / 2
    assert table[-1].split()[0] == "mean" and table[-1].split()[6:9] == ["4.00", "7.67", "1.83"]


def test_figure_has_a_panel_per_episode(tmp_path) -> None:
    runs = {"switched": _run([1, 1, 1, 3, 5], switch=1.6), "before": _run([1, 1, 1, 9, 9]), "after": _run([1, 1, 2, 2])}
    e = episode_record(3, runs, 1.5)
    report = {"policy": "/x/p.onnx", "objectives": ["task", "wrist_force"], "force_objective": "wrist_force",
              "before": [0.1, 0.005], "after": [0.1, 0.1], "force_threshold_N": 30.0, "episodes": [e, e]}
    path = plot(report, tmp_path / "preference_live.png")
    assert path.stat().st_size > 5000
    import matplotlib.image

    height, width = matplotlib.image.imread(path).shape[:2]
    assert height > width * 0.6  # two stacked panels


@pytest.fixture(scope="module")
def plain_policies(tmp_path_factory):
    from morl_robot.bench.graph import _export_policy

    folder = tmp_path_factory.mktemp("policies")
    _export_policy("sawyer_peg_in_hole", folder / "sawyer.onnx")
    _export_policy("shadow_touch", folder / "shadow.onnx")
    return folder


@pytest.mark.parametrize("which, message", [
    ("sawyer.onnx", "the policy (task sawyer_peg_in_hole) is not preference-conditioned"),
    ("shadow.onnx", "robot 'shadow_hand' (task shadow_touch), which has no wrist wrench sensor"),
    ("missing.onnx", "--policy: no such file"),
])
def test_cli_names_a_policy_it_cannot_use(plain_policies, tmp_path, capsys, which, message) -> None:
    from morl_robot.cli import main

    assert main(["bench", "preference-live", str(plain_policies / which), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("morl-robot bench: error:") and message in err, err
    assert not (tmp_path / "preference_live.json").exists()
