"""``training.worst_case_termination``: a termination is learned as the rest of the episode at each
objective's worst per-step reward, so a cost-only objective stops preferring to end the episode."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from morl_robot.errors import ConfigError
from morl_robot.learning import MPOConfig
from morl_robot.learning.config import NetworkConfig, ReplayConfig, TrainingConfig
from morl_robot.training import train
from morl_robot.training.termination import WorstCaseTermination, worst_case_termination

torch.set_num_threads(1)


class EscapableCost(gym.Env):
    """Each step costs 0.5 (objective 0; objective 1 is always 0) unless the action is > 0: then the
    episode ends at once, at a cost of 1.  Ten steps at most.  Ending at once (−1) beats living on
    (−5), unless a termination counts the remaining steps at the worst cost (−1 − 9 = −10)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    reward_space = gym.spaces.Box(-1.0, 0.0, (2,), np.float32)
    spec = gym.envs.registration.EnvSpec("EscapableCost-v0", max_episode_steps=10)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        crash = float(np.asarray(action).reshape(-1)[0]) > 0.0
        reward = np.array([-1.0 if crash else -0.5, 0.0], np.float32)
        return np.array([self.t / 10], np.float32), reward, crash, self.t >= 10 and not crash, {}


def config(worst_case: bool) -> MPOConfig:
    return MPOConfig(
        epsilons=[0.1, 0.1], batch_size=32, num_samples=10, sequence_length=2, target_update_period=20,
        policy_lr=3e-3, critic_lr=3e-3, epsilon_mean=1e-2, epsilon_stddev=1e-4, discount=0.99,
        networks=NetworkConfig(policy_hidden=[32, 32], critic_hidden=[32, 32]),
        replay=ReplayConfig(capacity=5000, samples_per_insert=8.0, min_size_to_sample=100, error_buffer=100.0),
        training=TrainingConfig(eval_every=0, eval_episodes=1, checkpoint_every=0, log_every=50, tensorboard=False,
                                worst_case_termination=worst_case),
    )


@given(low=st.lists(st.floats(-100, 0), min_size=1, max_size=4), max_steps=st.integers(1, 500),
       step=st.integers(1, 600))
def test_the_terminal_reward_adds_the_remaining_steps_at_the_worst_reward(low, max_steps, step) -> None:
    w = WorstCaseTermination(np.asarray(low), max_steps)
    reward = np.full(len(low), -0.25, np.float32)
    out = w.terminal_reward(reward, step)
    np.testing.assert_allclose(out, -0.25 + np.asarray(low) * max(0, max_steps - step), rtol=1e-5, atol=1e-3)
    assert out.dtype == np.float32 and out.shape == reward.shape
    assert np.all(out <= reward + 1e-6)  # never better than the step itself


def test_the_learner_is_given_the_worst_case_and_the_reported_returns_stay_the_tasks(monkeypatch, tmp_path) -> None:
    from morl_robot.learning.replay import SequenceReplay

    seen: list[tuple[np.ndarray, bool]] = []
    original = SequenceReplay.add

    def spy(self, obs, action, reward, next_obs, terminated, truncated, *args, **kwargs):  # what the learner is given
        seen.append((np.asarray(reward).copy(), bool(terminated)))
        return original(self, obs, action, reward, next_obs, terminated, truncated, *args, **kwargs)

    monkeypatch.setattr(SequenceReplay, "add", spy)
    result = train(EscapableCost, config(True), total_steps=60, seed=0, progress=False, out_dir=tmp_path)
    crashes = [r for r, terminated in seen if terminated]
    assert crashes, "the untrained policy should end some episodes early"
    for r in crashes:  # −1 at the crash + k remaining steps at −1 (objective 1: 0 + k·(−1))
        assert r[0] == pytest.approx(r[1] - 1.0) and r[1] <= 0.0 and float(r[1]).is_integer()
    assert any(r[1] < 0 for r in crashes)
    assert all(r[0] in (-0.5, -1.0) and r[1] == 0.0 for r, terminated in seen if not terminated)
    # the episode log has the task's own returns: objective 1 is 0 in every episode
    assert result.metrics is not None
    import csv

    with open(tmp_path / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(float(r["return/objective_1"]) == 0.0 for r in rows)
    assert len(rows) == result.episodes


def test_an_environment_without_worst_rewards_or_a_step_limit_is_refused() -> None:
    class NoBounds(EscapableCost):
        reward_space = gym.spaces.Box(-np.inf, 0.0, (2,), np.float32)

    class NoLimit(EscapableCost):
        spec = None

    with pytest.raises(ConfigError, match="no finite worst reward per objective"):
        worst_case_termination(NoBounds(), 2)
    with pytest.raises(ConfigError, match="no step limit"):
        worst_case_termination(NoLimit(), 2)
    assert worst_case_termination(EscapableCost(), 2).max_steps == 10


def test_the_graph_learner_applies_it_to_actors_chunks(tmp_path) -> None:
    """The learner node's session (session_for_task) learns an actor's termination at step s as
    r + (T − s − 1)·r_low with the task's T and worst rewards; the episode's reported return stays the
    task's own, and non-terminal rows are stored unchanged."""
    from morl_robot.nodes import wire
    from morl_robot.resources import resolve_config
    from morl_robot.training.session import session_for_task

    src = resolve_config("learner", "learner/mo_mpo_cpu_small.yaml").read_text()
    path = tmp_path / "learner.yaml"
    path.write_text(src.replace("training:\n", "training:\n  worst_case_termination: true\n", 1))
    session = session_for_task("sawyer_peg_in_hole", None, path)
    assert session.worst_case is not None
    t_max, low = session.worst_case.max_steps, session.worst_case.low
    assert t_max == 160 and low.tolist() == [0.0, -90.0]  # 8 s at 20 Hz; task ≥ 0, wrist force clipped at 90 N
    c = session.contract
    columns = wire.experience_columns(c.input_labels, c.action_labels, c.objective_names)
    ingest = session.accept_experience(columns)
    col = {name: i for i, name in enumerate(columns)}
    rows = np.zeros((3, len(columns)))
    rows[:, col["episode"]] = 7
    rows[:, col["step"]] = [38, 39, 40]  # the 39th, 40th and 41st transitions of the episode
    obs = [i for n, i in col.items() if n.startswith("obs/")]
    nxt = [i for n, i in col.items() if n.startswith("next_obs/")]
    for r in range(3):
        rows[r, obs], rows[r, nxt] = r, r + 1  # consecutive steps
    rows[:, col["reward/task"]], rows[:, col["reward/wrist_force"]] = 0.5, -31.0
    rows[-1, col["terminated"]] = 1.0  # the force threshold
    result = ingest.add(wire.split_experience(rows, columns), columns)
    stored = ingest.replay.state_dict()["reward"][:3]
    np.testing.assert_allclose(stored[:2], [[0.5, -31.0]] * 2)
    np.testing.assert_allclose(stored[2], [0.5, -31.0 - 90.0 * (t_max - 41)])
    (episode,) = result.episodes
    np.testing.assert_allclose(episode.returns, [1.5, -93.0])  # the task's own return


def test_the_option_is_off_by_default() -> None:
    assert TrainingConfig().worst_case_termination is False


def test_it_is_refused_with_counterfactual_experience_or_a_reward_machine(tmp_path) -> None:
    """A machine reaching its terminal state ends the product episode as a success, and counterfactual
    relabelling rewrites rewards and terminations: charging either the worst reward would be wrong, so
    the combination is a configuration error naming the option, not a silent mislearning."""
    import dataclasses

    from morl_robot.learning.config import load_learner_config
    from morl_robot.resources import resolve_config
    from morl_robot.training.session import session_for_task

    with pytest.raises(ConfigError, match="training.worst_case_termination.*replay.crm"):
        cfg = config(True)
        dataclasses.replace(cfg, replay=dataclasses.replace(cfg.replay, crm=True)).validate()
    src = resolve_config("learner", "learner/mo_mpo_cpu_small.yaml").read_text()
    path = tmp_path / "learner.yaml"
    path.write_text(src.replace("training:\n", "training:\n  worst_case_termination: true\n", 1))
    assert load_learner_config(path).replay.crm is False  # the product alone is refused, too
    with pytest.raises(ConfigError, match="not for a reward-machine product environment"):
        session_for_task("sawyer_peg_in_hole", None, path, reward_machine="sawyer/peg_touch_then_insert")
