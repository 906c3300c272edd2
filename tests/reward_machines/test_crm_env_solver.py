"""Product env, counterfactual relabelling of replay sequences (CRM), exact solver, ButtonWorld."""
import dataclasses

import gymnasium
import numpy as np
import pytest

from morl_robot.envs.button_world import BUTTONS, START, ButtonWorld
from morl_robot.evaluation.exact_front import (
    linear_front,
    pareto_front_exact,
    tabular_product,
)
from morl_robot.experiments.button_world import make_env, product_for
from morl_robot.learning.replay import SequenceReplay

CELLS = [(x, y) for x in range(5) for y in range(5)]
GAMMA = 0.99


def _path_to(cell, target):
    """Actions (0 up +y, 1 right +x, 2 down, 3 left) from cell to target, x first."""
    acts = []
    x, y = cell
    while x != target[0]:
        acts.append(1 if target[0] > x else 3)
        x += 1 if target[0] > x else -1
    while y != target[1]:
        acts.append(0 if target[1] > y else 2)
        y += 1 if target[1] > y else -1
    return acts


def test_product_env_observation_reward_and_termination():
    env = make_env("term-term")
    obs, info = env.reset(seed=0)
    S = env.product.num_states
    assert obs.shape == (25 + S,) and obs[25] == 1.0 and env.objective_names == ["abb_term", "baa_term"]
    # a, then b, leave B and re-enter: abb done -> reward (1, 0) and termination by the machine
    plan = _path_to(START, BUTTONS["a"]) + _path_to(BUTTONS["a"], BUTTONS["b"]) + [1, 3]
    rewards, done = [], False
    for a in plan:
        obs, r, done, trunc, info = env.step(a)
        rewards.append(r.tolist())
    assert done and not trunc and info["termination"] == "reward_machine" and not info["env_terminated"]
    assert rewards[-1] == [1.0, 0.0] and all(r == [0.0, 0.0] for r in rewards[:-1])
    assert obs[25 + info["rm_state"]] == 1.0 and env.product.terminal[info["rm_state"]]


def test_gymnasium_ids_make_the_product_env():
    import morl_robot  # noqa: F401  (registers the ids)

    env = gymnasium.make("morl_robot/ButtonWorld-once-cycle-v0")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (25 + product_for("once-cycle").num_states,)


def _fill(replay, env, steps, rng):
    obs, _ = env.reset(seed=0)
    for _ in range(steps):
        a = int(rng.integers(4))
        nxt, r, term, trunc, info = env.step(a)
        replay.add(obs, a, r, nxt, term, trunc, np.log(0.25), label=info["rm_label"],
                   env_terminated=info["env_terminated"])
        obs = nxt if not (term or trunc) else env.reset()[0]


@pytest.mark.parametrize("pair", ["term-term", "once-cycle"])
def test_crm_sequences_are_counterfactual_rollouts_of_the_machine(pair):
    env = make_env(pair, max_steps=40)
    p = env.product
    replay = SequenceReplay(5000, env.observation_space.shape[0], 1, 2, discrete=True, seed=1,
                            relabeller=env.relabeller())
    rng = np.random.default_rng(0)
    _fill(replay, env, 3000, rng)
    batch = replay.sample(512, 6)
    S = p.num_states
    u = np.argmax(batch.observations[:, :, 25:25 + S], axis=2)  # [T+1, B]
    starts = set(u[0].tolist())
    assert starts == set(p.nonterminal_states.tolist())  # every non-terminal state is a start (eq. 4)
    for b in range(512):
        for t in range(6):
            if batch.mask[t, b] == 0:
                break
            # reward and successor as the machine gives them from the counterfactual state
            ok = False
            for sigma in np.flatnonzero(p.possible):
                if p.next_state[u[t, b], sigma] == u[t + 1, b] and np.allclose(p.reward[u[t, b], sigma],
                                                                                batch.rewards[t, b]):
                    ok = True
            assert ok
            if p.terminal[u[t + 1, b]]:
                assert batch.terminated[t, b] == 1.0
                assert t + 1 == 6 or batch.mask[t + 1, b] == 0
    # the environment part of the observation is untouched
    plain = SequenceReplay(5000, env.observation_space.shape[0], 1, 2, discrete=True, seed=1)
    assert batch.observations.shape[2] == plain.obs_dim


def test_crm_needs_labels():
    env = make_env("term-term")
    replay = SequenceReplay(100, env.observation_space.shape[0], 1, 2, discrete=True, relabeller=env.relabeller())
    with pytest.raises(ValueError, match="needs each step's label mask"):
        replay.add(np.zeros(replay.obs_dim), 0, np.zeros(2), np.zeros(replay.obs_dim), False, False, 0.0)


def test_exact_front_term_term_and_once_once_match_shortest_paths():
    for pair in ("term-term", "once-once"):
        p = product_for(pair)
        model = tabular_product(CELLS, START, 4, ButtonWorld.move, lambda s, a, s2: ButtonWorld.labels_of(s2), p)
        res = pareto_front_exact(model, GAMMA, 200)
        assert res.exact
        # abb: 4 steps to A, 4 to B, out and back in: the reward comes on step 10 -> γ^9
        first = GAMMA ** 9
        if pair == "term-term":
            np.testing.assert_allclose(res.front, [[0.0, first], [first, 0.0]], atol=1e-12)
        else:
            # abbaa: after abb (step 10) leave B to A (4 steps), out and in (2): baa on step 16 -> γ^15
            np.testing.assert_allclose(res.front, [[GAMMA ** 15, first], [first, GAMMA ** 15]], atol=1e-12)
        # the weight-grid solver finds points of the same front
        lin = linear_front(model, GAMMA, 200, np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]))
        for point in lin:
            assert np.min(np.abs(res.front - point).sum(1)) < 1e-9


def test_exact_front_dominates_every_random_policy():
    p = product_for("term-cycle")
    model = tabular_product(CELLS, START, 4, ButtonWorld.move, lambda s, a, s2: ButtonWorld.labels_of(s2), p)
    front = pareto_front_exact(model, GAMMA, 60).front
    rng = np.random.default_rng(1)
    for _ in range(200):
        x, total, disc = 0, np.zeros(2), 1.0
        for _ in range(60):
            a = int(rng.integers(4))
            total += disc * model.reward[x, a]
            disc *= GAMMA
            x = model.next_state[x, a]
            if model.terminal[x]:
                break
        assert np.any(np.all(front >= total - 1e-9, axis=1))


@pytest.mark.parametrize("scale", [True, False])
def test_crm_counts_one_insert_per_counterfactual_experience(scale):
    from morl_robot.experiments.button_world import Budget, learner_config
    from morl_robot.training.loop import train

    budget = Budget(steps=400, eval_every=400, seeds=(0,), quick=True)
    updates = {}
    for crm in (False, True):
        cfg = learner_config((0.05, 0.005), crm, budget, ["abb_term", "baa_term"])
        cfg = cfg.replace(replay=dataclasses.replace(cfg.replay, min_size_to_sample=100, crm_scale_updates=scale))
        updates[crm] = train(lambda: make_env("term-term"), cfg, total_steps=400, seed=0, progress=False).updates
    ratio = updates[True] / updates[False]
    if scale:  # 5 non-terminal MORM states: ~5x the updates after learning starts
        assert 4.0 < ratio < 6.0
    else:
        assert 0.9 < ratio < 1.1
