"""``morl-robot bench scale-invariance``: does rescaling one objective change what MO-MPO learns?

MO-MPO's claim (Abdolmaleki et al. 2020, §4.2.1): preferences are KL bounds ε_k, so multiplying
objective k's reward by c leaves the improved distributions q_k, and with them the policy, unchanged —
*provided* the temperature η_k follows the rescale (η_k → c·η_k; eq. 4's solution scales with Q).
This benchmark runs the whole learner (:meth:`MOMPOLearner.update`: critic, E-step, M-step, Adam) on a
one-step, two-objective bandit, once as is and once with objective 2 ×``scale``, for both
temperature solvers:

* ``gradient``: η_k takes one Adam step per update on its dual (warm-started, lr ``dual_lr``), so a
  ×20 rescale needs many updates before η_k catches up; meanwhile the rescaled objective dominates;
* ``exact``: η_k solves eq. 4 at every update (1-D bisection on the batch's Q-values), so it follows
  any rescale at once.

Tasks: ``gaussian`` (1-D action, r = (−(a−½)², −(a+½)²): the ε-balanced policy mean is near 0) and
``categorical`` (3 actions, r₁ = (1, 0, 0.55), r₂ = (0, 1, 0.55)).  Printed: the final policy
(mean, or action probabilities) with and without the rescale, their largest difference, and the
temperature ratio η₂(×scale)/η₂(×1) (ideal: ``scale``).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import torch

CATEGORICAL_REWARDS = np.array([[1.0, 0.0, 0.55], [0.0, 1.0, 0.55]])  # [K, A]


@dataclass
class BanditOutcome:
    policy: np.ndarray  # gaussian: (1,) mean; categorical: (3,) probabilities
    temperatures: np.ndarray  # (2,) final η_k
    seconds: float


def run_bandit(kind: str, solver: str, scale: float, updates: int, seed: int = 0, batch: int = 64,
               critic_lr: float = 3e-3, policy_lr: float = 1e-3, algorithm: str = "mo_mpo",
               preference_ranges: list[list[float]] | None = None,
               eval_preferences: np.ndarray | None = None) -> BanditOutcome:
    """Train MO-MPO (ε = 0.1, 0.1) on the bandit with objective 2 multiplied by ``scale``
    (``algorithm="scalarized_mpo"``: equal weights, ε = 0.1, for contrast).

    ``preference_ranges``: ε-conditioned MO-MPO over that box instead (each batch element acts
    under its own log-uniform ε and the learner relabels); the outcome's ``policy`` is then
    ``[P, …]``, one row per preference of ``eval_preferences`` ``[P, 2]`` (default: the box's
    11-point grid), and ``temperatures`` the sequence-averaged η_k."""
    from morl_robot.learning.config import MPOConfig
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.networks import ActionSpec
    from morl_robot.learning.replay import SequenceBatch

    if kind not in ("gaussian", "categorical"):
        raise ValueError(f"kind must be gaussian or categorical, got {kind!r}")
    cfg = MPOConfig(batch_size=batch, num_samples=10, sequence_length=1, critic_target="n_step", n_step=1,
                    temperature_solver=solver, epsilons=[0.1, 0.1], target_update_period=20,
                    critic_lr=critic_lr, policy_lr=policy_lr, algorithm=algorithm)
    if preference_ranges is not None:
        from morl_robot.learning.preferences import PreferenceConfig

        cfg.preferences = PreferenceConfig(ranges=[list(r) for r in preference_ranges])
    cfg.networks.policy_hidden = [32, 32]
    cfg.networks.critic_hidden = [32, 32]
    spec = ActionSpec.box(1) if kind == "gaussian" else ActionSpec.discrete(3)
    learner = MOMPOLearner(2, spec, 2, cfg, seed=seed)
    space = learner.preferences
    rng = np.random.default_rng(seed + 11)
    obs = np.ones((2, batch, learner.input_dim), np.float32)  # one state; T = 1 (+ the bootstrap state)
    gain = np.array([1.0, scale])
    start = time.perf_counter()
    stats: dict[str, float] = {}
    for _ in range(updates):
        actor = learner.actor()
        if space is not None:  # each element acts under its own preference, recorded in its observation
            actors = [actor.with_preference(e) for e in space.sample(batch, rng)]
            obs[:] = np.stack([a.augment(np.ones(2, np.float32)) for a in actors])[None]
            acts, logp = zip(*(a.act(np.ones(2, np.float32)) for a in actors))
        else:
            acts, logp = zip(*(actor.act(obs[0, i]) for i in range(batch)))
        if kind == "gaussian":
            a = np.asarray(acts, np.float32).reshape(1, batch, 1)
            x = a[0, :, 0].astype(np.float64)
            r = np.stack([-(x - 0.5) ** 2, -(x + 0.5) ** 2], axis=-1)
        else:
            a = np.asarray(acts, np.int64).reshape(1, batch)
            r = CATEGORICAL_REWARDS[:, a[0]].T
        stats = learner.update(SequenceBatch(
            observations=obs, actions=a, rewards=(r * gain).reshape(1, batch, 2).astype(np.float32),
            terminated=np.ones((1, batch), np.float32), truncated=np.zeros((1, batch), np.float32),
            behaviour_log_prob=np.asarray(logp, np.float32).reshape(1, batch), mask=np.ones((1, batch), np.float32)))
    if space is not None:
        prefs = space.grid(11) if eval_preferences is None else np.asarray(eval_preferences, np.float64)
        x = torch.as_tensor(np.stack([learner.actor().with_preference(e).augment(np.ones(2, np.float32))
                                      for e in prefs]))
    else:
        x = torch.ones(1, 2)
    with torch.no_grad():
        out = learner.policy(x)
    policy = (out[0].reshape(len(x), -1).numpy() if kind == "gaussian" else torch.softmax(out, -1).numpy())
    if space is None:
        policy = policy.reshape(-1)
    temps = np.array([v for k, v in stats.items() if k.startswith("temperature/")], dtype=np.float64)
    return BanditOutcome(policy.astype(np.float64), temps, time.perf_counter() - start)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", type=float, default=20.0, help="factor on objective 2 (default 20)")
    parser.add_argument("--updates", type=int, default=800, help="learner updates per run (default 800)")
    parser.add_argument("--seed", type=int, default=0, help="seed of both runs (the same data for each)")


def run(args: argparse.Namespace) -> int:
    from morl_robot.errors import UsageError

    if args.updates < 1 or not args.scale > 0:
        raise UsageError("--updates must be >= 1 and --scale > 0")
    torch.set_num_threads(1)
    print(f"MO-MPO scale invariance through MOMPOLearner.update: objective 2 x{args.scale:g}, "
          f"{args.updates} updates per run, ε = (0.1, 0.1), seed {args.seed}")
    print(f"{'task':<12} {'solver':<9} {'policy (x1)':<26} {'policy (x' + format(args.scale, 'g') + ')':<26} "
          f"{'max |diff|':>10} {'η2 ratio':>9}")
    for kind in ("gaussian", "categorical"):
        for solver in ("gradient", "exact"):
            base = run_bandit(kind, solver, 1.0, args.updates, args.seed)
            scaled = run_bandit(kind, solver, args.scale, args.updates, args.seed)
            diff = float(np.max(np.abs(base.policy - scaled.policy)))
            ratio = float(scaled.temperatures[1] / base.temperatures[1])
            print(f"{kind:<12} {solver:<9} {np.array2string(base.policy, precision=3):<26} "
                  f"{np.array2string(scaled.policy, precision=3):<26} {diff:>10.3f} {ratio:>9.2f}")
    return 0
