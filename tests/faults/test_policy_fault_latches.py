"""Fault (issue 33, item 4): a policy that outputs NaN for ever kept its heartbeat (~15 Hz), so the
safety monitor never latched; only the robot node's command timeout held the robot.  A hold for
another reason (a stale observation) between two NaN outputs cleared the fault and sent a
heartbeat.  Now a policy fault stops the heartbeat until the policy acts finitely again (or
another model is installed), and the monitor's heartbeat watchdog latches its stop."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from policy_models import SAWYER, model_bytes, random_observations, task_contract

from morl_robot.acting.experience import TaskStep
from morl_robot.acting.server import PolicyServerCore
from morl_robot.safety.monitor import build_monitor
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.session.config import PolicyServerSettings

CONTRACT = task_contract(SAWYER)
HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])
REST = np.array([0.0, 0.0, -3.4, 0.0, 0.0, 0.0])


def _core(path: Path, now: list[float]) -> tuple[PolicyServerCore, list[int], list[np.ndarray]]:
    heartbeats: list[int] = []
    commands: list[np.ndarray] = []
    core = PolicyServerCore(PolicyServerSettings(mode="deploy", timing="realtime", rate=20.0, policy=str(path),
                                                 observation_timeout=0.25),
                            lambda c, contract, key: commands.append(c), heartbeats.append, lambda t, c: None,
                            lambda level, msg: None, clock=lambda: now[0])
    core.open_model()
    core.active = True
    return core, heartbeats, commands


def _step(step: int, obs: np.ndarray) -> TaskStep:
    return TaskStep(1, step, False, False, 0.05 * step, np.zeros(len(CONTRACT.objective_names)), obs,
                    tuple(CONTRACT.objective_names), tuple(CONTRACT.observation_labels))


def test_a_nan_policy_stays_silent_through_stale_input_holds_and_the_monitor_latches(tmp_path):
    nan_path = tmp_path / "nan.onnx"
    model_bytes(SAWYER, version=7, nan=True, path=nan_path)
    now = [0.0]
    core, heartbeats, commands = _core(nan_path, now)
    obs = random_observations(CONTRACT, 1, seed=0)[0]
    # a monitor with watchdogs on, released, fed fresh sensors at 100 Hz and this server's heartbeats
    monitor = build_monitor("sawyer", None, watchdogs=True, now=0.0, action_labels=("vx", "vy", "vz"))
    monitor.on_joint_state(monitor.spec.joint_names, HOME, np.zeros(7), np.zeros(7), 0.0, 0.0)
    monitor.on_wrench(REST, 0.0, 0.0)
    monitor.on_heartbeat(0.0, 0.0)
    assert monitor.reset(0.0)[0]
    sent = 0
    for k in range(80):  # 4 s at 20 Hz; every third tick finds the observation stale (a loaded host)
        now[0] = 0.05 * (k + 1)
        if k % 3 != 2:
            core.on_step(_step(k, obs), now[0])
        else:
            core.latest_time = now[0] - 1.0
        core.tick(now[0])
        for _ in heartbeats[sent:]:
            monitor.on_heartbeat(now[0], now[0])
        sent = len(heartbeats)
        monitor.on_joint_state(monitor.spec.joint_names, HOME, np.zeros(7), np.zeros(7), now[0], now[0])
        monitor.on_wrench(REST, now[0], now[0])
        monitor.check_watchdogs(now[0])
    assert commands == []  # never garbage
    assert heartbeats == [], "a NaN policy must not send a heartbeat, whatever other holds come between"
    assert core.counters["held_non_finite_output"] > 0 and core.counters["held_missing_input"] > 0
    assert monitor.estopped and monitor.estop_cause.rule == "stale.heartbeat"


def test_the_heartbeat_comes_back_when_a_good_model_is_installed(tmp_path):
    nan_path, good_path = tmp_path / "nan.onnx", tmp_path / "good.onnx"
    model_bytes(SAWYER, version=7, nan=True, path=nan_path)
    model_bytes(SAWYER, version=8, seed=1, path=good_path)
    now = [0.0]
    core, heartbeats, commands = _core(nan_path, now)
    obs = random_observations(CONTRACT, 1, seed=0)[0]
    for k in range(5):
        now[0] = 0.05 * (k + 1)
        core.on_step(_step(k, obs), now[0])
        core.tick(now[0])
    assert heartbeats == [] and core.fault
    assert core.install(OnnxPolicy.from_file(good_path), "file")
    now[0] += 0.05
    core.on_step(_step(6, obs), now[0])
    core.tick(now[0])
    assert heartbeats == [8] and len(commands) == 1 and not core.fault
