"""The driver emulator's pure core and the hardware backend driving it in-process (no ROS):
FaultyLink statistics, driver-format state and commands, reset, Cartesian velocity, couplings."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hw_helpers import SAWYER_JOINTS, DriverLoop, robot_yaml

from morl_robot.errors import ConfigError
from morl_robot.robots.config import load_robot_config
from morl_robot.robots.emulation import DriverEmulatorCore, FaultyLink, LinkFaults
from morl_robot.robots.hardware import HardwareError, StaleStateError
from morl_robot.robots.spec import ControlMode

HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])  # peg_in_hole.xml


# --- FaultyLink --------------------------------------------------------------------------------
def run_link(faults: LinkFaults, n: int = 2000, period: float = 0.01, seed: int = 1) -> tuple[list, FaultyLink]:
    """Send n messages (their send times) at ``period``; return [(send time, delivery time)]."""
    link: FaultyLink[float] = FaultyLink(faults, seed)
    out = []
    now = 0.0
    for i in range(n):
        now = i * period
        link.send(now, now)
        out += [(sent, now) for sent in link.due(now)]
    t = now
    while link.pending:
        t += 0.001
        out += [(sent, t) for sent in link.due(t)]
    return out, link


def test_a_perfect_link_delivers_everything_at_once_in_order():
    out, link = run_link(LinkFaults(), n=100)
    assert [s for s, _ in out] == [i * 0.01 for i in range(100)]
    assert all(d == s for s, d in out) and link.stats.dropped == 0


def test_drop_rate_is_within_binomial_bounds():
    n, p = 2000, 0.2
    out, link = run_link(LinkFaults(drop=p), n=n)
    sigma = math.sqrt(n * p * (1 - p))
    assert abs(link.stats.dropped - n * p) < 4 * sigma
    assert len(out) == n - link.stats.dropped
    again, _ = run_link(LinkFaults(drop=p), n=n)  # seeded: the same faults
    assert again == out


def test_latency_and_jitter_delay_every_message_and_keep_the_order():
    latency, jitter = 0.02, 0.015
    out, _ = run_link(LinkFaults(latency=latency, jitter=jitter), n=1000)
    delays = np.array([d - s for s, d in out])
    assert delays.min() >= latency - 1e-9
    assert delays.max() <= latency + jitter + 0.01 + 1e-9  # + the 10 ms release granularity
    assert delays.mean() == pytest.approx(latency + jitter / 2 + 0.005, abs=0.003)
    sent = [s for s, _ in out]
    assert sent == sorted(sent)  # jitter alone never reorders


def test_reorder_holds_messages_back_so_later_ones_overtake():
    out, link = run_link(LinkFaults(reorder=0.1, reorder_delay=0.035), n=1000)
    sent = [s for s, _ in out]
    inversions = sum(1 for a, b in itertools.pairwise(sent) if b < a)
    assert link.stats.held_back == pytest.approx(100, abs=4 * math.sqrt(1000 * 0.1 * 0.9))
    assert inversions >= 0.8 * link.stats.held_back and len(out) == 1000
    out0, _ = run_link(LinkFaults(reorder=0.0), n=1000)
    assert [s for s, _ in out0] == sorted(s for s, _ in out0)


@pytest.mark.parametrize("faults, words", [(LinkFaults(drop=1.5), "probability"), (LinkFaults(latency=-1), ">= 0")])
def test_bad_link_faults_are_config_errors(faults, words):
    with pytest.raises(ConfigError, match=words):
        FaultyLink(faults)


# --- the emulator in driver format ------------------------------------------------------------
def test_emulator_publishes_the_drivers_names_order_and_units(tmp_path):
    order = ["right_j3", "head_pan", "right_j0", "right_j6", "right_j1", "right_j5", "right_j2", "right_j4"]
    path = robot_yaml(tmp_path, "sawyer", {"units": {"position": "deg"}, "state": {"joints": order}})
    emu = DriverEmulatorCore(load_robot_config(str(path)), period=0.01)
    js = emu.joint_state()
    assert js.names == tuple(order)
    expected = [0.0 if n == "head_pan" else math.degrees(HOME[SAWYER_JOINTS.index(n)]) for n in order]
    np.testing.assert_allclose(js.position, expected, atol=0.5)  # deg; servo sag < 0.5 deg
    w = emu.wrench()
    assert w is not None and w.frame == "right_hand_ft" and w.force[2] < -1.0  # the tool's weight


def test_emulator_rejects_malformed_driver_commands():
    emu = DriverEmulatorCore(load_robot_config("sawyer"), period=0.01)
    emu.on_forward([0.0] * 6)
    emu.on_forward([0.0] * 6 + [float("nan")])
    assert emu.stats.rejected == 2 and emu.stats.commands == 0
    hand = DriverEmulatorCore(load_robot_config("shadow_hand"), period=0.01)
    hand.on_trajectory(["rh_FFJ0"], [1.0], 0.1)
    assert "not this controller's" in hand.stats.last_error


def test_a_partial_trajectory_keeps_the_other_joints_and_ramps_over_time_from_start():
    # the bare hand (the default touch scene has a block under the fingers)
    hand = DriverEmulatorCore(load_robot_config("shadow_hand"), scene="shadow_hand/right_hand.xml", period=0.01)
    i_ff3 = hand.robot.spec.actuator_names.index("rh_FFJ3")
    i_ff0 = hand.robot.spec.actuator_names.index("rh_FFJ0")
    hand.on_trajectory(["rh_FFJ3", "rh_FFJ1", "rh_FFJ2"], [0.8, 0.3, 0.3], 0.2)
    hand.step()
    assert 0.0 < hand._target[i_ff3] < 0.8  # part way along the ramp
    for _ in range(60):
        hand.step()
    assert hand._target[i_ff3] == pytest.approx(0.8) and hand._target[i_ff0] == pytest.approx(0.6)
    q = dict(zip(hand.robot.spec.joint_names, hand.robot.read_state().position))
    assert q["rh_FFJ3"] == pytest.approx(0.8, abs=0.05)
    assert q["rh_FFJ1"] + q["rh_FFJ2"] == pytest.approx(0.6, abs=0.05)


# --- HardwareRobot driving the emulated driver ---------------------------------------------------
def test_reset_drives_to_the_start_configuration_at_bounded_speed(sawyer_loop: DriverLoop):
    loop = sawyer_loop
    robot = loop.robot
    start = HOME.copy()
    start[0] += 0.3
    start[3] -= 0.2
    t0 = loop.t
    state = robot.reset(joint_positions=dict(zip(SAWYER_JOINTS, start)))
    assert np.abs(state.position - start).max() <= robot.hardware.reset.tolerance
    # bounded joint speed: 0.3 rad at 25 % of 1.74 rad/s takes at least 0.69 s
    assert loop.t - t0 >= 0.3 / (0.25 * 1.74)
    steps = np.diff([c.values for c in loop.sent if c.mode == "position"], axis=0)
    vmax = 0.25 * np.array([j.velocity_limit for j in robot.spec.joints]) * robot.control_period
    assert np.all(np.abs(steps) <= vmax + 1e-12)
    home = robot.reset()  # no arguments: hardware.home
    np.testing.assert_allclose(home.position, HOME, atol=robot.hardware.reset.tolerance)


def test_reset_gives_up_with_a_clear_error_when_the_robot_does_not_arrive(tmp_path):
    path = robot_yaml(tmp_path, "sawyer", {"reset": {"timeout": 1.0, "retract": None}})  # the joint phase
    loop = DriverLoop(str(path))
    loop.sink = lambda cmd: None  # the controller ignores us (e.g. not active)
    loop.robot.connect(loop.sink)
    with pytest.raises(HardwareError, match=r"reset did not reach its start configuration in 1.0 s: 'right_j0' is \+0.2"):
        loop.robot.reset(joint_positions={"right_j0": HOME[0] + 0.2})


def test_reset_refuses_scene_objects_and_effort_controllers(tmp_path, hand_loop: DriverLoop):
    with pytest.raises(HardwareError, match="scene objects placed \\(dial\\).*hardware.reset.scene: ignore"):
        hand_loop.robot.reset(scene={"dial": 0.3})
    path = robot_yaml(tmp_path, "sawyer", {"command": {"mode": "effort"}})
    loop = DriverLoop(str(path))
    assert loop.robot.spec.control_modes == (ControlMode.EFFORT,)
    with pytest.raises(HardwareError, match="reset needs a position or velocity controller"):
        loop.robot.reset()


def test_cartesian_velocity_on_a_position_controller_moves_the_peg(sawyer_loop: DriverLoop):
    loop = sawyer_loop
    robot = loop.robot
    robot.reset()
    robot.set_control_mode("cartesian_velocity")
    p0 = robot.read_state().ee_pose[:3]
    for _ in range(20):  # 1 s at 0.05 m/s up
        robot.send_command(np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0]))
        loop.sleep(robot.control_period)
    dp = robot.read_state().ee_pose[:3] - p0
    assert dp[2] == pytest.approx(0.05, abs=0.005) and np.abs(dp[:2]).max() < 0.002
    # the integrated targets never lead the measured joints by more than max_tracking_error
    q = robot.read_state().position
    lead = np.abs(loop.sent[-1].values - q).max()
    assert lead <= robot.config.cartesian.max_tracking_error + 1e-9


def test_cartesian_velocity_on_a_velocity_controller(tmp_path):
    path = robot_yaml(tmp_path, "sawyer", {"command": {"mode": "velocity"}})
    loop = DriverLoop(str(path))
    robot = loop.robot
    robot.reset()
    robot.set_control_mode("cartesian_velocity")
    p0 = robot.read_state().ee_pose[:3]
    for _ in range(20):
        robot.send_command(np.array([0.04, 0.0, 0.0, 0.0, 0.0, 0.0]))
        loop.sleep(robot.control_period)
    assert loop.sent[-1].mode == "velocity"
    dp = robot.read_state().ee_pose[:3] - p0
    assert dp[0] == pytest.approx(0.04, abs=0.01)


def test_shadow_hand_position_commands_reach_coupled_joints(hand_loop: DriverLoop):
    loop = hand_loop
    hand = loop.robot
    hand.reset()
    cmd = hand.hold_command()
    names = hand.spec.actuator_names
    cmd[names.index("rh_MFJ0")] = 1.0
    cmd[names.index("rh_WRJ1")] = 0.3
    for _ in range(30):
        hand.send_command(cmd)
        loop.sleep(hand.control_period)
    q = dict(zip(hand.spec.joint_names, hand.read_state().position))
    assert q["rh_MFJ1"] == pytest.approx(0.5, abs=0.05) and q["rh_MFJ2"] == pytest.approx(0.5, abs=0.05)
    assert q["rh_WRJ1"] == pytest.approx(0.3, abs=0.05)
    assert hand.read_state().tactile.shape == (15,)


def test_the_loop_goes_stale_when_the_driver_stops(sawyer_loop: DriverLoop):
    loop = sawyer_loop
    loop.deliver = False
    loop.sleep(0.1)
    loop.robot.read_state()  # exactly the deadline since the last message
    loop.sleep(0.01)
    with pytest.raises(StaleStateError):
        loop.robot.read_state()
    loop.deliver = True
    loop.sleep(0.01)
    loop.robot.read_state()


def test_a_short_gap_mid_reset_pauses_commanding_and_a_long_one_fails(sawyer_loop: DriverLoop):
    loop = sawyer_loop
    robot = loop.robot
    plain_sleep = loop.sleep
    calls = {"n": 0}
    gap: dict[str, float] = {"from": 5, "to": 5 + 6}  # sleeps (control periods) without driver messages
    sent_in_gap: list[int] = []

    def sleep_with_gap(dt: float) -> None:
        calls["n"] += 1
        loop.deliver = not gap["from"] <= calls["n"] < gap["to"]
        if not loop.deliver:
            sent_in_gap.append(len(loop.sent))
        plain_sleep(dt)

    robot._sleep = sleep_with_gap
    target = HOME.copy()
    target[1] += 0.25
    state = robot.reset(joint_positions=dict(zip(SAWYER_JOINTS, target)))  # a 0.3 s gap < stale_grace
    assert np.abs(state.position - target).max() <= robot.hardware.reset.tolerance
    stale_sends = sent_in_gap[3:]  # the state goes stale 0.1 s into the gap: no commands after that
    assert stale_sends and len(set(stale_sends)) == 1
    calls["n"], gap["from"], gap["to"] = 0, 3, 10_000  # the driver dies mid-reset
    with pytest.raises(StaleStateError):
        robot.reset(joint_positions=dict(zip(SAWYER_JOINTS, HOME)))
