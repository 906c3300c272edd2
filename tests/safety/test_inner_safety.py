"""InnerSafety (the hard layer in the robot's loop): it holds a command whose execution a stopping
rule forbids, forwards where the monitor would only warn or clamp, and agrees with the monitor on
every reading (both read the same compiled rules)."""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from safety_helpers import new_monitor

from morl_robot.robots.spec import ControlMode
from morl_robot.safety.compiled import load_rules
from morl_robot.safety.inner import FORWARD, InnerSafety
from morl_robot.safety.rules import Response

HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])
REST = np.array([0.0, 0.0, -3.4, 0.0, 0.0, 0.0])  # the tool's weight
Z7 = np.zeros(7)
XYZ = ("vx", "vy", "vz")


@cache
def _rules(robot: str):
    return load_rules(robot)


def inner(robot: str = "sawyer") -> InnerSafety:
    return InnerSafety(_rules(robot))


def sawyer_check(layer, q=HOME, qd=Z7, tau=Z7, wrench=REST, stamp=1.0, command=(0.0, 0.0, 0.0), labels=XYZ):
    return layer.check(np.asarray(q, float), np.asarray(qd, float), np.asarray(tau, float),
                       np.asarray(wrench, float), None, stamp, np.asarray(command, float), labels,
                       ControlMode.CARTESIAN_VELOCITY)


def test_quiet_readings_and_a_finite_command_are_forwarded():
    assert sawyer_check(inner()) is FORWARD


@pytest.mark.parametrize("force, held", [(25.0, False), (39.9, False), (40.0, True), (80.0, True)])
def test_the_collision_force_holds_and_the_contact_force_does_not(force, held):
    """Contact (20 N: the monitor slows the command) forwards; collision (40 N: e-stop) holds."""
    d = sawyer_check(inner(), wrench=[0.0, 0.0, -force, 0.0, 0.0, 0.0])
    assert d.hold is held
    if held:
        assert {v.rule for v in d.violations} >= {"wrench.force_norm", "wrench.force_axis"}
        assert all(v.level == "collision" for v in d.violations)


def test_the_acceleration_phase_raises_the_force_level_as_in_the_monitor():
    """‖F‖ = 42 N stops a robot at rest (nominal 40 N) but not one accelerating above 5 rad/s²
    (45 N); no axis is at its own level (30, 30, 40 N)."""
    layer = inner()
    w = [0.0, 24.0, -34.5, 0.0, 0.0, 0.0]
    assert sawyer_check(layer, qd=Z7, stamp=1.0).hold is False
    qd = np.array([0.5, 0, 0, 0, 0, 0, 0])  # 0.5 rad/s in 0.05 s: 10 rad/s²
    assert sawyer_check(layer, qd=qd, wrench=w, stamp=1.05).hold is False
    assert layer.accelerating
    assert sawyer_check(layer, qd=qd, wrench=w, stamp=1.10).hold is True  # steady again: nominal level


def test_a_joint_beyond_its_hard_range_holds_and_one_in_the_soft_margin_does_not():
    rules = _rules("sawyer")
    upper = rules.spec.joints[3].upper
    q = HOME.copy()
    q[3] = upper - 0.02  # inside the 0.05 rad soft margin: the monitor clamps commands
    assert sawyer_check(inner(), q=q).hold is False
    q[3] = upper + 0.011  # past the 0.01 rad hard tolerance: the monitor e-stops
    d = sawyer_check(inner(), q=q)
    assert d.hold and [(v.rule, v.key, v.level) for v in d.violations] == [("joints.position", "right_j3", "hard")]


@pytest.mark.parametrize("what", ["command", "wrench", "position"])
def test_non_finite_values_hold(what):
    kw = {"command": [0.0, np.nan, 0.0]} if what == "command" else \
        {"wrench": [np.inf, 0, 0, 0, 0, 0]} if what == "wrench" else {"q": np.where(np.arange(7) == 2, np.nan, HOME)}
    d = sawyer_check(inner(), **kw)
    assert d.hold
    assert any(v.level == "fault" and v.rule.startswith({"command": "command", "wrench": "wrench",
                                                         "position": "joint_states"}[what]) for v in d.violations)


def _hand_readings(rules):
    q = np.array([0.5 * (j.lower + j.upper) for j in rules.spec.joints])
    return q, np.zeros(len(q)), np.zeros(len(q)), np.zeros(len(rules.tactile_labels))


def test_tactile_maxima_hold_the_hand():
    rules = _rules("shadow_hand")
    layer = InnerSafety(rules)
    q, qd, tau, touch = _hand_readings(rules)
    assert layer.check(q, qd, tau, None, touch, 1.0) is FORWARD
    touch[4] = 30.0  # contact level (warn)
    assert layer.check(q, qd, tau, None, touch, 1.0).hold is False
    touch[4] = 60.0  # collision maximum (e-stop)
    d = layer.check(q, qd, tau, None, touch, 1.0)
    assert d.hold and d.violations[0].rule == "tactile" and d.violations[0].key == rules.tactile_labels[4]


def test_a_position_command_outside_the_hard_range_is_held():
    """The monitor clamps targets into the soft range; one beyond the hard range bypassed it."""
    rules = _rules("shadow_hand")
    layer = InnerSafety(rules)
    q, qd, tau, touch = _hand_readings(rules)
    names = rules.spec.actuator_names
    mid = np.array([0.5 * (a.lower + a.upper) for a in rules.spec.actuators])
    assert layer.check(q, qd, tau, None, touch, 1.0, mid, names, ControlMode.POSITION) is FORWARD
    bad = mid.copy()
    bad[2] = rules.spec.actuators[2].upper + 0.5
    d = layer.check(q, qd, tau, None, touch, 1.0, bad, names, ControlMode.POSITION)
    assert d.hold and [(v.rule, v.key) for v in d.violations] == [("command.hard_range", names[2])]
    # the same numbers read as velocities are not position targets
    assert layer.check(q, qd, tau, None, touch, 1.0, bad, names, ControlMode.VELOCITY) is FORWARD


def test_the_inner_layer_holds_exactly_where_the_monitor_stops():
    """Random readings through both layers: the inner layer holds iff a reading rule of the monitor
    (workspace aside: the inner layer has no kinematics) is at a hold or e-stop level."""
    rng = np.random.default_rng(0)
    rules = _rules("sawyer")
    lo = np.array([j.lower for j in rules.spec.joints])
    hi = np.array([j.upper for j in rules.spec.joints])
    vmax = np.array([j.velocity_limit for j in rules.spec.joints])
    m, layer = new_monitor("sawyer", watchdogs=False), inner()
    names = m.spec.joint_names
    holds = 0
    for k in range(400):
        t = 1.0 + 0.05 * k
        q = np.where(rng.random(7) < 0.05, rng.uniform(lo - 0.05, hi + 0.05), HOME)
        qd = rng.normal(0.0, 0.5, 7) * vmax * (rng.random() < 0.3)
        w = np.concatenate([rng.normal(0, 20.0, 3), rng.normal(0, 2.0, 3)])
        m.on_joint_state(names, q, qd, Z7, t, t)
        m.on_wrench(w, t, t)
        stops = [v for v in m.active_violations() if v.response >= Response.HOLD and v.rule != "workspace"]
        d = sawyer_check(layer, q=q, qd=qd, wrench=w, stamp=t)
        assert d.hold is bool(stops), (k, stops, d.violations)
        assert {v.ident for v in d.violations} == {v.ident for v in stops}
        holds += d.hold
    assert 20 < holds < 380  # both outcomes were exercised
