"""The vectorized simulated actor's core (no ROS): B environments reset and step independently,
with per-environment seeds and episode boundaries in the experience it writes, and every command
through the robot's safety rules (a hard-rule violation is held within the same step)."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from morl_robot.acting.experience import split_experience
from morl_robot.acting.vector import ENV_SEED_STRIDE, VectorActor, VectorActorConfig
from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.errors import ConfigError
from morl_robot.resources import config_path
from morl_robot.serving.runtime import OnnxPolicy

TASK = "sawyer_peg_in_hole"


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    from morl_robot.bench.graph import _export_policy

    path = tmp_path_factory.mktemp("policy") / "policy.onnx"
    _export_policy(TASK, path)
    return path


@pytest.fixture(scope="module")
def short_task(tmp_path_factory):
    """The peg task with 0.5 s episodes (10 steps at 20 Hz): several episodes per environment."""
    data = yaml.safe_load(config_path(f"tasks/{TASK}.yaml").read_text())
    data["episode_duration"] = 0.5
    path = tmp_path_factory.mktemp("task") / "short.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(actor: VectorActor, steps: int) -> None:
    for _ in range(steps):
        actor.step()
    actor.flush()


def test_environments_reset_and_step_independently_with_their_seeds_in_the_experience(policy_file, short_task):
    chunks = []
    cfg = VectorActorConfig(TASK, envs=3, actor_index=2, seed=7, chunk_size=8, task_config=str(short_task))
    actor = VectorActor(cfg, lambda table, columns: chunks.append(split_experience(table, columns)))
    assert actor.install(OnnxPolicy.from_file(policy_file)) == ""
    run(actor, 35)
    by_actor: dict[int, list] = {}
    for c in chunks:
        by_actor.setdefault(c.actor, []).append(c)
    assert sorted(by_actor) == [6, 7, 8]  # actor ids actor_index·B + b
    reference = MORobotEnv(TASK, config_file=short_task)
    try:
        first_obs = {}
        for b, actor_id in enumerate(sorted(by_actor)):
            rows = by_actor[actor_id]
            episode = np.concatenate([c.episode for c in rows]).astype(int)
            step = np.concatenate([c.step for c in rows]).astype(int)
            obs = np.concatenate([c.obs for c in rows])
            next_obs = np.concatenate([c.next_obs for c in rows])
            done = np.concatenate([c.terminated | c.truncated for c in rows])
            assert list(np.unique(episode)) == [1, 2, 3, 4], "35 steps of 10-step episodes: 3 done, a 4th begun"
            for e in (1, 2, 3):  # each finished episode: steps 0..n-1 in order, the last one ends it
                mine = np.flatnonzero(episode == e)
                assert list(step[mine]) == list(range(len(mine)))
                assert done[mine[-1]] and not done[mine[:-1]].any()
                assert np.allclose(obs[mine[1:]], next_obs[mine[:-1]])  # consecutive transitions
                # the episode started from the reset with its seed: seed + b·stride + e
                seed = cfg.seed + b * ENV_SEED_STRIDE + e
                assert actor.episode_seed(actor_id, e) == seed
                o0, _ = reference.reset(seed=seed)
                assert np.allclose(obs[mine[0]], o0), (actor_id, e)
            first_obs[actor_id] = obs[0]
        # independent environments: different seeds, different starts
        assert not np.allclose(first_obs[6], first_obs[7]) and not np.allclose(first_obs[7], first_obs[8])
    finally:
        reference.close()
        actor.close()


def test_a_command_violating_a_hard_rule_is_held_in_the_same_step(policy_file, tmp_path):
    # the wrist reading at rest holds the tool's weight (3.4 N): with a 1 N collision level that
    # holds (instead of latching), every command violates the hard force rule
    data = yaml.safe_load(config_path("safety/sawyer.yaml").read_text())
    data["wrench"] = {"force_norm": {"contact": 0.5, "collision": 1.0, "unit": "N", "on_contact": "clamp",
                                     "on_collision": "hold"}}
    data.setdefault("opt_out", {})["wrench.force_norm.on_collision"] = "test: a hold instead of the latched e-stop"
    safety = tmp_path / "strict.yaml"
    safety.write_text(yaml.safe_dump(data))
    chunks = []
    actor = VectorActor(VectorActorConfig(TASK, envs=2, safety=str(safety)), lambda t, c: chunks.append(t))
    try:
        assert actor.install(OnnxPolicy.from_file(policy_file)) == ""
        start = [r.state.ee_pose[:3].copy() for r in actor.records]
        for _ in range(5):
            actor.step()
        assert actor.counters["held"] == 10
        for rec, tip0 in zip(actor.records, start):
            # the peg task's hold command is a zero twist (a task step, as the robot node executes
            # it): the peg tip stays where it was instead of following the policy (the task still
            # turns the peg toward the hole's axis, orientation_goal: hole)
            assert rec.step == 5
            assert np.allclose(rec.state.ee_pose[:3], tip0, atol=0.002)
        for shield in actor.shields:
            assert shield.monitor is not None and shield.monitor.counters["held"] == 5
            assert any(v.rule.startswith("wrench") for v in shield.recent)
        actor.flush()
        assert chunks == []  # a held command is no transition
    finally:
        actor.close()


def test_a_seeded_run_is_reproducible_to_the_bit(policy_file, short_task):
    """Same seeds and policy: the same experience tables and the same safety decisions, bit for bit
    (what the actor computes does not depend on anything but its settings)."""
    def record():
        chunks = []
        actor = VectorActor(VectorActorConfig(TASK, envs=3, seed=11, chunk_size=8, task_config=str(short_task)),
                            lambda table, columns: chunks.append((table.copy(), columns)))
        try:
            assert actor.install(OnnxPolicy.from_file(policy_file)) == ""
            run(actor, 25)
            return chunks, [s.summary() for s in actor.shields], [[repr(v) for v in s.recent] for s in actor.shields]
        finally:
            actor.close()

    (first, summary, events), (second, summary2, events2) = record(), record()
    assert len(first) == len(second) > 0 and summary == summary2 and events == events2
    assert sum(s["clamped"] for s in summary) > 0  # the safety rules shaped some commands
    for (a, cols), (b, cols2) in zip(first, second):
        assert cols == cols2 and a.tobytes() == b.tobytes()


def test_the_safety_rules_clamp_what_the_policy_commands(policy_file):
    actor = VectorActor(VectorActorConfig(TASK, envs=2), lambda t, c: None)
    try:
        actor.install(OnnxPolicy.from_file(policy_file))
        for _ in range(10):
            assert actor.step() == 2
        assert sum(s.summary()["commands"] for s in actor.shields) == 20
    finally:
        actor.close()


def test_bad_settings_and_incompatible_models_are_named(policy_file):
    with pytest.raises(ConfigError, match="envs"):
        VectorActor(VectorActorConfig(TASK, envs=0), lambda t, c: None)
    from morl_robot.bench.graph import _export_policy

    actor = VectorActor(VectorActorConfig(TASK, envs=1), lambda t, c: None)
    try:
        assert actor.install(OnnxPolicy.from_file(policy_file)) == ""
        with pytest.raises(RuntimeError, match="no policy"):
            VectorActor(VectorActorConfig(TASK, envs=1), lambda t, c: None).step()
        import tempfile
        from pathlib import Path

        other = Path(tempfile.mkdtemp()) / "touch.onnx"
        _export_policy("shadow_touch", other)
        assert "differ" in actor.install(OnnxPolicy.from_file(other))
    finally:
        actor.close()


def test_a_reward_machine_task_sends_the_machine_columns_the_learner_expects(tmp_path, short_task):
    """``reward_machine``: the environments run the task in its product machine; the rows carry
    the machine columns (env_terminated, label/<proposition>…) and fit the learner node's layout."""
    from morl_robot.acting.experience import experience_columns
    from morl_robot.reward_machines.columns import machine_columns
    from morl_robot.training.session import session_for_task

    spec, path = "sawyer/peg_touch_then_insert", tmp_path / "rm.onnx"
    learner = session_for_task(TASK, str(short_task), "mo_mpo_cpu_small", reward_machine=spec,
                               on_snapshot=lambda version, data: path.write_bytes(data))
    learner.publish_policy()
    c = learner.contract
    learner.accept_experience(experience_columns(c.input_labels, c.action_labels, c.objective_names,
                                                 machine_columns(learner.propositions)))
    tables = []
    cfg = VectorActorConfig(TASK, envs=2, chunk_size=8, task_config=str(short_task), reward_machine=spec)
    actor = VectorActor(cfg, lambda table, columns: tables.append((table, columns)))
    assert actor.install(OnnxPolicy.from_file(path)) == ""
    run(actor, 25)
    columns = tables[0][1]
    assert columns[-6:] == ("terminated", "truncated", "env_terminated", "label/touching_fixture",
                            "label/force_over_limit", "label/inserted")
    assert all(learner.receive(lambda t=t: t, split_experience) for t in tables)
    assert learner.counters["env_steps"] == sum(len(t) for t, _ in tables) > 0
    assert np.all(learner.replay._label[learner.replay._valid] >= 0)
    actor.close()


def test_demonstrations_are_acted_in_the_environments_and_the_clone_acts_after_them(tmp_path, short_task):
    """``demonstrations`` N: the first N episodes (all environments, in the order they begin) are
    acted by the task's noisy demonstrator, written with policy_version 0; an environment whose
    next episode is no demonstration waits until the learner's clone (a newer version) arrives.
    The learner receives exactly those episodes as demonstrations and clones them."""
    from morl_robot.acting.demonstrator import task_demonstrator
    from morl_robot.acting.experience import experience_columns
    from morl_robot.training.session import session_for_task
    from tests.conftest import tiny_learner_yaml

    yaml_path, policy = tmp_path / "demos.yaml", tmp_path / "policy.onnx"
    yaml_path.write_text(tiny_learner_yaml(1.0, demonstrations="{episodes: 3, action_noise: 0.05, "
                                                               "pretrain_updates: 20, critic_warmup_updates: 0}"))
    learner = session_for_task(TASK, str(short_task), str(yaml_path),
                               on_snapshot=lambda version, data: policy.write_bytes(data))
    learner.publish_policy()
    c = learner.contract
    learner.accept_experience(experience_columns(c.input_labels, c.action_labels, c.objective_names))
    learner.start()
    tables = []
    cfg = VectorActorConfig(TASK, envs=2, chunk_size=8, task_config=str(short_task), demonstrations=3,
                            demonstration_noise=0.05)
    actor = VectorActor(cfg, lambda table, columns: tables.append((table, columns)))
    try:
        assert actor.install(OnnxPolicy.from_file(policy)) == ""
        first = actor.policy.version
        steps = 0
        while not actor.awaiting_clone():  # env 0 acts episodes 1 and 2, env 1 episode 1, then waits
            actor.step()
            steps += 1
            assert steps <= 25
        assert steps == 20 and actor.clone_after == first and actor.step() == 0  # nobody acts the old policy
        chunks = [split_experience(t, cols) for t, cols in tables]
        assert {int(v) for ch in chunks for v in ch.policy_version} == {0}
        assert sorted({(ch.actor, int(e)) for ch in chunks for e in ch.episode}) == [(0, 1), (0, 2), (1, 1)]
        demonstrator = task_demonstrator(TASK)  # the noise-free controller: the rows are it plus 0.05 noise
        for ch in chunks:
            mean = np.stack([np.clip(demonstrator(o), -1, 1) for o in ch.obs])
            assert np.abs(ch.action - mean).max() < 0.3 and np.abs(ch.action - mean).mean() < 0.06
        assert actor.counters["demonstration_episodes"] == 3 and actor.counters["demonstration_steps"] == 30

        assert all(learner.receive(lambda t=t: t, split_experience) for t in tables)
        assert learner.demonstrations_complete and learner.counters["demonstration_episodes"] == 3
        learner.tick(deadline=0.0)  # clones the 30 demonstration steps, publishes the next version
        assert not learner.demonstrating
        assert actor.install(OnnxPolicy.from_file(policy)) == "" and actor.policy.version > first
        assert not actor.awaiting_clone() and actor.step() == 2
        tables.clear()
        run(actor, 9)
        versions = {int(v) for t, cols in tables for v in split_experience(t, cols).policy_version}
        assert versions == {actor.policy.version}
    finally:
        actor.close()
