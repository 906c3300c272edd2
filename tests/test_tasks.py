"""The four tasks as Gymnasium envs: registration, spaces, reward ranges, determinism,
terminations."""
import gymnasium as gym
import numpy as np
import pytest

import morl_robot  # noqa: F401  (registers the envs)
from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.envs.registration import ENV_IDS
from morl_robot.tasks.shadow_hand import pain_penalty

EXPECTED = {
    "sawyer_peg_in_hole": (("task", "wrist_force"), 3, 99),
    "shadow_touch": (("task", "pain"), 20, 63),
    "shadow_turn": (("task", "pain"), 20, 63),
    "shadow_orient": (("touch", "lift", "orient"), 20, 63),
}


@pytest.mark.parametrize("env_id, task", list(ENV_IDS.items()))
def test_registered_env_follows_mo_gymnasium(env_id, task):
    env = gym.make(env_id)
    names, act, obs_dim = EXPECTED[task]
    u = env.unwrapped
    assert u.objective_names == names and u.reward_space.shape == (len(names),)
    assert env.action_space.shape == (act,) and env.observation_space.shape == (obs_dim,)
    assert len(u.observation_labels) == obs_dim
    obs, info = env.reset(seed=0)
    assert obs.shape == (obs_dim,) and np.all(np.isfinite(obs))
    obs, reward, _terminated, _truncated, info = env.step(env.action_space.sample())
    assert isinstance(reward, np.ndarray) and reward.shape == (len(names),)
    assert "termination" in info
    env.close()


@pytest.mark.parametrize("task", list(EXPECTED))
def test_rewards_within_documented_range(task):
    env = MORobotEnv(task)
    lo, hi = env.reward_space.low, env.reward_space.high
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(300):
        _, r, te, tr, _ = env.step(rng.uniform(-1, 1, env.action_space.shape))
        assert np.all(r >= lo - 1e-9) and np.all(r <= hi + 1e-9), (r, lo, hi)
        if te or tr:
            env.reset()
    env.close()


@pytest.mark.parametrize("task", list(EXPECTED))
def test_same_seed_same_trajectory(task):
    def run():
        env = MORobotEnv(task)
        obs, _ = env.reset(seed=42)
        rng = np.random.default_rng(7)
        out = [obs]
        for _ in range(25):
            obs, r, *_ = env.step(rng.uniform(-1, 1, env.action_space.shape))
            out.append(np.concatenate([obs, r]))
        env.close()
        return out

    a, b = run(), run()
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_different_seeds_differ():
    env = MORobotEnv("shadow_turn")
    _a, _ = env.reset(seed=1)
    ia = env.robot.read_state().sensors["dial_angle"].copy()
    env.reset(seed=2)
    ib = env.robot.read_state().sensors["dial_angle"].copy()
    assert not np.array_equal(ia, ib)
    env.close()


def test_time_limit_truncates():
    env = MORobotEnv("shadow_touch")
    env.reset(seed=0)
    lo, hi = env.robot.spec.command_bounds(env.robot.control_mode)
    open_hand = np.clip(2.0 * (0.0 - lo) / (hi - lo) - 1.0, -1, 1)  # motor targets 0: hand open
    for i in range(env.task.max_steps):
        _, _, te, tr, info = env.step(open_hand)
        if te or tr:
            break
    assert tr and info["termination"] == "time_limit" and i == env.task.max_steps - 1
    env.close()


def test_pressing_the_block_succeeds():
    """Flexing the wrist and the four fingers at J3 (J1/J2 straight) presses the block past 5 N:
    'success'.  The fingers alone (wrist still) no longer reach it (calibrated start pose)."""
    env = MORobotEnv("shadow_touch")
    env.reset(seed=0)
    labels = env.task.action_labels
    action = np.zeros(env.action_space.shape)
    action[labels.index("rh_WRJ1")] = 1.0
    for f in ("FF", "MF", "RF", "LF"):
        action[labels.index(f"rh_{f}J3")] = 0.5
        action[labels.index(f"rh_{f}J0")] = -1.0
    reason, total = None, np.zeros(2)
    for _ in range(env.task.max_steps):
        _, r, te, tr, info = env.step(action)
        total += r
        if te or tr:
            reason = info["termination"]
            break
    assert reason == "success" and info["block_force"] > 5.0 and total[0] == 1.0
    env.close()


def test_force_threshold_terminates_peg_episode():
    """Driving the peg down onto the fixture next to the hole exceeds the force threshold, when the
    arm executes the command stiffly (contact control 'stiff'; the compliant controller stops
    pressing below it, tests/test_compliance.py)."""
    from morl_robot.envs.mo_env import set_contact_control

    env = MORobotEnv("sawyer_peg_in_hole", overrides={"force_threshold": 15.0, "episode_duration": 20.0})
    set_contact_control(env, "stiff")
    env.reset(seed=0)
    hole = env.robot.landmark("hole_top")[:3]
    reason = None
    for _ in range(400):
        tip = env.robot.read_state().ee_pose[:3]
        goal = hole + np.array([0.03, 0.0, -0.05])  # beside the hole, below the surface
        err = goal - tip
        action = np.clip(err / 0.02, -1, 1)
        _, _r, te, tr, info = env.step(action)
        if te or tr:
            reason = info["termination"]
            break
    assert reason == "force_threshold"
    assert info["force_norm"] > 15.0
    env.close()


def test_peg_force_below_threshold_does_not_terminate():
    env = MORobotEnv("sawyer_peg_in_hole", overrides={"force_threshold": 1000.0, "force_reward_clip": 3000.0})
    env.reset(seed=0)
    for _ in range(60):
        _, _, te, _, _ = env.step(np.array([0.0, 0.0, -1.0]))
        assert not te
    env.close()


def test_pain_penalty_definition():
    prev = np.zeros(15)
    slow = np.full(15, 0.5)  # rises below the impact threshold: no pain
    assert pain_penalty(slow, prev, 1.0, 20.0) == 0.0
    hit = prev.copy()
    hit[0] = 4.0  # a 4 N jump in one step on one pad: 3 N above the threshold
    assert pain_penalty(hit, prev, 1.0, 20.0) == pytest.approx(-3.0)
    assert pain_penalty(np.full(15, 100.0), prev, 1.0, 20.0) == -20.0  # clipped


def test_bad_action_is_rejected():
    env = MORobotEnv("sawyer_peg_in_hole")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must have shape \(3,\)"):
        env.step(np.zeros(4))
    with pytest.raises(ValueError, match="non-finite"):
        env.step(np.array([0.0, np.nan, 0.0]))
    env.close()


def test_orient_objectives_at_rest():
    """The peg lies flat at the start: not touched, not lifted, not standing (orient ≈ 0)."""
    env = MORobotEnv("shadow_orient")
    env.reset(seed=0)
    lo, hi = env.robot.spec.command_bounds(env.robot.control_mode)
    open_hand = np.clip(2.0 * (0.0 - lo) / (hi - lo) - 1.0, -1, 1)
    _, r, *_ = env.step(open_hand)
    assert r[0] == 0.0 and r[1] < 0.01 and r[2] < 0.05
    env.close()


def test_peg_hole_offset_observation_and_fine_shaping():
    """observe_hole_offset adds the peg tip − hole offset in mm to every frame (unit 'mm' in the
    contract); fine_shaping_scale makes the task reward resolve millimetres near the hole axis."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.serving.contract import contract_for_task

    env = MORobotEnv("sawyer_peg_in_hole", overrides={"observe_hole_offset": True, "fine_shaping_scale": 0.005})
    obs, _ = env.reset(seed=3)
    labels = list(env.observation_labels)
    assert "t-0/hole_offset_x" in labels and len(labels) == len(obs)
    i = labels.index("t-0/hole_offset_x")
    expected_mm = (env.state.ee_pose[:3] - env.task._hole[:3]) * 1e3
    assert np.allclose(obs[i:i + 3], expected_mm)
    contract = contract_for_task(env.task, env.robot)
    assert contract.observation_units[i] == "mm"
    env.close()

    def task_reward(fine: float, offset_m: float) -> float:
        from morl_robot.robots.spec import RobotState

        e = MORobotEnv("sawyer_peg_in_hole", overrides={"fine_shaping_scale": fine})
        e.reset(seed=0)
        hole = e.task._hole[:3]
        pose = e.state.ee_pose.copy()
        pose[:3] = hole + np.array([offset_m, 0.0, e.task.config.pre_insert_height])
        state = RobotState(**{**e.state.__dict__, "ee_pose": pose})
        r = float(e.task.evaluate(state, np.zeros(3)).reward[0])
        e.close()
        return r

    coarse = task_reward(0.0, 0.002) - task_reward(0.0, 0.005)
    fine = task_reward(0.005, 0.002) - task_reward(0.005, 0.005)
    assert fine > 3 * coarse > 0


def test_random_policy_rarely_touches():
    """On fixed seeds, uniform random actions rarely press the block past 5 N (a real measurement
    through the evaluation protocol; before calibration they succeeded in 50 of 50 episodes)."""
    from morl_robot.evaluation.protocol import evaluate_policy, random_policy

    policy = random_policy("shadow_touch", seed=0)
    result = evaluate_policy(policy.act, "shadow_touch", episodes=20, seed=0, policy=policy.description)
    assert result.success_rate <= 0.2, result.success_rate
