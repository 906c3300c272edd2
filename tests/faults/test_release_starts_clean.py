"""Fault (issue 33, item 13): under ``ros2 launch deploy.launch.py release:=after_checks`` the
monitor was released mid-episode; the policy's frame stack (the task's observation history, kept by
the robot node's task) held the stale, held-still history and it pressed 130 N within 1.3 s.  Now
the first release of the start-up e-stop ends an episode that ran on held and starts a fresh one,
so the policy's first observation is a step 0 with a fresh history."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_robot_session
from test_robot_session import VEL

make = test_robot_session.make  # the robot-session fixture


def test_the_first_release_mid_episode_starts_a_fresh_episode(make):
    session, out, clock = make(timing="realtime")
    session.activate()
    session.set_estop(True)  # the monitor starts latched
    first = session.runner.episode
    for _ in range(30):  # commands arrive and are executed held while latched: the episode runs on
        session.on_command(np.zeros(3), VEL)
        clock.t += 0.05
        session.tick()
    assert session.runner.last.step > 10 and session.runner.episode == first
    published = len(out.published)
    session.set_estop(False)  # released
    records = [rec for rec, announce in out.published[published:]]
    assert records[0].termination == "reset" and records[0].episode == first  # uncounted
    assert records[-1].episode == first + 1 and records[-1].step == 0  # the policy starts here
    assert session.counters["release_restarts"] == 1
    # a later release (after a trip) does not restart: the human decides
    for _ in range(5):
        session.on_command(np.zeros(3), VEL)
        clock.t += 0.05
        session.tick()
    session.set_estop(True)
    step = session.runner.last.step
    session.set_estop(False)
    assert session.runner.last.step == step and session.counters["release_restarts"] == 1


def test_a_release_at_step_zero_changes_nothing(make):
    session, _, _ = make(timing="lockstep")
    session.activate()
    session.set_estop(True)
    episode = session.runner.episode
    session.set_estop(False)
    assert session.runner.episode == episode and session.runner.last.step == 0
    assert session.counters["release_restarts"] == 0
