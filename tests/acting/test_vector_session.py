"""Sessions choose their actors: ``actors_kind: per-step`` (robot + monitor + policy server per
actor) or ``vectorized`` (one vector_actor per actor), checked like every session key."""
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
    per_step = train_nodes(load_session_config("train", {"task": "sawyer_peg_in_hole", "namespace": "v"}), tmp_path)
    assert [s.executable for s in per_step] == ["learner_node", "robot_node", "safety_monitor", "policy_server"]


@pytest.mark.parametrize("overrides, words", [
    ({"actors_kind": "batched"}, "allowed values: 'per-step', 'vectorized'"),
    ({"actors_kind": "vectorized", "backend": "hardware"}, "needs backend sim"),
    ({"vector_actor": {"envs": 0}}, "vector_actor.envs"),
    ({"vector_actor": {"num_envs": 4}}, "key 'vector_actor.num_envs': unknown key"),
])
def test_bad_actor_settings_are_named(overrides, words):
    with pytest.raises(ConfigError, match=words):
        load_session_config("train", {"task": "sawyer_peg_in_hole", **overrides})
