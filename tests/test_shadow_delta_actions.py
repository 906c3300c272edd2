"""The Shadow Hand's relative action mode (``action_mode: delta``): the environment moves each motor's
target from its measured position, the policy contract declares it and refuses to swap it with an
absolute policy, the safety monitor checks a relative command as the absolute targets it stands for,
and the robot node's TaskRunner executes the wire values as training did."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.envs.task_runner import TaskRunner
from morl_robot.errors import ConfigError
from morl_robot.learning.config import MPOConfig
from morl_robot.robots.spec import delta_actuator, delta_label
from morl_robot.safety.compiled import load_rules
from morl_robot.safety.monitor import SafetyMonitor
from morl_robot.safety.rules import Response
from morl_robot.serving.contract import (
    ContractError,
    PolicyContract,
    contract_for_task,
    replace,
)

DELTA = {"action_mode": "delta"}


@pytest.fixture(scope="module")
def env():
    e = MORobotEnv("shadow_touch", overrides=DELTA)
    yield e
    e.close()


def motor_positions(env):
    return env.robot.spec.actuator_positions(env.state.position)


def test_delta_actions_are_labelled_bounded_and_move_targets_from_the_measured_positions(env):
    env.reset(seed=3)
    spec, task = env.robot.spec, env.task
    assert env.action_labels == tuple(delta_label(a) for a in spec.actuator_names)
    assert all(delta_actuator(lab) == a for lab, a in zip(env.action_labels, spec.actuator_names))
    lo, hi = task.action_bounds(env.robot)
    assert np.allclose(hi, 0.03) and np.allclose(lo, -0.03)  # ±max_delta rad (task config default)
    q = motor_positions(env)
    lo_m, hi_m = spec.command_bounds(spec.default_control_mode)
    a = np.linspace(-1.0, 1.0, 20)
    target = task.command(a, env.robot, env.state)
    assert np.allclose(target, np.clip(q + 0.03 * a, lo_m, hi_m))
    assert np.allclose(task.command(np.zeros(20), env.robot, env.state), np.clip(q, lo_m, hi_m))
    # a coupled J0 motor's position is J1 + J2
    names = spec.joint_names
    i0 = spec.actuator_names.index("rh_FFJ0")
    assert q[i0] == pytest.approx(env.state.position[names.index("rh_FFJ1")] + env.state.position[names.index("rh_FFJ2")])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=20, max_size=20), st.sampled_from(["absolute", "delta"]))
def test_action_for_targets_inverts_command_in_both_modes(action, mode):
    e = _envs[mode]
    a = np.asarray(action)
    target = e.task.command(a, e.robot, e.state)
    inside = (target > e.task._lo + 1e-9) & (target < e.task._hi - 1e-9)  # not clipped at a motor limit
    back = e.task.action_for_targets(target, motor_positions(e))
    assert np.allclose(back[inside], a[inside], atol=1e-9)


_envs: dict[str, MORobotEnv] = {}


@pytest.fixture(scope="module", autouse=True)
def _both_modes():
    for mode in ("absolute", "delta"):
        _envs[mode] = MORobotEnv("shadow_touch", overrides={"action_mode": mode})
        _envs[mode].reset(seed=1)
    yield
    for e in _envs.values():
        e.close()
    _envs.clear()


def test_zero_delta_holds_the_hand_where_it_is(env):
    """a = 0 re-targets every motor at its measured position each step: the hand stays near its
    start (it yields slowly to its own weight: the target follows the sag)."""
    env.reset(seed=0)
    q0 = motor_positions(env)
    for _ in range(10):
        env.step(np.zeros(20))
    assert np.abs(motor_positions(env) - q0).max() < 0.1


@pytest.mark.parametrize("key, value, words", [("action_mode", "relative", "action_mode"),
                                               ("max_delta", 0.0, "max_delta")])
def test_bad_action_settings_name_the_key(key, value, words):
    with pytest.raises(ConfigError, match=words):
        MORobotEnv("shadow_touch", overrides={key: value})


def test_the_contract_declares_delta_actions_and_refuses_to_swap_modes(env):
    delta = contract_for_task(env.task, env.robot, MPOConfig())
    assert delta.action_mode == "delta" and delta.action_high == [0.03] * 20 and set(delta.action_units) == {"rad"}
    md = delta.to_metadata()
    assert md["action_mode"] == '"delta"' and PolicyContract.from_metadata(md) == delta
    assert delta.task_overrides() == {"action_mode": "delta", "max_delta": 0.03}
    absolute = contract_for_task(_envs["absolute"].task, _envs["absolute"].robot, MPOConfig())
    assert "action_mode" not in absolute.to_metadata()  # absolute models keep the keys they had
    assert absolute.task_overrides() == {}
    with pytest.raises(ContractError, match="action_mode"):
        absolute.check_compatible(delta)
    with pytest.raises(ContractError, match="every action label must be '<actuator>/delta'"):
        replace(absolute, action_mode="delta")
    with pytest.raises(ContractError, match="set action_mode 'delta'"):
        replace(delta, action_mode="absolute")


def _released_monitor(env) -> SafetyMonitor:
    m = SafetyMonitor(load_rules("shadow_hand"), None, watchdogs=False, now=env.state.stamp,
                      action_labels=env.action_labels)
    _observe(m, env)
    ok, why = m.reset(env.state.stamp)
    assert ok, why
    return m


def _observe(m, env):
    s, spec = env.state, env.robot.spec
    m.on_joint_state(spec.joint_names, s.position, s.velocity, s.effort, s.stamp, s.stamp)
    m.on_tactile(s.tactile, spec.sensor("tactile").labels, s.stamp, s.stamp)


def test_the_monitor_checks_a_delta_command_as_the_targets_it_stands_for(env):
    env.reset(seed=2)
    m = _released_monitor(env)
    spec = env.robot.spec
    q = motor_positions(env)
    small = np.full(20, 0.02)
    out = m.on_command(small, env.action_labels, env.state.stamp, 0.05).command
    assert out.labels == env.action_labels and np.allclose(out.values, small)  # forwarded, still relative
    # a change that would take a motor past its range is clamped as a target would be (soft range)
    i = spec.actuator_names.index("rh_FFJ3")
    lower = spec.actuators[i].lower
    big = np.zeros(20)
    big[i] = (lower - q[i]) - 0.05
    out = m.on_command(big, env.action_labels, env.state.stamp, 0.05).command
    assert out.labels == env.action_labels
    assert q[i] + out.values[i] == pytest.approx(lower + 0.02)  # the 0.02 rad soft margin of shadow_hand.yaml
    assert m.counters["clamped"] >= 1


def test_a_delta_command_before_the_first_joint_states_is_held_not_estopped(env):
    """In a graph the policy's first command can reach the monitor before its first joint_states:
    there is no position to add the change to, so it is held (nothing forwarded, one onset
    reported), not taken for a non-finite command and latched; once positions arrive the same
    command goes through."""
    env.reset(seed=2)
    m = SafetyMonitor(load_rules("shadow_hand"), None, watchdogs=False, now=env.state.stamp,
                      action_labels=env.action_labels)
    ok, why = m.reset(env.state.stamp)
    assert ok, why
    small = np.full(20, 0.02)
    out = m.on_command(small, env.action_labels, env.state.stamp, 0.05)
    assert out.command is None and not m.estopped
    (v,) = out.violations
    assert v.rule == "command.unmeasured" and v.response == Response.HOLD and v.key == "rh_WRJ2"
    assert m.on_command(small, env.action_labels, env.state.stamp, 0.05).violations == []  # one onset
    _observe(m, env)
    out = m.on_command(small, env.action_labels, env.state.stamp, 0.05)
    assert out.command is not None and np.allclose(out.command.values, small) and not m.estopped
    # a non-finite change is still a fault, measured positions or not
    m2 = SafetyMonitor(load_rules("shadow_hand"), None, watchdogs=False, now=env.state.stamp,
                       action_labels=env.action_labels)
    assert m2.reset(env.state.stamp)[0]
    bad = small.copy()
    bad[3] = np.nan
    m2.on_command(bad, env.action_labels, env.state.stamp, 0.05)
    assert m2.estopped


def test_a_delta_command_from_the_wire_runs_the_episode_as_in_training(env):
    """policy (robot units) → safety monitor → TaskRunner: the robot's targets are the measured
    positions plus the changes, and the task's episode clock advances."""
    runner = TaskRunner(env.robot, env, seed=5)
    rec = runner.reset()
    m = _released_monitor(env)
    change = np.full(20, 0.024)
    q = motor_positions(env)
    out = m.on_command(change, env.action_labels, env.state.stamp, 0.05).command
    assert runner.kind_of(out.labels) == "action"
    assert np.allclose(out.values, change)  # 0.024 rad up keeps every motor inside its soft range here
    a = runner.normalised_action(out.values)
    assert np.allclose(a, 0.8)
    assert np.allclose(env.task.command(a, env.robot, env.state), np.clip(q + change, env.task._lo, env.task._hi))
    rec = runner.step(out.values, out.labels)
    assert rec.step == 1 and rec.reward is not None


def test_the_monitors_hold_runs_a_held_delta_episode_on_to_its_time_limit(env):
    """Under a latched e-stop the monitor answers a relative command with its hold in the actuators'
    absolute labels (a full command).  ``TaskRunner.step(hold=True)`` executes it as the task action
    that commands those targets, so the held episode's clock runs on to its time limit with the hand
    kept where it was.  Without ``hold`` a full command moves the robot and the task step stands
    still (a scripted probe): in a lockstep graph that was a loop that never ended the episode."""
    runner = TaskRunner(env.robot, env, seed=5)
    runner.reset()
    m = _released_monitor(env)
    ask = np.full(20, 0.02)  # the policy keeps asking to close the hand
    for _ in range(3):
        out = m.on_command(ask, env.action_labels, env.state.stamp, 0.05).command
        runner.step(out.values, out.labels)
        _observe(m, env)
    m.trigger("test", env.state.stamp)
    out = m.on_command(ask, env.action_labels, env.state.stamp, 0.05).command
    assert runner.kind_of(out.labels) == "command"
    hold = np.asarray(out.values, np.float64).copy()
    assert np.allclose(hold, motor_positions(env), atol=0.05)  # the targets where the hand was at the trip
    assert runner.step(out.values, out.labels).step == 3  # a probe's full command: the clock stands still
    rec = runner.last
    while not rec.done:
        out = m.on_command(ask, env.action_labels, env.state.stamp, 0.05).command
        rec = runner.step(out.values, out.labels, hold=True)
        _observe(m, env)
    assert rec.step == env.task.max_steps and rec.termination == "time_limit"
    assert np.max(np.abs(motor_positions(env) - hold)) < 0.05  # held, not closed by the policy's asks


def test_the_in_process_shield_executes_a_delta_hold_as_the_robot_node_does(env):
    """In-process evaluation (SafetyShield) acts a held delta command as the task action that commands
    the monitor's hold targets, as ``TaskRunner.step(hold=True)`` does on the graph."""
    from morl_robot.safety.shield import SafetyShield

    env.reset(seed=4)
    shield = SafetyShield(env)
    shield.begin(env.state)
    assert np.allclose(shield.filter(np.full(20, 0.5), env.state.stamp), 0.5)  # forwarded
    shield.monitor.trigger("test", env.state.stamp)
    action = shield.filter(np.full(20, 0.5), env.state.stamp)
    assert shield.held
    hold = shield.monitor.hold_command().values
    assert np.allclose(action, env.task.action_for_targets(hold, motor_positions(env)))
    assert np.max(np.abs(action)) < 0.5  # not the policy's action


def test_inspect_names_the_delta_action_mode(capsys):
    """`morl-robot inspect` on a committed delta-action policy says its actions are changes."""
    from pathlib import Path

    from morl_robot.cli import main

    onnx = (Path(__file__).resolve().parents[1] / "results" / "shadow_touch_delta_front" / "policies" / "mo-mpo"
            / "eps_pain=0.01_seed0.onnx")
    assert main(["inspect", str(onnx)]) == 0
    out = capsys.readouterr().out
    assert "changes of the position targets from the measured positions" in out and "rh_WRJ1/delta" in out


def test_a_delta_policy_deploys_sim_to_sim(tmp_path):
    """`morl-robot deploy` of a committed delta-action touch policy: the robot node's task is built in
    the contract's action mode (``task.yaml`` next to the report), the safety monitor passes the
    ``…/delta`` commands, and the graph's episode equals the in-process one (and presses the block)."""
    import json
    from pathlib import Path

    from tests.conftest import run_cli

    onnx = (Path(__file__).resolve().parents[1] / "results" / "shadow_touch_delta_front" / "policies" / "mo-mpo"
            / "eps_pain=0.01_seed1.onnx")
    done = run_cli(["deploy", str(onnx), "--episodes", "1", "--seed", "10000", "--stall-timeout", "60",
                    "--out", str(tmp_path)], out=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "action_mode: delta" in (tmp_path / "task.yaml").read_text()
    report = json.loads((tmp_path / "deploy_report.json").read_text())
    assert max(report["max_abs_difference"]) < 1e-3, report
    assert report["graph_success"] == report["in_process_success"] == [True]
