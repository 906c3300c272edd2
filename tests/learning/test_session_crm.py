"""Counterfactual experience (CRM; MORM paper eq. 4) on the learner node's side: the learner session
core, built as the learner node builds it for a reward-machine task, receives the actors'
experience tables with the machine columns and adds the same counterfactual experience as
in-process training adds for the same transitions (no ROS: the tables the actor core writes)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from morl_robot.acting.experience import (
    ExperienceWriter,
    Pending,
    experience_columns,
    split_experience,
)
from morl_robot.envs.mo_env import MORobotEnv, open_task_env
from morl_robot.envs.task_runner import TaskRunner
from morl_robot.errors import ConfigError
from morl_robot.learning.config import load_learner_config
from morl_robot.learning.networks import ActionSpec
from morl_robot.reward_machines.columns import machine_columns
from morl_robot.training.session import (
    LearnerSession,
    counterfactual_relabeller,
    session_for_task,
)

TASK, SPEC = "sawyer_peg_in_hole", "sawyer/peg_touch_then_insert"
STEPS, MIN_SIZE, CHUNK = 150, 40, 16
CRM_LEARNER = f"""
algorithm: mo_mpo
num_samples: 4
batch_size: 8
sequence_length: 2
networks: {{policy_hidden: [16], critic_hidden: [16]}}
replay: {{capacity: 2000, samples_per_insert: 4.0, min_size_to_sample: {MIN_SIZE}, error_buffer: 64.0, crm: true}}
training: {{eval_every: 0, checkpoint_every: 0, log_every: 1, tensorboard: false}}
"""


@pytest.fixture(scope="module")
def learner_yaml(tmp_path_factory):
    path = tmp_path_factory.mktemp("crm") / "crm.yaml"
    path.write_text(CRM_LEARNER)
    return path


@pytest.fixture(scope="module")
def rollout():
    """STEPS random-action transitions of the Sawyer MORM task, stepped by the actors' core (a
    TaskRunner on the product env): the in-process transitions and the experience tables."""
    env = open_task_env(TASK, reward_machine=SPEC)
    runner = TaskRunner(env.robot, env, seed=3)
    lo, hi = env.task.action_bounds(env.robot)
    columns = experience_columns(env.observation_labels, env.action_labels, env.objective_names,
                                 runner.machine_labels)
    tables: list[tuple[np.ndarray, tuple[str, ...]]] = []
    writer = ExperienceWriter(0, CHUNK, lambda table, cols: tables.append((table, cols)), columns=columns)
    rng = np.random.default_rng(0)
    transitions = []
    rec = runner.reset()
    for _ in range(STEPS):
        a = rng.uniform(-1.0, 1.0, len(lo))
        writer.acted(Pending(rec.observation, a, -1.5, 1, rec.episode, rec.step, np.zeros(0)))
        nxt = runner.step(lo + (a + 1.0) * 0.5 * (hi - lo), runner.action_labels)
        writer.observe(nxt.episode, nxt.step, nxt.reward, nxt.observation, nxt.terminated, nxt.truncated,
                       runner.machine_values(nxt))
        transitions.append((rec.observation, a, nxt.reward, nxt.observation, nxt.terminated, nxt.truncated, nxt.info))
        rec = runner.reset() if nxt.done else nxt
    writer.flush()
    yield env, transitions, tables
    runner.close()


def in_process_session(env, yaml_path) -> LearnerSession:
    """The learner session of in-process training (``training.train``) fed the transitions."""
    config = load_learner_config(yaml_path)
    config = dataclasses.replace(config, objective_names=list(env.objective_names))
    return LearnerSession(env.observation_space.shape[0], ActionSpec.box(env.action_space.shape[0]),
                          len(env.objective_names), config, relabeller=counterfactual_relabeller(config, env))


def test_the_learner_core_adds_the_counterfactual_experience_in_process_training_adds(rollout, learner_yaml):
    env, transitions, tables = rollout
    local = in_process_session(env, learner_yaml)
    for obs, a, r, nxt, term, trunc, info in transitions:  # as training.train adds a step
        local.add_transition(obs, a, r, nxt, term, trunc, -1.5, label=int(info.get("rm_label", -1)),
                             env_terminated=info.get("env_terminated"))
    # the learner node's construction and its per-message call
    node = session_for_task(TASK, "", learner_yaml, reward_machine=SPEC)
    c = node.contract
    node.accept_experience(experience_columns(c.input_labels, c.action_labels, c.objective_names,
                                              machine_columns(node.propositions)))
    assert all(node.receive(lambda t=t: t, split_experience) for t in tables)
    assert node.ingest.rejected == 0 and node.counters["env_steps"] == STEPS == local.counters["env_steps"]

    nonterminal = len(env.product.nonterminal_states)  # |U \ F| = 9 for this MORM
    assert nonterminal == 9
    expected = STEPS + (nonterminal - 1) * (STEPS - MIN_SIZE)  # real + counterfactual, after min_size_to_sample
    assert node.limiter.inserts == local.limiter.inserts == expected
    # every real transition is stored with its label mask and the environment's own termination
    valid = node.replay._valid
    assert np.array_equal(node.replay._label[valid], local.replay._label[local.replay._valid])
    assert np.array_equal(node.replay._env_term[valid], local.replay._env_term[local.replay._valid])
    assert np.all(node.replay._label[valid] >= 0)
    # the allowance counts env steps: |U \ F| inserts each past min_size_to_sample
    received, allowed = node.allowance()
    room = node.limiter.max_inserts() - node.limiter.inserts
    assert received == STEPS and allowed - received == max(room, 0) // nonterminal + min(room, 0)


def test_sampled_sequences_start_in_counterfactual_machine_states(rollout, learner_yaml):
    env, _, tables = rollout
    node = session_for_task(TASK, "", learner_yaml, reward_machine=SPEC)
    c = node.contract
    node.accept_experience(experience_columns(c.input_labels, c.action_labels, c.objective_names,
                                              machine_columns(node.propositions)))
    for t in tables:
        node.receive(lambda t=t: t, split_experience)
    offset, S = env.obs_dim_env, env.product.num_states
    real_states = {int(np.argmax(t[0][i, 4 + offset: 4 + offset + S])) for t in tables for i in range(len(t[0]))}
    batch = node.replay.sample(64, 2)
    started = set(np.argmax(batch.observations[0, :, offset:offset + S], axis=1).tolist())
    assert started - real_states, (started, real_states)  # machine states the robot never was in
    assert started <= set(env.product.nonterminal_states.tolist())
    assert node.learn(max_updates=2) == 2
    stats = node.statistics()
    assert stats["replay_inserts"] == node.limiter.inserts and stats["counterfactual_sequences"] > 0


def test_crm_without_a_reward_machine_is_refused_on_both_paths(learner_yaml):
    with pytest.raises(ConfigError, match=r"replay.crm is true but .*task 'sawyer_peg_in_hole' has no reward machine"
                                          r".*--reward-machine"):
        session_for_task(TASK, "", learner_yaml)
    from morl_robot.training.loop import train

    with pytest.raises(ConfigError, match="replay.crm is true but the environment has no reward machine"):
        train(lambda: MORobotEnv(TASK), learner_yaml, total_steps=10, progress=False)


def test_a_reward_machine_for_another_task_is_refused():
    with pytest.raises(ConfigError, match="written for task 'sawyer_peg_in_hole', not 'shadow_touch'"):
        open_task_env("shadow_touch", reward_machine=SPEC)
