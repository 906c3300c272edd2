"""The approach rule's obstacle boxes move with the body a context moves (safety YAML
``approach.obstacles.<box>.body``): a moved fixture (``hole_offset``) is a placement, so its boxes are
where the fixture is, in the shield, the arrival limit and the inner layer, as the hardware landmarks
are re-measured (results/generalization/sawyer_dr_contact/NOTES.md: before, inside_mix episodes
stalled on the fixture's top against boxes 2.8 mm off the real surfaces)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from morl_robot.cli import main
from morl_robot.contexts.schema import context_by_reference
from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.safety.compiled import load_rules
from morl_robot.safety.inner import InnerSafety

TASK = "sawyer_peg_in_hole"
FIXTURE_BOXES = ("fixture_base", "fixture_px", "fixture_nx", "fixture_py", "fixture_ny")
POLICY = Path(__file__).resolve().parents[2] / "results/generalization/sawyer_dr_contact/policies/conditioned_seed1.onnx"


def test_a_context_that_moves_the_fixture_moves_its_boxes_by_that_offset_and_no_other_box() -> None:
    rules = load_rules("sawyer")
    ctx = context_by_reference(f"{TASK}:inside_mix").robot_context(0)  # hole_offset (2, -2, 0) mm
    assert ctx.body_offset == {"fixture": pytest.approx((0.002, -0.002, 0.0))}
    placed = rules.placed(ctx).approach
    nominal = rules.approach
    assert placed is not None and nominal is not None
    for i, name in enumerate(nominal.names):
        shift = (0.002, -0.002, 0.0) if name in FIXTURE_BOXES else (0.0, 0.0, 0.0)
        np.testing.assert_allclose(placed.lower[i] - nominal.lower[i], shift, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(placed.upper[i] - nominal.upper[i], shift, atol=1e-12, err_msg=name)
    assert set(FIXTURE_BOXES) < set(nominal.names) and "table" in nominal.names
    # a context that moves nothing, and no context, leave the rules as the YAML measured them
    assert rules.placed(context_by_reference(f"{TASK}:heavy_tool").robot_context(0)) is rules
    assert rules.placed(None) is rules
    inner = InnerSafety(rules)
    inner.place(ctx)
    np.testing.assert_allclose(inner.rules.approach.lower, placed.lower)
    inner.place(None)
    assert inner.rules is rules


def test_the_episodes_shield_and_arrival_limit_use_the_boxes_where_the_context_put_the_fixture() -> None:
    from morl_robot.safety.shield import SafetyShield

    env = MORobotEnv(TASK, overrides={"contexts": "inside_mix"})
    try:
        shield = SafetyShield(env)
        moved = load_rules("sawyer").placed(context_by_reference(f"{TASK}:inside_mix").robot_context(0)).approach
        for seed in (90000, 90001):
            _, _ = env.reset(seed=seed)
            shield.begin(env._state)
            env.step(np.zeros(env.action_space.shape))
            np.testing.assert_allclose(shield.monitor.rules.approach.lower, moved.lower)
            np.testing.assert_allclose(env._arrival[0].rules.approach.lower, moved.lower)
        env.set_contexts(None)  # back to the nominal cell: the boxes too
        env.reset(seed=90002)
        shield.begin(env._state)
        env.step(np.zeros(env.action_space.shape))
        nominal = load_rules("sawyer").approach
        np.testing.assert_allclose(shield.monitor.rules.approach.lower, nominal.lower)
        np.testing.assert_allclose(env._arrival[0].rules.approach.lower, nominal.lower)
    finally:
        env.close()


def test_on_a_moved_fixture_a_policy_aligned_with_the_hole_is_not_stopped_on_the_fixtures_top(
        capsys: pytest.CaptureFixture[str]) -> None:
    # with the nominal boxes these four inside_mix episodes of the committed DR policy ended on the
    # fixture's top, not inserted (peaks 21-24 N): the peg over the moved hole was within 1.5 mm of a
    # nominal wall box, slowed to 5 mm/s toward it
    rc = main(["evaluate", str(POLICY), "--preference", "0.1", "0.005", "--set", "task.contexts=inside_mix",
               "--episodes", "4", "--seed", "90004", "--json", "--no-progress"])
    assert rc == 0
    episodes = json.loads(capsys.readouterr().out)["per_episode"]
    assert [e["success"] for e in episodes] == [True] * 4, [(e["success"], e["peak_force"]) for e in episodes]
    assert max(e["peak_force"] for e in episodes) <= 30.0


def test_an_approach_box_on_an_unknown_body_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["evaluate", "scripted", "--task", TASK, "--set", "safety.approach.obstacles.fixture_px.body=fixtre",
               "--episodes", "1", "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "approach.obstacles.fixture_px.body" in err and "'fixtre' is not a static body" in err, err
    assert "fixture" in err.split("can move:")[1], err
