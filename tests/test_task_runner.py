"""TaskRunner: labelled robot-unit commands → the task's normalised action, episodes as in the env."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.envs.task_runner import TaskRunner
from morl_robot.errors import CommandError


@pytest.fixture(scope="module")
def shadow():
    env = MORobotEnv("shadow_touch")
    runner = TaskRunner(env.robot, env, seed=1)
    yield runner
    runner.close()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=20, max_size=20))
def test_robot_units_map_back_to_the_normalised_action(shadow, action):
    a = np.asarray(action)
    lo, hi = shadow.env.task.action_bounds(shadow.robot)
    units = lo + (a + 1) / 2 * (hi - lo)  # what the ONNX graph puts on the wire
    assert np.allclose(shadow.normalised_action(units), a, atol=1e-9)


def test_commands_are_told_apart_by_their_labels(shadow):
    # Shadow tasks act on every actuator: the action labels are the position command's labels
    assert shadow.kind_of(shadow.robot.spec.command_labels(shadow.robot.control_mode)) == "action"
    with pytest.raises(CommandError, match="neither the task's action labels"):
        shadow.kind_of(("rh_WRJ2",))
    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        sawyer = TaskRunner(env.robot, env)
        assert sawyer.kind_of(("vx", "vy", "vz")) == "action"
        assert sawyer.kind_of(("vx", "vy", "vz", "wx", "wy", "wz")) == "command"  # a scripted full twist
    finally:
        env.close()


def test_episode_matches_the_env_on_the_same_seed():
    """Stepping through the runner with robot-unit commands gives the env's own rewards."""
    a = MORobotEnv("sawyer_peg_in_hole")
    b = MORobotEnv("sawyer_peg_in_hole")
    runner = TaskRunner(b.robot, b, seed=7)
    try:
        rec = runner.reset()
        obs, _ = a.reset(seed=8)  # episode 1 resets with seed + 1
        assert np.allclose(rec.observation, obs)
        rng = np.random.default_rng(0)
        lo, hi = b.task.action_bounds(b.robot)
        for i in range(30):
            act = rng.uniform(-1, 1, 3)
            obs, r, term, trunc, _ = a.step(act)
            rec = runner.step(lo + (act + 1) / 2 * (hi - lo), ("vx", "vy", "vz"))
            assert rec.step == i + 1
            assert np.allclose(rec.observation, obs) and np.allclose(rec.reward, r)
            assert (rec.terminated, rec.truncated) == (term, trunc)
            if term or trunc:
                break
        ended = runner.end_episode("safety")
        assert ended.terminated and ended.termination == "safety" and ended.step == rec.step + 1
        assert np.all(ended.reward == 0)
        with pytest.raises(CommandError, match="episode has ended"):
            runner.step(np.zeros(3), ("vx", "vy", "vz"))
    finally:
        a.close()
        runner.close()


def test_restarting_the_seeds_gives_the_episode_the_runners_seed():
    """``reset(restart_seeds=True)`` (the robot node's reset_world) starts an episode on ``seed``
    whatever its number, the next on ``seed + 1``; episode numbers go on counting."""
    a = MORobotEnv("sawyer_peg_in_hole")
    b = MORobotEnv("sawyer_peg_in_hole")
    runner = TaskRunner(b.robot, b, seed=100)
    try:
        for _ in range(3):
            runner.reset()
        assert runner.episode == 3 and runner.episode_seed(3) == 103
        rec = runner.reset(restart_seeds=True)
        assert rec.episode == 4 and runner.episode_seed(4) == 100
        assert np.allclose(rec.observation, a.reset(seed=100)[0])
        rec = runner.reset()
        assert rec.episode == 5 and np.allclose(rec.observation, a.reset(seed=101)[0])
    finally:
        runner.close()
        a.close()
