"""Sessions choose their actors: ``actors_kind: per-step`` (robot + monitor + policy server per
actor), ``vectorized`` (one vector_actor per actor) or ``auto`` (vectorized on backend sim unless the
session needs per-step actors), checked like every session key."""
from __future__ import annotations

import pytest

from morl_robot.errors import ConfigError
from morl_robot.session.config import load_session_config
from morl_robot.session.graph import train_nodes


def test_a_vectorized_session_runs_one_vector_actor_per_actor_feeding_the_learner(tmp_path):
    cfg = load_session_config("train", {"task": "sawyer_peg_in_hole", "actors": 2, "actors_kind": "vectorized",
                                        "vector_actor": {"envs": 4}, "namespace": "v"})
    specs = train_nodes(cfg, tmp_path)
    assert [s.executable for s in specs] == ["learner_node", "vector_actor", "vector_actor"]
    for i, spec in enumerate(specs[1:]):
        assert spec.namespace == f"/v/actor{i}"
        assert spec.parameters["actor_id"] == i and spec.parameters["envs"] == 4
        assert spec.remappings == {"policy_snapshot": "/v/policy_snapshot", "experience": "/v/experience",
                                   "experience_allowance": "/v/experience_allowance"}
    assert specs[1].parameters["seed"] != specs[2].parameters["seed"]
    per_step = train_nodes(load_session_config("train", {"task": "sawyer_peg_in_hole", "namespace": "v",
                                                         "actors_kind": "per-step"}), tmp_path)
    assert [s.executable for s in per_step] == ["learner_node", "robot_node", "safety_monitor", "policy_server"]


def test_auto_is_vectorized_for_simulated_training_by_default(tmp_path):
    """config/sessions/train.yaml says auto: backend sim, nothing per-step-only -> vector actors."""
    cfg = load_session_config("train", {"task": "sawyer_peg_in_hole"})
    assert cfg.actors_kind == "auto"
    assert [s.executable for s in train_nodes(cfg, tmp_path)] == ["learner_node", "vector_actor"]
    assert cfg.actors_kind == "vectorized"


@pytest.mark.parametrize("overrides, record, live_view, reason", [
    ({"backend": "hardware"}, False, False, "backend hardware"),
    ({"use_sim_time": True}, False, False, "use_sim_time"),
    ({}, True, False, "--record"),
    ({}, False, True, "--foxglove"),
    ({"robot_node": {"video_dir": "videos"}}, False, False, "robot_node.video_dir"),
])
def test_auto_keeps_per_step_when_the_session_needs_it_and_says_why(tmp_path, overrides, record, live_view, reason):
    from morl_robot.session.graph import resolve_actors_kind

    cfg = load_session_config("train", {"task": "sawyer_peg_in_hole", **overrides})
    assert reason in resolve_actors_kind(cfg, record=record, live_view=live_view)
    assert cfg.actors_kind == "per-step"
    assert "robot_node" in [s.executable for s in train_nodes(cfg, tmp_path)]


def test_auto_in_the_demo_session_and_a_resumed_demo_run(tmp_path):
    """demo.yaml (the Sawyer recipe, learning from 50 demonstrations) runs a vector actor that acts
    the demonstrations; its resumed sessions act none."""
    from morl_robot.session.graph import resolve_actors_kind

    demo = load_session_config("demo")
    assert resolve_actors_kind(demo) == "" and demo.actors_kind == "vectorized"
    (actor,) = [s for s in train_nodes(demo, tmp_path) if s.executable == "vector_actor"]
    assert actor.parameters["demonstrations"] == 50 and actor.parameters["demonstration_noise"] > 0
    resumed = load_session_config("demo")
    (actor,) = [s for s in train_nodes(resumed, tmp_path, session_index=1) if s.executable == "vector_actor"]
    assert resumed.actors_kind == "vectorized" and actor.parameters["demonstrations"] == 0


def test_a_shadow_recipe_session_gives_vector_actors_its_task_config(tmp_path):
    cfg = load_session_config("shadow_touch", {"actors_kind": "vectorized"})
    (actor,) = [s for s in train_nodes(cfg, tmp_path, session_index=1) if s.executable == "vector_actor"]
    assert actor.parameters["task_config"] == "delta/shadow_touch"


@pytest.mark.parametrize("overrides, words", [
    ({"actors_kind": "batched"}, "allowed values: 'auto', 'per-step', 'vectorized'"),
    ({"actors_kind": "vectorized", "backend": "hardware"}, "needs backend sim"),
    ({"vector_actor": {"envs": 0}}, "vector_actor.envs"),
    ({"vector_actor": {"num_envs": 4}}, "key 'vector_actor.num_envs': unknown key"),
])
def test_bad_actor_settings_are_named(overrides, words):
    with pytest.raises(ConfigError, match=words):
        load_session_config("train", {"task": "sawyer_peg_in_hole", **overrides})
