"""PRISM (issue 38): a task's sparse objectives (task key ``sparse``) pay on release, and the released
segments travel with the experience: task_step → actor's experience row → the learner's ingest, and
back into episodes ReSymNet can be retrained on (the graph's path, without starting nodes)."""
import numpy as np
import pytest

from morl_robot.acting.experience import (
    ExperienceWriter,
    Pending,
    split_experience,
    task_step_layout,
)
from morl_robot.configuration import config_overrides
from morl_robot.envs.mo_env import SparseTaskEnv, open_task_env
from morl_robot.envs.sparse import ReleaseSchedule, released_columns
from morl_robot.envs.task_runner import TaskRunner
from morl_robot.errors import ConfigError
from morl_robot.nodes import wire
from morl_robot.prism.resymnet import segment_data
from morl_robot.prism.sparse import episodes_from_chunks
from morl_robot.tasks.registry import load_task
from morl_robot.training.session import session_for_task

SPARSE = {"sparse": {"task": 0.0}}


def test_release_schedule_pays_the_accumulated_sum_on_release():
    s = ReleaseSchedule([0.0, 1.0])
    paid = [s.pay(np.array([1.0, 2.0]), done=False) for _ in range(3)] + [s.pay(np.array([0.5, 2.0]), done=True)]
    assert [p[0][0] for p in paid] == [0.0, 0.0, 0.0, 3.5]
    assert [p[0][1] for p in paid] == [2.0] * 4
    assert [bool(p[1][0]) for p in paid] == [False, False, False, True]


def test_sparse_key_names_an_objective():
    task = load_task("sawyer_peg_in_hole", None, {"sparse": {"insertion": 0.0}})
    with pytest.raises(ConfigError, match="'insertion' is not an objective.*task, wrist_force"):
        open_task_env(task)
    with pytest.raises(ConfigError, match=r"sparse.task.*\[0, 1\]"):
        open_task_env(load_task("sawyer_peg_in_hole", None, {"sparse": {"task": 2.0}}))


def _rollout(runner: TaskRunner, writer: ExperienceWriter, steps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Drive ``runner`` with random actions as an actor does (task_step out, experience rows in)."""
    labels = wire.task_step_labels(runner.objective_names, runner.observation_labels, runner.machine_labels)
    rec, flags = runner.reset(), []
    for _ in range(steps):
        ts = wire.split_task_step(runner.task_step_values(rec), labels)
        if rec.done:
            rec = runner.reset()
            continue
        action = rng.uniform(-1, 1, len(runner.action_labels))
        writer.acted(Pending(ts.observation, action, -1.0, 1, ts.episode, ts.step, np.zeros(0)))
        rec = runner.step(runner._lo + (action + 1) / 2 * runner._span, runner.action_labels)
        ts = wire.split_task_step(runner.task_step_values(rec), labels)
        flags.append(ts.machine)
        writer.observe(ts.episode, ts.step, ts.reward, ts.observation, ts.terminated, ts.truncated, ts.machine)
    return flags


def test_released_segments_travel_from_task_step_to_the_learner_and_back_into_episodes(tmp_path):
    """The sparse Sawyer task (its task reward paid at the episode's end): task_step and the
    experience carry ``released/task``; a learner session of that task expects the column and
    inserts the actor's chunks; the chunks give back episodes whose one segment per episode sums
    the true task reward (what ReSymNet trains on)."""
    task = load_task("sawyer_peg_in_hole", None, SPARSE)
    env = open_task_env(task)
    assert isinstance(env, SparseTaskEnv) and env.released_objectives == ("task",)
    runner = TaskRunner(env.robot, env, seed=3)
    assert runner.machine_labels == released_columns(["task"]) == ("released/task",)
    labels = wire.task_step_labels(runner.objective_names, runner.observation_labels, runner.machine_labels)
    assert task_step_layout(labels) == (2, 1)

    with config_overrides({"task": SPARSE}):
        session = session_for_task("sawyer_peg_in_hole", None, "sawyer_front", run_dir=tmp_path / "run")
    c = session.contract
    base = wire.experience_columns(c.input_labels, c.action_labels, c.objective_names, wire.machine_columns(()))
    ingest = session.accept_experience(base)
    assert ingest.columns == base + ("released/task",)

    chunks, tables = [], []
    writer = ExperienceWriter(0, 64, lambda table, cols: tables.append((table, cols)))
    writer.set_columns(ingest.columns)
    true_task = []
    orig_step = env.step

    def step(action):  # the true task reward, to check the released sums
        out = orig_step(action)
        true_task.append(float(out[4]["prism_true_reward"][0]))
        return out

    env.step = step
    flags = _rollout(runner, writer, 400, np.random.default_rng(0))
    writer.flush()
    env.close()
    assert tables and sum(f[0] for f in flags) >= 1  # at least one episode ended (160 steps each)
    for table, cols in tables:
        chunk = split_experience(table, cols)
        assert chunk.released_objectives == ("task",) and chunk.released.shape == (len(table), 1)
        assert not chunk.reward[~chunk.released[:, 0], 0].any()  # paid only on release
        ingest.add(chunk, cols)
        chunks.append(chunk)
    assert len(session.replay) == sum(len(t) for t, _ in tables)

    episodes = episodes_from_chunks(chunks, obs_dim=len(runner.observation_labels))
    ended = [e for e in episodes if e.released[:, 0].any()]
    assert ended
    t = 0
    for e in episodes:
        segs = e.segments(0)
        if segs:  # one segment: the whole episode, paid its true total
            assert segs[0][:2] == (0, len(e))
            assert segs[0][2] == pytest.approx(sum(true_task[t:t + len(e)]), rel=1e-4, abs=1e-4)
        assert e.released[:, 1].all()  # the dense objective: every step
        t += len(e)
    data = segment_data(ended, 0, [1])
    assert data.features.shape[1] == len(runner.observation_labels) + len(runner.action_labels) + 1
