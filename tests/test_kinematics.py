"""Resolved-rate Cartesian control: realises the twist when unconstrained, never exceeds velocity
limits, never drives a joint into its limit band (property tests)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from morl_robot.robots.kinematics import damped_least_squares, quat_error, resolved_rate

finite = st.floats(-1.0, 1.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(jac=arrays(np.float64, (6, 7), elements=finite), twist=arrays(np.float64, (6,), elements=st.floats(-0.2, 0.2)))
def test_dls_matches_closed_form(jac, twist):
    expected = jac.T @ np.linalg.solve(jac @ jac.T + 0.05**2 * np.eye(6), twist)
    assert np.allclose(damped_least_squares(jac, twist, 0.05), expected, atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(
    jac=arrays(np.float64, (6, 7), elements=finite),
    twist=arrays(np.float64, (6,), elements=st.floats(-1.0, 1.0)),
    q=arrays(np.float64, (7,), elements=st.floats(-3.0, 3.0)),
)
def test_limits_respected(jac, twist, q):
    lower, upper = -np.full(7, 2.5), np.full(7, 2.5)
    vlim = np.array([1.74, 1.328, 1.957, 1.957, 3.485, 3.485, 4.545])
    dt, margin = 0.05, 0.05
    qdot = resolved_rate(jac, twist, q, lower, upper, vlim, dt, 0.05, margin)
    assert np.all(np.abs(qdot) <= vlim + 1e-9)
    nxt = q + qdot * dt
    inside = (q >= lower + margin) & (q <= upper - margin)
    assert np.all(nxt[inside] <= upper[inside] - margin + 1e-9)
    assert np.all(nxt[inside] >= lower[inside] + margin - 1e-9)
    # outside the band a joint may only move back toward the middle
    assert np.all(qdot[q > upper - margin] <= 1e-12) and np.all(qdot[q < lower + margin] >= -1e-12)


def test_unconstrained_twist_is_realised():
    rng = np.random.default_rng(1)
    jac = rng.normal(size=(6, 7))
    twist = np.array([0.05, -0.02, 0.03, 0.0, 0.0, 0.01])
    qdot = resolved_rate(jac, twist, np.zeros(7), -np.full(7, 3.0), np.full(7, 3.0), np.full(7, 10.0), 0.05, 1e-4, 0.05)
    assert np.allclose(jac @ qdot, twist, atol=1e-5)


def test_quat_error_small_rotation():
    angle = 0.1
    target = np.array([np.cos(angle / 2), 0, 0, np.sin(angle / 2)])  # +0.1 rad about z
    assert np.allclose(quat_error(target, np.array([1.0, 0, 0, 0])), [0, 0, angle], atol=1e-12)
    assert np.allclose(quat_error(target, target), 0)


def test_both_backends_run_the_one_cartesian_controller():
    """The simulated and the hardware Sawyer turn the same twist at the same joints into the same
    position targets: one CartesianController (the hardware one on a kinematics-only model), its
    resolved-rate step once per command and its compliant tick at the physics / driver rate."""
    from morl_robot.robots.config import load_robot_config
    from morl_robot.robots.hardware import load_hardware_robot
    from morl_robot.robots.mujoco_robot import MujocoRobot

    sim = MujocoRobot(load_robot_config("sawyer"))
    sim.set_control_mode("cartesian_velocity")
    state = sim.reset(settle=False)
    sent = []
    now = [10.0]
    hw = load_hardware_robot("sawyer", control_period=sim.control_period, sink=sent.append, clock=lambda: now[0])
    hw.set_control_mode("cartesian_velocity")
    names, q, qd, tau = hw.codec.encode_state(state.position, state.velocity, state.effort)
    hw.on_joint_state(names, q, qd, tau, 10.0)
    hw.on_wrench(np.zeros(3), np.zeros(3), 10.0)
    twist = np.array([0.1, -0.05, 0.2, 0.0, 0.3, -0.2])
    sim._apply(twist)
    hw.send_command(twist)
    # one driver tick 10 ms later (the next joint state, same joints, no contact) ...
    now[0] = 10.01
    hw.on_joint_state(names, q, qd, tau, 10.01)
    target = hw.codec.decode_command(sent[-1].values, "position")
    # ... is the simulation's tick of the same length from the same targets
    expected = sim._cartesian.tick(sim._target, state.position, np.zeros(3), 0.01)
    np.testing.assert_allclose(target, expected, atol=1e-9)
    lead = load_robot_config("sawyer").cartesian.max_tracking_error
    assert np.abs(target - state.position).max() <= lead + 1e-12
    assert np.abs(target - state.position).max() > 1e-4  # it moved
