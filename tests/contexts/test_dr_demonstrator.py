"""The scripted Sawyer demonstrator under domain randomisation (issue 37): it aims at each episode's hole.

It used to read the hole once (its first reset), so with ``hole_offset`` drawn per episode the
demonstrations of a DR run aimed up to 6 mm off a 1.5 mm clearance (24 % insertion under the training
distribution, 90 % after; results/generalization/sawyer_dr_trained/NOTES.md)."""
from __future__ import annotations

import numpy as np

from morl_robot.envs.mo_env import MORobotEnv

TASK = "sawyer_peg_in_hole"


def test_the_scripted_controller_aims_at_this_episodes_drawn_hole_not_the_first_one() -> None:
    env = MORobotEnv(TASK, overrides={"contexts": "train", "episode_duration": 0.25})
    try:
        act = env.task.scripted_policy(env)[0]  # built on the draw of seed 0
        first = env.task._hole[:3].copy()
        v_max = np.asarray(env.task._twist_hi[:3], dtype=np.float64)
        labels = list(env.observation_labels)
        tip = [labels.index(f"t-0/ee_{a}") for a in "xyz"]
        moved = 0
        for seed in range(1, 6):
            obs, _ = env.reset(seed=seed)
            hole = env.task._hole[:3].copy()  # this draw's hole (the landmark moves with the fixture)
            moved = max(moved, float(np.hypot(*(hole - first)[:2])))
            p = np.asarray(obs, dtype=np.float64)[tip]
            target = hole + [0.0, 0.0, 0.01]  # not yet over the axis: 1 cm above this hole's opening
            if np.hypot(*(p - hole)[:2]) <= 0.002:
                continue
            np.testing.assert_allclose(act(obs), np.clip(5.0 * (target - p) / v_max, -1, 1), atol=1e-3)
        assert moved > 0.002, "the draws should move the hole by more than the 2 mm alignment tolerance"
    finally:
        env.close()
