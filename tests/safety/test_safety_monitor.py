"""SafetyMonitor: rules trip at their thresholds through the state machine, the e-stop latches,
a reset is refused while violating and accepted after, holds and clamps per control mode."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safety_helpers import new_monitor

from morl_robot.safety.rules import Response

HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])  # peg tip at (0.65, 0, 0.02)
XYZ = ("vx", "vy", "vz")
REST = np.array([0.0, 0.0, -3.4, 0.0, 0.0, 0.0])  # the tool's weight


def released(robot="sawyer", t=0.0, **kw):
    """A monitor with fresh, quiet readings, released from its start-up e-stop."""
    m = new_monitor(robot, now=t, **kw)
    quiet(m, t)
    ok, why = m.reset(t)
    assert ok, why
    return m


def quiet(m, t):
    spec = m.spec
    if robot_is(m, "sawyer"):
        m.on_joint_state(spec.joint_names, HOME, np.zeros(7), np.zeros(7), t, t)
        m.on_wrench(REST, t, t)
    else:
        q = np.array([0.5 * (j.lower + j.upper) for j in spec.joints])
        m.on_joint_state(spec.joint_names, q, np.zeros(len(q)), [], t, t)
        m.on_tactile(np.zeros(15), _tactile_labels(m), t, t)


def robot_is(m, name):
    return m.spec.name == name


def _tactile_labels(m):
    return next(s for s in m.spec.sensors if s.kind == "tactile").labels


def threshold(m, rule, key, level):
    return next(r.threshold for r in m.describe_rules() if (r.rule, r.key, r.level) == (rule, key, level))


def test_joint_states_in_any_name_order_give_the_same_decisions():
    """A reading in the spec's joint order and the same reading shuffled (plus a name the robot
    does not have) trip the same rules with the same values, and hold the same end effector."""
    spec_order, shuffled = released(), released()
    names = list(spec_order.spec.joint_names)
    perm = [3, 0, 6, 2, 5, 1, 4]
    limit = threshold(spec_order, "joints.velocity", names[2], "hard")
    for k, (q, qd) in enumerate([(HOME, np.zeros(7)), (HOME + 0.01, np.full(7, 0.1)),
                                 (HOME, np.where(np.arange(7) == 2, limit, 0.0))]):
        tau = np.zeros(7)
        a = spec_order.on_joint_state(names, q, qd, tau, float(k), float(k))
        b = shuffled.on_joint_state([names[i] for i in perm] + ["gripper"], np.append(q[perm], 0.0),
                                    np.append(qd[perm], 0.0), np.append(tau[perm], 0.0), float(k), float(k))
        assert [(v.rule, v.key, v.level, v.value) for v in a.violations] == \
            sorted([(v.rule, v.key, v.level, v.value) for v in b.violations], key=lambda v: names.index(v[1]))
        assert np.array_equal(spec_order.end_effector, shuffled.end_effector)
        assert (spec_order.estopped, shuffled.estopped) == (k == 2, k == 2)


# --- each rule trips at its threshold and not below, over random traces -------------------------
samples = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25)


def scaled_trace(fractions, t):
    """Magnitudes in [0, 1.2 t] with the threshold itself and the float just below it mixed in."""
    return [f * 1.2 * t for f in fractions] + [np.nextafter(t, 0.0)]


@pytest.mark.parametrize("axis, rule, key", [(2, "wrench.force_norm", "norm"), (0, "wrench.force_axis", "fx"),
                                             (4, "wrench.torque_norm", "norm")])
@settings(max_examples=40, deadline=None)
@given(fractions=samples, hit_exactly=st.booleans())
def test_wrench_collision_trips_at_threshold_and_not_below(axis, rule, key, fractions, hit_exactly):
    m = released(watchdogs=False)
    t = threshold(m, rule, key, "collision")
    trace = scaled_trace(fractions, t) + ([t] if hit_exactly else [])
    should_trip = max(trace) >= t
    for i, x in enumerate(trace):
        w = np.zeros(6)
        w[axis] = -x
        m.on_wrench(w, i, i)
    assert m.estopped == should_trip
    if should_trip:
        assert m.estop_cause.rule == rule and m.estop_cause.threshold == t and abs(m.estop_cause.value) >= t


@settings(max_examples=40, deadline=None)
@given(fractions=samples, sensor=st.integers(0, 14), hit_exactly=st.booleans())
def test_tactile_levels_trip_at_threshold_and_not_below(fractions, sensor, hit_exactly):
    m = released("shadow_hand", watchdogs=False)
    labels = _tactile_labels(m)
    t = threshold(m, "tactile", labels[sensor], "collision")
    contact = threshold(m, "tactile", labels[sensor], "contact")
    trace = scaled_trace(fractions, t) + ([t] if hit_exactly else [])
    events = []
    for i, x in enumerate(trace):
        values = np.zeros(15)
        values[sensor] = x
        events += m.on_tactile(values, labels, i, i).violations
    assert m.estopped == (max(trace) >= t)
    assert any(v.level == "contact" for v in events) == (max(trace) >= contact)


@settings(max_examples=40, deadline=None)
@given(fractions=samples, joint=st.integers(0, 6), sign=st.sampled_from([-1.0, 1.0]))
def test_joint_velocity_hard_limit(fractions, joint, sign):
    m = released(watchdogs=False)
    name = m.spec.joint_names[joint]
    t = threshold(m, "joints.velocity", name, "hard")
    trace = scaled_trace(fractions, t)
    for i, x in enumerate(trace):
        qd = np.zeros(7)
        qd[joint] = sign * x
        m.on_joint_state(m.spec.joint_names, HOME, qd, np.zeros(7), 1.0 + i, 1.0 + i)  # 1 s apart: not accelerating
    assert m.estopped == (max(trace) >= t)


@settings(max_examples=40, deadline=None)
@given(fractions=samples, joint=st.integers(4, 6))
def test_joint_effort_hard_limit(fractions, joint):
    m = released(watchdogs=False)
    t = threshold(m, "joints.effort", m.spec.joint_names[joint], "hard")
    trace = scaled_trace(fractions, t)
    for i, x in enumerate(trace):
        tau = np.zeros(7)
        tau[joint] = -x
        m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), tau, i, i)
    assert m.estopped == (max(trace) >= t)


@settings(max_examples=40, deadline=None)
@given(offsets=st.lists(st.floats(-0.05, 0.05), min_size=1, max_size=15), upper=st.booleans())
def test_joint_position_hard_limit(offsets, upper):
    m = released("shadow_hand", watchdogs=False)
    j = 2  # rh_FFJ4
    name = m.spec.joint_names[j]
    bound = threshold(m, "joints.position", f"{name}{'>=' if upper else '<='}", "hard")
    base = m._q.copy()
    trace = [bound + (o if upper else -o) for o in offsets] + [bound - 1e-9 if upper else bound + 1e-9]
    for i, x in enumerate(trace):
        q = base.copy()
        q[j] = x
        m.on_joint_state(m.spec.joint_names, q, [], [], i, i)
    crossed = any((x >= bound) if upper else (x <= bound) for x in trace)
    assert m.estopped == crossed


@settings(max_examples=40, deadline=None)
@given(gaps=st.lists(st.floats(0.0, 0.5), min_size=1, max_size=20))
def test_stale_stream_trips_at_its_deadline(gaps):
    """Messages arrive after ``gaps``; the watchdog is checked every 1 ms: e-stop iff a gap reached
    the deadline (checked at the arrival time itself too)."""
    m = released(t=0.0)
    deadline = threshold(m, "stale.wrench", "wrench", "deadline")
    t = 0.0
    seen = []  # the gaps as the monitor's clock measures them ((t + gap) - t may round below gap)
    for gap in gaps:
        for c in np.arange(t, t + gap, 0.001):
            m.check_watchdogs(c)
            m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), c, c)  # joints stay fresh
        m.check_watchdogs(t + gap)
        seen.append((t + gap) - t)
        t += gap
        m.on_wrench(REST, t, t)
    tripped = [v for v in m.active_violations() if v.rule == "stale.wrench"]
    assert m.estopped == any(g >= deadline for g in seen)
    if m.estopped:
        assert m.estop_cause.rule == "stale.wrench" and m.estop_cause.value >= deadline
    assert not tripped  # fresh again at the end


def test_a_sensor_stream_never_received_is_stale_from_start_up():
    m = new_monitor("sawyer", now=10.0)
    m.on_wrench(REST, 10.1, 10.1)
    ok, why = m.reset(10.3)
    assert not ok and "stale.joint_states" in why and "no message" in why and "stale.wrench" not in why


def test_watchdogs_off_is_the_lockstep_profile():
    m = new_monitor("sawyer", watchdogs=False, now=0.0)
    assert m.check_watchdogs(1e6).violations == []
    assert m.reset(1e6)[0]  # nothing was ever received, and nothing is overdue


def test_reset_waits_for_every_watched_sensor_to_speak():
    """A monitor released in its first milliseconds, before the robot node publishes, would trip
    its stream watchdogs a deadline later (a launch's ``release:=after_checks`` did): a reset is
    refused, naming the silent streams, until each watched sensor has sent a reading."""
    m = new_monitor("sawyer", now=0.0)
    ok, why = m.reset(0.001)
    assert not ok and "joint_states" in why and "wrench" in why, why
    m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), 0.05, 0.05)
    ok, why = m.reset(0.06)
    assert not ok and "wrench" in why and "joint_states" not in why, why
    m.on_wrench(REST, 0.07, 0.07)
    ok, why = m.reset(0.08)
    assert ok and not m.estopped, why


def test_heartbeat_is_watched_once_started_and_blocks_reset_while_missing():
    m = released(t=0.0)
    fresh = lambda t: (m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), t, t),
                       m.on_wrench(REST, t, t))
    for t in np.arange(0.0, 2.0, 0.1):  # no heartbeat yet: not armed
        fresh(t)
        m.check_watchdogs(t)
    assert not m.estopped
    m.on_heartbeat(2.0, 2.0)
    deadline = threshold(m, "stale.heartbeat", "heartbeat", "deadline")
    fresh(2.0 + deadline)
    out = m.check_watchdogs(2.0 + deadline)
    assert m.estopped and [v.rule for v in out.violations] == ["stale.heartbeat"]
    ok, why = m.reset(2.0 + deadline + 0.01)
    assert not ok and "stale.heartbeat" in why
    m.on_heartbeat(2.7, 2.7)
    fresh(2.7)
    assert m.reset(2.71)[0]


@pytest.mark.parametrize("stream", ["joint_states", "wrench", "tactile"])
def test_non_finite_sensor_values_engage_the_estop(stream):
    m = released("shadow_hand" if stream == "tactile" else "sawyer", watchdogs=False)
    if stream == "joint_states":
        q = HOME.copy()
        q[3] = np.nan
        m.on_joint_state(m.spec.joint_names, q, np.zeros(7), np.zeros(7), 1.0, 1.0)
    elif stream == "wrench":
        m.on_wrench([0.0, np.inf, 0.0, 0.0, 0.0, 0.0], 1.0, 1.0)
    else:
        values = np.zeros(15)
        values[4] = np.nan
        m.on_tactile(values, _tactile_labels(m), 1.0, 1.0)
    assert m.estopped and m.estop_cause.level == "fault" and m.estop_cause.rule == f"{stream}.non_finite"
    assert not m.reset(1.1)[0]  # the newest reading is still non-finite


def test_non_finite_command_is_never_forwarded_and_engages_the_estop():
    m = released(watchdogs=False)
    out = m.on_command([0.1, np.nan, 0.0], XYZ, 1.0)
    assert m.estopped and m.estop_cause.rule == "command.non_finite"
    assert np.array_equal(out.command.values, np.zeros(3))  # the hold command instead


# --- latch and reset ------------------------------------------------------------------------------
def test_starts_in_estop_and_answers_commands_with_hold_until_reset():
    m = new_monitor("sawyer", watchdogs=False)
    assert m.estopped and "start-up" in m.estop_cause.describe()
    out = m.on_command([0.1, 0.0, 0.0], XYZ, 0.0)
    assert out.command.labels == XYZ and np.array_equal(out.command.values, np.zeros(3))
    assert m.reset(0.0) == (True, "released (was: e-stop engaged at start-up (reset to release))")
    assert m.on_command([0.1, 0.0, 0.0], XYZ, 0.05).command.values[0] == pytest.approx(0.1)


def test_estop_latches_until_reset_and_reset_is_refused_while_violating():
    m = released(watchdogs=False)
    m.on_command([0.1, 0.0, 0.0], XYZ, 0.0)
    out = m.on_wrench([0.0, 0.0, -45.0, 0.0, 0.0, 0.0], 1.0, 1.0)
    assert m.estopped and out.command is not None and np.array_equal(out.command.values, np.zeros(3))
    ok, why = m.reset(1.1)
    assert not ok and "wrench.force_norm" in why and "45" in why and "40" in why
    assert m.estopped
    m.on_wrench(REST, 1.2, 1.2)  # the violation is gone, the e-stop is not
    assert m.estopped
    for k in range(5):
        assert np.array_equal(m.on_command([0.1, 0.0, 0.0], XYZ, 1.3 + k).command.values, np.zeros(3))
    ok, why = m.reset(2.0)
    assert ok and "wrench.force_norm" in why
    assert not m.estopped
    # after a release the twist ramps up from the hold command (rate limit 4 m/s² × 0.05 s = 0.2 m/s)
    assert m.on_command([0.2, 0.0, 0.0], XYZ, 2.1).command.values[0] == pytest.approx(0.2)


def test_trigger_latches_and_events_are_reported_once_per_onset():
    m = released(watchdogs=False)
    m.on_command([0.0, 0.0, 0.0], XYZ, 0.0)
    out = m.trigger("operator", 1.0)
    assert m.estopped and out.command is not None and out.violations[0].rule == "manual"
    assert m.reset(1.1)[0]
    onsets = [m.on_wrench([0.0, 0.0, -25.0, 0.0, 0.0, 0.0], 2.0 + i, 2.0 + i).violations for i in range(5)]
    assert [len(o) for o in onsets] == [2, 0, 0, 0, 0]  # norm and fz contact, reported when they begin


# --- responses per control mode ------------------------------------------------------------------
def test_contact_slows_cartesian_commands_and_soft_limits_clamp():
    m = released(watchdogs=False)
    scale = m.config.command.slow_scale.value
    assert m.on_command([0.5, 0.0, 0.0], XYZ, 0.0).command.values[0] == pytest.approx(0.2)  # clamped to 0.2 m/s
    m.on_wrench([0.0, 0.0, -25.0, 0.0, 0.0, 0.0], 0.1, 0.1)  # contact level: slow down
    out = m.on_command([0.2, 0.0, 0.0], XYZ, 0.2)
    assert out.command.values[0] == pytest.approx(0.2 * scale)
    m.on_wrench(REST, 0.3, 0.3)
    assert m.on_command([0.2, 0.0, 0.0], XYZ, 0.4).command.values[0] == pytest.approx(0.2)


def test_acceleration_phase_raises_the_collision_force():
    m = released(watchdogs=False)
    names = m.spec.joint_names
    m.on_joint_state(names, HOME, np.zeros(7), np.zeros(7), 10.0, 10.0)
    m.on_joint_state(names, HOME, np.full(7, 0.5), np.zeros(7), 10.01, 10.01)  # 50 rad/s²
    assert m.accelerating
    w = [20.0, 0.0, -37.5, 0.0, 0.0, 0.0]  # ‖F‖ = 42.5 N: above 40 (nominal), below 45; each axis below its level
    m.on_wrench(w, 10.02, 10.02)
    assert not m.estopped
    m.on_joint_state(names, HOME, np.full(7, 0.5), np.zeros(7), 10.03, 10.03)  # steady: nominal again
    assert not m.accelerating
    m.on_wrench(w, 10.04, 10.04)
    assert m.estopped and m.estop_cause.rule == "wrench.force_norm"


def test_workspace_box_clamps_outward_motion_near_a_face_and_stops_outside():
    base = new_monitor("sawyer").config
    # the shipped box, with its ceiling lowered to 2.5 cm above the home tip (z = 0.02): home is
    # inside the box but within the 1 cm margin of the ceiling
    box = dataclasses.replace(base.workspace, upper=[base.workspace.upper[0], base.workspace.upper[1], 0.025])
    m = new_monitor("sawyer", config=dataclasses.replace(base, workspace=box), watchdogs=False)
    quiet(m, 0.0)
    assert m.reset(0.0)[0]
    assert m.end_effector == pytest.approx([0.65, 0.0, 0.02], abs=1e-3)
    assert any(v.rule == "workspace" and v.level == "soft" for v in m.active_violations())
    out = m.on_command([0.05, 0.0, 0.1], XYZ, 0.1).command.values
    assert out[2] == 0.0 and out[0] == pytest.approx(0.05)  # no further up; sideways is fine
    assert m.on_command([0.0, 0.0, -0.1], XYZ, 0.2).command.values[2] < 0.0  # down, away from the face
    far = HOME.copy()
    far[0] += np.pi  # the arm swung round: the tip leaves the box
    m.on_joint_state(m.spec.joint_names, far, np.zeros(7), np.zeros(7), 1.3, 1.3)
    assert m.estopped and m.estop_cause.rule == "workspace" and m.estop_cause.level == "hard"


def test_position_mode_hold_is_the_measured_position_with_coupled_j0():
    m = released("shadow_hand", watchdogs=False)
    spec = m.spec
    q = np.array([0.5 * (j.lower + j.upper) for j in spec.joints])
    q[spec.joint_names.index("rh_FFJ1")], q[spec.joint_names.index("rh_FFJ2")] = 0.3, 0.4
    m.on_joint_state(spec.joint_names, q, [], [], 1.0, 1.0)
    m.trigger("test", 1.0)
    out = m.on_command(np.full(20, 0.2), spec.actuator_names, 1.1)
    hold = dict(zip(out.command.labels, out.command.values))
    assert hold["rh_FFJ0"] == pytest.approx(0.7)  # J1 + J2
    assert hold["rh_WRJ1"] == pytest.approx(q[spec.joint_names.index("rh_WRJ1")])


def test_position_hold_keeps_the_targets_of_the_stops_onset_until_it_ends():
    """A held joint that sags (gravity, contact) is not followed: the hold's targets are the positions
    measured when the stop began, for as long as it lasts; a release or a new episode (the robot is
    put at a new start) takes them afresh."""
    m = released("shadow_hand", watchdogs=False)
    spec, names = m.spec, m.spec.actuator_names
    q = np.array([0.5 * (j.lower + j.upper) for j in spec.joints])
    wr = spec.joint_names.index("rh_WRJ1")
    m.on_joint_state(spec.joint_names, q, [], [], 1.0, 1.0)
    m.trigger("test", 1.0)
    def hold(now):  # the monitor's answer to a command while stopped, by actuator
        command = m.on_command(np.full(20, 0.2), names, now).command
        return dict(zip(command.labels, command.values))

    first = hold(1.05)
    sagged = q.copy()
    sagged[wr] -= 0.1
    m.on_joint_state(spec.joint_names, sagged, [], [], 1.1, 1.1)
    held = hold(1.15)
    assert held["rh_WRJ1"] == first["rh_WRJ1"] == pytest.approx(q[wr])  # not the sagged position
    m.new_episode()  # a stop latched into the next episode holds where that episode starts
    again = hold(1.2)
    assert again["rh_WRJ1"] == pytest.approx(sagged[wr])
    assert m.reset(1.25)[0]
    m.on_command(np.full(20, 0.2), names, 1.3)
    m.on_joint_state(spec.joint_names, q, [], [], 1.35, 1.35)
    m.trigger("again", 1.4)
    assert hold(1.45)["rh_WRJ1"] == pytest.approx(q[wr])  # the new stop's own onset


def test_position_hold_needs_measured_positions():
    m = new_monitor("shadow_hand", watchdogs=False)
    assert m.on_command(np.zeros(20), m.spec.actuator_names, 0.0).command is None


def test_position_targets_are_clamped_into_the_soft_range():
    m = released("shadow_hand", watchdogs=False)
    act = m.spec.actuators[0]
    margin = m.config.joints.position.soft_margin
    values = np.array([a.upper + 1.0 for a in m.spec.actuators])
    out = m.on_command(values, m.spec.actuator_names, 1.0)
    assert out.command.values[0] == pytest.approx(act.upper - margin)
    assert {v.rule for v in out.violations} == {"command.limit"}


def test_velocity_mode_holds_with_zeros_and_stops_pushing_into_a_joint_limit():
    m = released(watchdogs=False, control_mode="velocity")
    names = m.spec.joint_names
    q = HOME.copy()
    q[6] = m.spec.joints[6].upper - 0.01  # inside the soft margin of right_j6
    m.on_joint_state(names, q, np.zeros(7), np.zeros(7), 1.0, 1.0)
    out = m.on_command(np.full(7, 0.05), names, 1.1).command
    assert out.values[6] == 0.0 and out.values[0] == pytest.approx(0.05)
    m.trigger("test", 1.2)
    assert np.array_equal(m.on_command(np.full(7, 0.05), names, 1.3).command.values, np.zeros(7))


def test_unknown_labels_are_not_forwarded():
    m = released(watchdogs=False)
    m.on_command([0.0, 0.0, 0.0], XYZ, 0.0)
    out = m.on_command([0.1, 0.1], ["vx", "right_j0"], 0.1)
    assert out.violations[0].rule == "command.labels" and out.violations[0].response == Response.HOLD
    assert out.command.labels == XYZ and np.array_equal(out.command.values, np.zeros(3))
    assert not m.estopped


def test_a_new_episode_ramps_from_the_hold_command():
    """A simulated reset puts the robot at rest: the first command of the next episode is
    rate-limited from the hold command, not from the previous episode's last command."""
    from morl_robot.safety.monitor import build_monitor

    m = build_monitor("sawyer", None, watchdogs=False, action_labels=("vx", "vy", "vz"))
    labels = ("vx", "vy", "vz")
    assert m.reset(0.0)[0]
    for k in range(10):  # ramp up to +0.2 m/s (4 m/s² · 50 ms per command)
        last = m.on_command([0.2, 0.0, 0.0], labels, 0.05 * k).command
    assert last is not None and last.values[0] == pytest.approx(0.2)
    reversed_ = m.on_command([-0.2, 0.0, 0.0], labels, 0.5).command
    assert reversed_.values[0] == pytest.approx(0.0)  # a full reversal is clamped mid-episode
    m.new_episode()
    first = m.on_command([-0.2, 0.0, 0.0], labels, 0.5).command
    assert first.values[0] == pytest.approx(-0.2)  # from rest, -0.2 m/s is one allowed step
