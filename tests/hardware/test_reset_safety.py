"""A hardware reset cannot push (issue 34): against the emulated Sawyer driver (MuJoCo peg-in-hole
scene, 100 Hz joint states), a reset with the peg in its hole first backs the peg out along its
axis and then moves the joints home, never above the reset's force limit; without the retract the
joint move jams the peg and the force guard stops it within a second with an error naming the
force (before: it pushed on for the 20 s timeout at 100-245 N); an abort from ``reset_progress``
(the robot node's latched e-stop) stops the motion too."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hw_helpers import DriverLoop, robot_yaml

from morl_robot.robots.hardware import HardwareError
from morl_robot.robots.spec import RobotState

DOWN = np.array([0.0, 0.0, -0.04, 0.0, 0.0, 0.0])  # m/s: straight down into the hole


def _inserted(source: str) -> tuple[DriverLoop, np.ndarray]:
    """A loop whose peg sits in the hole (tip below the hole's top at z = -0.10), and the wrist
    reading at rest before the insertion."""
    loop = DriverLoop(source)
    robot = loop.robot
    robot.reset()
    robot.set_control_mode("cartesian_velocity")
    rest = np.array(loop.emu.wrench().force)
    for _ in range(240):
        robot.send_command(DOWN)
        loop.sleep(0.05)
        if robot.read_state().ee_pose[2] < -0.14:
            break
    assert robot.read_state().ee_pose[2] < -0.13, "the peg did not go into the hole"
    return loop, rest


def _watch(loop: DriverLoop, rest: np.ndarray) -> list[tuple[float, float, float]]:
    """(time, tip height, wrist force change) at each reset period."""
    trace: list[tuple[float, float, float]] = []

    def progress(state: RobotState) -> None:
        trace.append((loop.t, float(state.ee_pose[2]), float(np.linalg.norm(np.array(loop.emu.wrench().force) - rest))))
    loop.robot.reset_progress = progress
    return trace


def test_a_reset_with_the_peg_in_its_hole_retracts_first_and_stays_below_the_force_limit() -> None:
    loop, rest = _inserted("sawyer")
    robot = loop.robot
    q_in = robot.read_state().position.copy()
    z_in = float(robot.read_state().ee_pose[2])
    trace = _watch(loop, rest)
    robot.reset()
    limit = robot.hardware.reset.force_limit
    assert max(f for _, _, f in trace) < limit
    assert robot.reset_peak_force < limit
    # the retract comes first: the tip is out of the hole (above z = -0.10) before any joint is far off
    out = next(i for i, (_, z, _) in enumerate(trace) if z > -0.095)
    assert out > 0 and z_in < -0.13
    assert robot.reset_seconds < robot.hardware.reset.timeout
    home = np.array([robot.home[n] for n in robot.spec.joint_names])
    assert np.abs(robot.read_state().position - home).max() < 0.02
    assert np.abs(q_in - home).max() > 0.05  # it did move


def test_a_blocked_reset_stops_within_a_second_naming_the_force(tmp_path: Path) -> None:
    """Without the retract (the behaviour before issue 34) the joint move drags the peg sideways in
    its hole: the guard holds and raises at once instead of pushing on for the timeout."""
    source = str(robot_yaml(tmp_path, "sawyer", {"reset": {"retract": None}}))
    loop, rest = _inserted(source)
    robot = loop.robot
    trace = _watch(loop, rest)
    t0 = loop.t
    with pytest.raises(HardwareError, match=r"reset stopped, .*(N > hardware.reset.force_limit 30.0 N|N·m > 0.9).*"
                                            r"take the peg out by hand / clear the obstacle, then reset"):
        robot.reset()
    assert loop.t - t0 < 1.0
    last = loop.sent[-1]
    assert last.mode == "position"  # the hold at the measured joints
    loop.sleep(0.5)  # it holds: the force does not keep growing
    assert float(np.linalg.norm(np.array(loop.emu.wrench().force) - rest)) < 2 * max(f for _, _, f in trace) + 5.0


def test_an_abort_from_reset_progress_stops_the_motion(sawyer_loop: DriverLoop) -> None:
    """The robot node's hook raises while its e-stop is latched: the reset stops and holds."""
    robot = sawyer_loop.robot
    calls = []

    def latched(state: RobotState) -> None:
        calls.append(state)
        if len(calls) > 3:
            raise HardwareError("sawyer: reset stopped: the safety monitor's e-stop is latched")
    robot.reset_progress = latched
    with pytest.raises(HardwareError, match="e-stop is latched"):
        robot.reset()
    assert len(calls) == 4
    sent = len(sawyer_loop.sent)
    sawyer_loop.sleep(0.5)
    assert len(sawyer_loop.sent) == sent  # nothing more commanded


def test_a_robot_without_a_retract_resets_as_before(hand_loop: DriverLoop) -> None:
    robot = hand_loop.robot
    assert robot.hardware.reset.retract is None
    robot.reset()
    home = np.array([robot.home.get(n, 0.0) for n in robot.spec.joint_names])
    assert robot.reset_seconds > 0 and robot.reset_peak_force == 0.0
    assert np.abs(robot.read_state().position - home).max() < 0.05


def test_a_retract_that_cannot_move_fails_within_the_reset_timeout(tmp_path: Path) -> None:
    loop = DriverLoop(str(robot_yaml(tmp_path, "sawyer", {"reset": {"timeout": 1.0}})))
    loop.sink = lambda cmd: None  # the controller ignores us (e.g. not active)
    loop.robot.connect(loop.sink)
    with pytest.raises(HardwareError, match=r"retract moved the tool 0.000 m of 0.08 m .* in 1.0 s"):
        loop.robot.reset(joint_positions={"right_j0": loop.robot.home["right_j0"] + 0.2})


def test_a_late_driver_message_before_the_reset_is_waited_out(sawyer_loop: DriverLoop) -> None:
    """A stale gap shorter than ``reset.stale_grace`` when a reset begins (a loaded host at the
    robot node's configure, CI 2026-11-26) is waited out as one during the motion is; a longer one
    still fails, naming the streams."""
    from morl_robot.robots.hardware import StaleStateError

    robot = sawyer_loop.robot
    sawyer_loop.t += 0.3  # the newest joint state and wrench are 0.3 s old (deadline 0.1 s)
    with pytest.raises(StaleStateError):
        robot.read_state()
    robot.reset()  # waits for the next driver messages instead of raising
    assert not robot.stale_streams()
    sawyer_loop.deliver = False  # the driver stops for good: fails after the grace, not before
    sawyer_loop.t += 0.3
    t0 = sawyer_loop.t
    with pytest.raises(StaleStateError, match="joint state"):
        robot.reset()
    assert sawyer_loop.t - t0 >= robot.hardware.reset.stale_grace
