"""Every episode records its context (issue 37): the in-process ``train()``'s ``episodes.csv``, the
graph's path (robot node core → ``task_step`` → policy server core → experience chunk → learner
ingest), ``morl-robot evaluate``'s JSON; a draw's name ``train#<seed>`` reproduces its values; the
context as a (privileged, optional) observation."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from morl_robot.cli import main
from morl_robot.contexts import load_contexts
from morl_robot.envs.mo_env import MORobotEnv

torch.set_num_threads(1)
TASK = "sawyer_peg_in_hole"
SHORT = {"episode_duration": 0.25}  # 5 steps an episode


def _env(contexts: str, **more) -> MORobotEnv:
    return MORobotEnv(TASK, overrides={"contexts": contexts, **SHORT, **more})


def test_a_draw_is_named_by_its_seed_and_the_name_reproduces_it() -> None:
    env = _env("train")
    try:
        env.reset(seed=41)
        assert env.context.name == "train#41" and env.context_code == 41.0
        assert load_contexts(TASK).named("train#41").values == env.context.values
        env.reset()  # no seed: the draw gets one of its own, and is named by it
        assert env.context.name == f"train#{int(env.context_code)}"
        assert load_contexts(TASK).named(env.context.name).values == env.context.values
    finally:
        env.close()


def _config():
    from morl_robot.learning.config import (
        MPOConfig,
        NetworkConfig,
        ReplayConfig,
        TrainingConfig,
    )

    return MPOConfig(epsilons=[0.1, 0.1], batch_size=8, num_samples=4, sequence_length=3,
                     networks=NetworkConfig(policy_hidden=[16], critic_hidden=[16]),
                     replay=ReplayConfig(capacity=500, samples_per_insert=4.0, min_size_to_sample=1000),
                     training=TrainingConfig(eval_every=0, eval_episodes=1, checkpoint_every=0, tensorboard=False))


@pytest.mark.parametrize("contexts, expected", [("train", ["train#3", "train#4", "train#5"]),
                                                ("heavy_tool", ["heavy_tool"] * 3)])
def test_in_process_train_writes_each_episodes_context_to_episodes_csv(tmp_path: Path, contexts, expected) -> None:
    from morl_robot.training import train

    train(lambda: _env(contexts), _config(), total_steps=15, seed=3, progress=False, out_dir=tmp_path)
    with open(tmp_path / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["context"] for r in rows] == expected  # episode i resets with seed 3 + i


def test_the_graphs_experience_carries_the_context_from_robot_to_learner(tmp_path: Path) -> None:
    """One actor's path without ROS: the robot node's core writes ``task_step`` (with the
    ``context`` column), the policy server's core (train) turns it into experience, the learner
    ingest accepts the extra column and its episode record carries the draw seed."""
    from morl_robot.acting.experience import split_experience
    from morl_robot.acting.server import PolicyServerCore
    from morl_robot.envs.task_runner import TaskRunner
    from morl_robot.nodes import wire
    from morl_robot.session.config import PolicyServerSettings
    from morl_robot.training.session import session_for_task
    from tests.serving.policy_models import model_bytes

    env = _env("train")
    runner = TaskRunner(env.robot, env, seed=20)
    labels = wire.task_step_labels(runner.objective_names, runner.observation_labels, runner.machine_labels)
    assert labels[-len(runner.observation_labels) - 1] == "context"
    model_bytes(TASK, version=2, path=tmp_path / "p.onnx")
    chunks: list[tuple[np.ndarray, tuple[str, ...]]] = []
    commands: list[np.ndarray] = []
    core = PolicyServerCore(PolicyServerSettings(mode="train", timing="lockstep", chunk_size=100,
                                                 policy=str(tmp_path / "p.onnx")),
                            lambda c, contract, key: commands.append(c.copy()), lambda v: None,
                            lambda t, cols: chunks.append((t, cols)), lambda level, msg: None)
    core.open_model()
    core.active = True
    try:
        record = runner.reset()  # episode 1: seed 20 + 1
        assert record.info["context"] == "train#21"
        while not record.done:
            core.on_step(wire.split_task_step(runner.task_step_values(record), labels), 0.0)
            record = runner.step(commands[-1], runner.action_labels)
        core.on_step(wire.split_task_step(runner.task_step_values(record), labels), 0.0)
    finally:
        runner.close()
    (table, columns), = chunks  # one episode of 5 steps: one chunk at its end
    assert columns[-1] == "context" and set(table[:, -1]) == {21.0}
    chunk = split_experience(table, columns)
    np.testing.assert_array_equal(chunk.context, np.full(5, 21.0))
    session = session_for_task(TASK, None, "sawyer_front", run_dir=tmp_path / "run")
    session.context_spec = "train"
    session.accept_experience(columns[:-1])  # the learner's layout; the context column may follow
    session.ingest.check_columns(columns)
    session.start()
    try:
        session.add_chunk(chunk)
    finally:
        session.close()
    with open(tmp_path / "run" / "episodes.csv") as f:
        assert [r["context"] for r in csv.DictReader(f)] == ["train#21"]


def test_evaluate_json_names_every_episodes_context(tmp_path: Path, capsys) -> None:
    assert main(["evaluate", "scripted", "--task", TASK, "--set", "task.contexts=heavy_tool", "--set",
                 "task.episode_duration=0.25", "--episodes", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["context"] for e in data["per_episode"]] == ["heavy_tool", "heavy_tool"]


def test_context_as_observation_is_optional_and_off_by_default() -> None:
    plain, seen = _env("heavy_tool"), _env("heavy_tool", contexts_observed=True)
    try:
        cs = load_contexts(TASK)
        assert seen.observation_labels == tuple(plain.observation_labels) + cs.observation_labels
        o_plain, _ = plain.reset(seed=1)
        o_seen, _ = seen.reset(seed=1)
        extra = o_seen[len(o_plain):]
        np.testing.assert_allclose(o_seen[:len(o_plain)], o_plain)
        i = cs.observation_labels.index("context/tool_mass")
        lo, hi = cs.training["tool_mass"]
        assert extra[i] == pytest.approx(2 * (3.0 - lo) / (hi - lo) - 1)  # 3x: outside [-1, 1]
        seen.set_contexts(cs.nominal)
        o_nom, _ = seen.reset(seed=1)
        assert o_nom[len(o_plain) + i] == pytest.approx(2 * (1.0 - lo) / (hi - lo) - 1)
        assert seen.observation_space.shape == (len(seen.observation_labels),)
    finally:
        plain.close()
        seen.close()
