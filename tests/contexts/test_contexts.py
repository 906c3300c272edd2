"""Contexts as data (issue 37): the YAML schema's errors, application at reset through the robot
interface (nominal restored exactly, a heavier tool weighs m·g more on the wrist), sampling seeded."""
from __future__ import annotations

import numpy as np
import pytest

from morl_robot.contexts import context_names, load_contexts
from morl_robot.contexts.schema import parse_contexts
from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.errors import ConfigError, UnknownNameError

MODEL_ARRAYS = ("body_mass", "body_inertia", "geom_friction", "dof_damping", "body_pos",
                "actuator_gainprm", "actuator_biasprm")


@pytest.fixture(scope="module")
def contexts():
    return load_contexts("sawyer_peg_in_hole")


@pytest.fixture(scope="module")
def env():
    e = MORobotEnv("sawyer_peg_in_hole")
    yield e
    e.close()


def _base(**over):
    data = {"task": "t", "parameters": {"tool_mass": {"kind": "mass", "targets": ["tool"]},
                                        "lag": {"kind": "latency"}},
            "training": {"tool_mass": [0.8, 1.2]}, "held_out": {"heavy": {"tool_mass": 3.0}}}
    data.update(over)
    return data


@pytest.mark.parametrize("patch, key", [
    ({"parameters": {"tool_mass": {"kind": "weight", "targets": ["tool"]}}}, "parameters.tool_mass.kind"),
    ({"parameters": {"tool_mass": {"kind": "mass"}}}, "parameters.tool_mass.targets"),
    ({"training": {"tool_mass": [1.2, 0.8]}}, "training.tool_mass"),
    ({"training": {"nope": [0, 1]}}, "training.nope"),
    ({"held_out": {"heavy": {"tool_mass": -1.0}}}, "held_out.heavy.tool_mass"),
    ({"held_out": {"laggy": {"lag": "slow"}}}, "held_out.laggy.lag"),
    ({"extra": 1}, "extra"),
])
def test_schema_errors_name_the_file_and_the_key(patch, key):
    with pytest.raises(ConfigError) as err:
        parse_contexts(_base(**patch), "ctx.yaml")
    assert str(err.value).startswith(f"ctx.yaml: '{key}':"), str(err.value)


def test_shipped_file_and_outside_training(contexts):
    assert contexts.task == "sawyer_peg_in_hole"
    assert contexts.named("heavy_tool").outside == ("tool_mass",)
    assert contexts.named("inside_mix").outside == ()
    with pytest.raises(UnknownNameError, match="heavy_tool"):
        contexts.named("heavy_tol")


def test_context_then_nominal_restores_the_nominal_model_exactly(env, contexts):
    m = env.robot.model
    nominal = {k: getattr(m, k).copy() for k in MODEL_ARRAYS}
    obs0, _ = env.reset(seed=3)
    first = env.step(np.full(env.action_space.shape, -0.5))[0]
    for name in ("heavy_tool", "slippery_fixture", "weak_actuators", "inside_mix"):
        env.set_contexts(contexts.named(name))
        env.reset(seed=3)
        env.step(np.full(env.action_space.shape, -0.5))
    env.set_contexts(contexts.nominal)
    obs1, info = env.reset(seed=3)
    assert info["context"] == "nominal"
    for k, v in nominal.items():
        assert np.array_equal(getattr(m, k), v), k
    assert np.array_equal(obs0, obs1)
    assert np.array_equal(first, env.step(np.full(env.action_space.shape, -0.5))[0])
    env.set_contexts(None)


def test_heavier_tool_weighs_m_g_more_on_the_wrist_at_rest(env, contexts):
    env.set_contexts(contexts.nominal)
    env.reset(seed=0)
    f0 = env.robot.read_state().wrench[:3].copy()
    env.set_contexts(contexts.named("heavy_tool"))  # tool_mass × 3: +2 × 0.35 kg
    env.reset(seed=0)
    f1 = env.robot.read_state().wrench[:3].copy()
    env.set_contexts(None)
    tool = env.robot.model.body("tool").id
    dm = 2.0 * env.robot._nominal["body_mass"][tool]
    assert np.linalg.norm(f1 - f0) == pytest.approx(dm * 9.81, rel=0.01)
    assert np.linalg.norm(f1) > np.linalg.norm(f0)


def test_same_seed_same_sampled_context(env, contexts):
    env.set_contexts(contexts)  # the training distribution: one draw per episode
    drawn = []
    for seed in (7, 8, 7):
        env.reset(seed=seed)
        drawn.append(env.context.values)
    env.set_contexts(None)
    assert drawn[0] == drawn[2] and drawn[0] != drawn[1]
    a, b = (contexts.sample(np.random.default_rng(5)) for _ in range(2))
    assert a.values == b.values and not a.outside


def test_bias_after_the_tare_and_latency_delays_commands(env, contexts):
    zero = np.zeros(env.action_space.shape)
    env.set_contexts(contexts.nominal)
    env.reset(seed=1)
    w0 = env.step(zero)[4]["wrench"].copy()
    env.set_contexts(contexts.named("biased_ft"))
    env.reset(seed=1)
    w1 = env.step(zero)[4]["wrench"].copy()
    assert np.allclose(w1 - w0, [3, -2, 5, 0, 0, 0], atol=1e-9)
    # a link of one control period: the first command (full speed down) arrives one step late
    down = zero.copy()
    down[list(env.action_labels).index("vz")] = -1.0
    z = {}
    for name in ("nominal", "lag"):
        env.set_contexts(contexts.nominal if name == "nominal" else
                         contexts._context("lag", {"latency": env.task.config.control_period}))
        env.reset(seed=1)
        z0 = env.state.ee_pose[2]
        env.step(down)
        z[name] = env.state.ee_pose[2] - z0
    env.set_contexts(None)
    assert z["nominal"] < -1e-3 and abs(z["lag"]) < 0.2 * abs(z["nominal"])


def test_driver_emulator_applies_the_same_context_by_the_same_name():
    from morl_robot.contexts.schema import context_by_reference
    from morl_robot.robots.config import load_robot_config
    from morl_robot.robots.emulation import DriverEmulatorCore, LinkFaults

    config = load_robot_config("sawyer")
    heavy = context_by_reference("sawyer_peg_in_hole:heavy_tool").robot_context()
    forces = []
    for ctx in (None, heavy):
        core = DriverEmulatorCore(config, scene="sawyer/peg_in_hole.xml", context=ctx)
        core.step()
        forces.append(core.wrench().force * core.codec.force_scale)
        core.close()
    assert np.linalg.norm(forces[1] - forces[0]) == pytest.approx(2 * 0.35 * 9.81, rel=0.02)
    laggy = context_by_reference("sawyer_peg_in_hole:laggy_link").robot_context()
    faults = LinkFaults(latency=0.01, drop=0.1).with_context(laggy)
    assert (faults.latency, faults.jitter, faults.drop) == pytest.approx((0.11, 0.05, 0.1))
    with pytest.raises(ConfigError, match="TASK_OR_FILE:NAME"):
        context_by_reference("laggy_link")


@pytest.mark.parametrize("task", context_names())
def test_every_shipped_context_applies_to_its_task(task):
    cs = load_contexts(task)
    assert cs.task == task
    e = MORobotEnv(task)
    try:
        for ctx in [cs.nominal, cs.sample(np.random.default_rng(0)), *map(cs.named, cs.held_out)]:
            e.set_contexts(ctx)
            _, info = e.reset(seed=0)  # every MJCF name resolves
            assert info["context"] == ctx.name
    finally:
        e.close()


def test_a_context_moves_only_fixed_fixtures(env):
    """``body_offset`` may move a static body of the world (the fixture), never a body with joints or
    one attached to another (the arm's links): what the safety boxes' ``body`` key may name too."""
    from morl_robot.robots.context import RobotContext

    env.robot.apply_context(RobotContext(name="moved", body_offset={"fixture": (0.001, 0.0, 0.0)}))
    with pytest.raises(ConfigError, match="body 'right_l6' is not a static body of the world"):
        env.robot.apply_context(RobotContext(name="bad", body_offset={"right_l6": (0.001, 0.0, 0.0)}))
    env.robot.apply_context(None)
