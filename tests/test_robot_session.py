"""RobotSession (the robot node's core, no ROS): lockstep and real-time stepping, holds, the inner
safety layer's holds, e-stop episode ends, pause/step/reset_world, rejections, faults, status."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.envs.robot_session import RobotOutputs, RobotSession, open_runner
from morl_robot.errors import ConfigError, MorlRobotError
from morl_robot.session.config import RobotNodeSettings

VEL = ("vx", "vy", "vz")


def key(episode: int, step: int) -> float:
    return float(episode * 1000 + step)


@dataclass
class Outputs:
    published: list[tuple[Any, bool]] = field(default_factory=list)
    states: list[Any] = field(default_factory=list)
    releases: int = 0
    logs: list[tuple[str, str]] = field(default_factory=list)

    def bind(self) -> RobotOutputs:
        def release() -> None:
            self.releases += 1

        return RobotOutputs(publish=lambda rec, announce: self.published.append((rec, announce)),
                            publish_state=self.states.append, request_release=release,
                            log=lambda level, message: self.logs.append((level, message)))


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def make():
    sessions: list[RobotSession] = []

    def build(**settings: Any) -> tuple[RobotSession, Outputs, Clock]:
        s = RobotNodeSettings(**{"task": "sawyer_peg_in_hole", "seed": 3, **settings})
        out, clock = Outputs(), Clock()
        session = RobotSession(open_runner(s), s, out.bind(), step_key=key, clock=clock)
        sessions.append(session)
        return session, out, clock

    yield build
    for s in sessions:
        s.close()


def test_lockstep_steps_once_per_command_and_drops_stale_answers(make):
    core, out, _ = make()
    core.activate()
    (rec, announce), = out.published
    assert (rec.episode, rec.step, announce) == (1, 0, True)
    start = {"event": "start", "episode": 1, "steps": 0, "stamp": rec.state.stamp}
    if rec.state.wrench is not None:  # the reset state's force (the tare a probe of the wrench topic takes)
        start["force"] = rec.state.wrench[:3].tolist()
    assert core.episode_events(rec, True)[0] == start
    core.on_command(np.zeros(3), VEL, key(1, 0))
    core.on_command(np.zeros(3), VEL, key(1, 0))  # the same step answered twice: stale
    core.on_command(np.zeros(3), VEL)  # no key: executed
    assert [r.step for r, _ in out.published] == [0, 1, 2]
    assert core.counters["steps"] == 2 and core.counters["stale_commands"] == 1
    assert core.status()[:2] == ("ok", "running") and core.status()[2]["step"] == 2


def test_realtime_applies_the_newest_command_and_holds_after_the_timeout(make):
    core, out, clock = make(timing="realtime", command_timeout=0.2)
    core.activate()
    core.tick()  # no command yet: hold (state only, no task step)
    assert core.counters["holds"] == 1 and len(out.states) == 1 and len(out.published) == 1
    core.on_command(np.array([0.0, 0.0, 0.02]), VEL)
    assert core.counters["steps"] == 0  # realtime: commands wait for the tick
    clock.t += 0.1
    core.tick()
    core.tick()  # the newest command again
    assert core.counters["steps"] == 2 and [r.step for r, _ in out.published] == [0, 1, 2]
    clock.t += 0.15  # 0.25 s after the command
    core.tick()
    assert core.counters["holds"] == 2 and core.runner.last.step == 2


def test_inner_layer_holds_are_counted_logged_once_and_resent_in_lockstep(make):
    core, out, _ = make()
    core.activate()
    for _ in range(3):
        core.on_command(np.array([np.nan, 0.0, 0.0]), VEL)
    assert core.counters["inner_holds"] == 3 and core.counters["steps"] == 0
    assert [(r.step, a) for r, a in out.published[1:]] == [(0, False)] * 3  # step 0 again: the actor answers it
    assert [m for lvl, m in out.logs if lvl == "error"] == [
        f"inner safety layer: command not actuated, holding: {core.inner_hold}"]
    level, message, values = core.status()
    assert level == "warn" and "command.non_finite" in message and values["inner_hold"] == core.inner_hold
    core.on_command(np.zeros(3), VEL)
    assert core.inner_hold == "" and core.counters["steps"] == 1 and core.status()[0] == "ok"
    assert "commands forwarded again" in out.logs[-1][1]


def test_inner_layer_holds_in_realtime_publish_the_state_only(make):
    core, out, _ = make(timing="realtime")
    core.activate()
    core.on_command(np.array([np.inf, 0.0, 0.0]), VEL)
    core.tick()
    assert core.counters["inner_holds"] == 1 and len(out.published) == 1 and len(out.states) == 1


def test_a_command_meeting_the_estop_ends_the_episode_and_asks_for_release(make):
    core, out, _ = make(end_episode_on_estop=True)
    core.activate()
    core.set_estop(True)
    core.on_command(np.zeros(3), VEL)  # step 0: nothing moved, only release
    assert out.releases == 1 and core.counters["safety_stops"] == 0 and len(out.published) == 1
    core.released(True)  # step 0 re-sent at once
    assert out.published[-1][0].step == 0 and out.published[-1][1] is False
    core.set_estop(False)
    core.on_command(np.zeros(3), VEL)
    core.set_estop(True)
    core.on_command(np.zeros(3), VEL)
    ended, started = out.published[-2][0], out.published[-1][0]
    assert ended.termination == "safety" and ended.terminated and ended.step == 2
    _, end = core.episode_events(ended, True)
    assert end["event"] == "end" and end["termination"] == "safety" and set(end["returns"]) == {"task", "wrist_force"}
    assert (started.episode, started.step) == (2, 0)
    assert core.counters["safety_stops"] == 1 and out.releases == 2 and core.status()[1] == "e-stop engaged"


def test_without_end_episode_on_estop_commands_step_on(make):
    """Deploy: before the release (step 0) the robot stays at rest and the release re-sends step
    0; once the episode runs, commands during an e-stop (the monitor's holds) step on."""
    core, out, _ = make()
    core.activate()
    core.set_estop(True)
    core.on_command(np.zeros(3), VEL)
    core.on_command(np.zeros(3), VEL)
    assert core.counters["steps"] == 0 and core.counters["estop_waits"] == 2 and len(out.published) == 1
    core.set_estop(False)
    assert len(out.published) == 2 and out.published[-1][0].step == 0 and out.published[-1][1] is False
    core.on_command(np.zeros(3), VEL)
    core.set_estop(True)
    core.on_command(np.zeros(3), VEL)
    assert core.counters["steps"] == 2 and out.releases == 0 and out.published[-1][0].step == 2
    # a trip latched into the next episode (no auto-release in deploy): its holds step on, so the
    # episode runs out its time limit instead of waiting at step 0 for a reset that may never come
    core.reset_world()
    assert out.published[-1][0].step == 0
    core.on_command(np.zeros(3), VEL)
    assert core.counters["steps"] == 3 and core.counters["estop_waits"] == 2


@pytest.mark.parametrize("timing", ["lockstep", "realtime"])
def test_a_held_relative_action_episode_runs_on_to_its_time_limit(make, tmp_path, timing):
    """Deploy of a ``…/delta`` policy: after a trip the monitor answers with its hold in the actuators'
    absolute labels.  Each such answer is a task step (the episode's clock runs on to the time limit
    and the episode ends), not a robot step at a standing task step, which kept a lockstep graph
    busy forever (the deploy's stall check counted robot steps and never fired)."""
    from morl_robot.safety.monitor import build_monitor
    from morl_robot.tasks.registry import write_task_config

    config = write_task_config("shadow_touch", {"action_mode": "delta"}, tmp_path / "touch_delta.yaml")
    core, out, _ = make(task="shadow_touch", task_config=config, timing=timing)
    core.activate()
    labels = core.runner.action_labels
    core.set_estop(False)  # the start-up release
    core.on_command(np.zeros(20), labels)
    m = build_monitor("shadow_hand", None, watchdogs=False, action_labels=labels)
    state = core.runner.last.state
    m.on_joint_state(core.runner.robot.spec.joint_names, state.position, state.velocity, state.effort,
                     state.stamp, state.stamp)
    m.trigger("test", state.stamp)
    hold = m.on_command(np.full(20, 0.02), labels, state.stamp).command  # (the actuators' labels)
    core.set_estop(True)
    for _ in range(core.runner.env.task.max_steps + 5):
        core.on_command(hold.values, hold.labels)
        if timing == "realtime":
            core.tick()
        if core.counters["episodes"] > 1:
            break
    end = next(rec for rec, _ in out.published if rec.done)  # the next episode has started after it
    assert end.termination == "time_limit" and end.step == core.runner.env.task.max_steps
    assert core.counters["steps"] == end.step and core.counters["rejected_commands"] == 0


def test_republish_resends_the_newest_step_only_when_quiet(make):
    core, out, clock = make(republish_period=0.5)
    core.activate()
    core.republish()
    assert len(out.published) == 1  # just published
    clock.t += 0.6
    core.republish()
    assert out.published[-1] == (core.runner.last, False)
    core.on_command(np.zeros(3), VEL)
    clock.t += 0.3
    core.republish()
    assert len(out.published) == 3  # a command 0.3 s ago: not quiet


def test_pause_and_step_simulation(make):
    core, _, _ = make()
    core.activate()
    assert core.step_simulation() == (False, "the simulation is running; pause it with ~/set_pause first, then step")
    assert core.set_pause(True) == "paused"
    core.on_command(np.array([0.0, 0.0, 0.02]), VEL)
    assert core.counters["steps"] == 0  # paused: not executed
    ok, message = core.step_simulation()
    assert ok and message.startswith("stepped to t=0.0500 s (episode 1, step 1)")
    ok, _ = core.step_simulation()  # no new command: one hold period
    assert ok and core.counters["holds"] == 1 and core.runner.last.step == 1
    core.on_command(np.zeros(2), ("vx", "vy"))
    ok, message = core.step_simulation()
    assert not ok and "neither the task's action labels" in message
    assert core.set_pause(False) == "running"


def test_reset_world_ends_the_running_episode_and_restarts_the_seeds(make):
    core, out, _ = make(seed=5)
    assert core.reset_world() == (False, "robot node is not active")
    core.activate()
    core.on_command(np.zeros(3), VEL)
    core.settings.seed = 42  # a parameter set while running
    assert core.reset_world() == (True, "episode 2 started")
    ended, started = out.published[-2][0], out.published[-1][0]
    assert ended.termination == "reset" and ended.truncated and not ended.terminated
    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        assert np.allclose(started.observation, env.reset(seed=42)[0])
    finally:
        env.close()
    assert core.reset_world() == (True, "episode 3 started")  # at step 0: no end record
    assert out.published[-1][0].episode == 3 and out.published[-2][0] is started


def test_rejections_are_counted_and_logged_once_per_reason(make):
    core, out, _ = make()
    core.activate()
    for _ in range(2):
        core.on_command(np.zeros(2), ("vx", "vy"))
    core.reject("malformed command: 3 values but 2 labels")
    assert core.counters["rejected_commands"] == 3 and core.counters["steps"] == 0
    assert [lvl for lvl, _ in out.logs] == ["error", "error"]


def test_a_robot_error_is_a_fault_until_a_period_succeeds(make, monkeypatch):
    core, out, _ = make()
    core.activate()
    step = core.runner.step

    def stale(*args: Any) -> Any:
        raise MorlRobotError("driver state is 0.5 s old")

    monkeypatch.setattr(core.runner, "step", stale)
    core.on_command(np.zeros(3), VEL)
    core.on_command(np.zeros(3), VEL)
    assert core.counters["faults"] == 2 and core.status()[:2] == ("error", "fault: driver state is 0.5 s old")
    assert out.logs == [("error", "fault, not commanding: driver state is 0.5 s old")]
    sent: list[Any] = []
    monkeypatch.setattr(core.runner.robot, "send_command", sent.append)
    core.deactivate()
    assert sent == [] and not core.active  # in a fault: no hold command
    core.active = True
    monkeypatch.setattr(core.runner, "step", step)
    core.on_command(np.zeros(3), VEL)
    assert core.fault == "" and out.logs[-1] == ("info", "fault cleared: driver state is 0.5 s old")
    before = len(sent)  # (a simulated step commands through send_command too)
    core.deactivate()
    assert len(sent) == before + 1 and np.array_equal(sent[-1], core.runner.robot.hold_command())
    assert core.status()[1] == "inactive"


def test_open_runner_names_what_is_wrong():
    with pytest.raises(ConfigError, match="parameter robot: needed when no task is given"):
        open_runner(RobotNodeSettings())
    with pytest.raises(ConfigError, match="task 'sawyer_peg_in_hole' runs on 'sawyer', not 'shadow_hand'"):
        open_runner(RobotNodeSettings(task="sawyer_peg_in_hole", robot="shadow_hand"))


def test_a_bare_robot_steps_in_its_control_mode_without_episodes():
    s = RobotNodeSettings(robot="sawyer", control_mode="velocity", control_period=0.02, seed=1)
    out = Outputs()
    core = RobotSession(open_runner(s), s, out.bind(), step_key=key, clock=Clock())
    try:
        runner = core.runner
        assert runner.env is None and runner.robot.control_mode.value == "velocity"
        assert runner.robot.control_period == pytest.approx(0.02)
        core.activate()
        hold = runner.robot.hold_command()
        core.on_command(hold, runner.command_labels)
        rec = out.published[-1][0]
        assert (rec.step, rec.observation) == (1, None) and core.counters["steps"] == 1
        assert rec.state.stamp == pytest.approx(0.02)
        core.on_command(hold, VEL)  # task action labels mean nothing without a task
        assert core.counters["rejected_commands"] == 1
    finally:
        core.close()


def test_a_first_reset_that_is_stopped_leaves_the_robot_holding(make, monkeypatch):
    """The activation's reset raised (e.g. a hardware reset stopped by a latched e-stop): the
    real-time loop holds the robot (no task step, nothing published) instead of failing."""
    core, out, _ = make(timing="realtime")

    def stopped(**kwargs: Any) -> Any:
        raise MorlRobotError("reset stopped: the safety monitor's e-stop is latched")

    monkeypatch.setattr(core.runner, "reset", stopped)
    for engaged in (True, False, True):  # the start-up latch, its release, a later latch
        core.set_estop(engaged)
    core.activate()
    assert core.runner.last is None and core.fault
    core.tick()  # no command yet, a latched e-stop: hold, no new reset (the operator releases, then resets)
    assert core.counters["holds"] == 1 and len(out.states) == 1 and out.published == []
    assert core.runner.last is None and core.fault == ""  # the hold succeeded: not a fault any more


def test_a_first_reset_that_failed_on_a_stale_state_is_tried_again(make, monkeypatch):
    """A start reset that failed without an e-stop (a late driver message on a loaded host) is
    tried again by the real-time loop: the episode begins (before: the robot held for good)."""
    core, out, _ = make(timing="realtime")
    real, calls = core.runner.reset, []

    def once_stale(**kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise StaleStateError("sawyer: stale driver state, not commanding")
        return real(**kwargs)

    from morl_robot.robots.hardware import StaleStateError

    monkeypatch.setattr(core.runner, "reset", once_stale)
    core.activate()
    assert core.runner.last is None and core.fault
    core.tick()
    assert len(calls) == 2 and core.runner.last is not None and core.runner.last.step == 0
    assert core.fault == "" and out.published  # step 0 went out
