"""Roll a task out in simulation with a fixed policy and summarise per-objective returns."""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from morl_robot.envs.mo_env import MORobotEnv

Policy = Callable[[np.ndarray], np.ndarray]


def fixed_policy(kind: str, env: MORobotEnv, rng: np.random.Generator) -> Policy:
    """``random`` (uniform in the normalised action box) or ``zero`` (the action 0)."""
    d = env.action_space.shape[0]
    if kind == "random":
        return lambda obs: rng.uniform(-1.0, 1.0, size=d)
    if kind == "zero":
        zero = np.zeros(d)
        return lambda obs: zero
    from morl_robot.errors import UnknownNameError

    raise UnknownNameError(f"unknown policy '{kind}'; allowed: random, zero")


@dataclass
class RolloutSummary:
    task: str
    steps: int
    episodes: int  # episodes that ended (terminated or truncated) within the steps
    returns: dict[str, float]  # per-objective mean undiscounted return over ended episodes
    terminations: dict[str, int] = field(default_factory=dict)
    steps_per_second: float = 0.0

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "steps": self.steps,
            "episodes": self.episodes,
            "returns": self.returns,
            "terminations": self.terminations,
            "steps_per_second": round(self.steps_per_second, 1),
        }


def rollout(env: MORobotEnv, steps: int, seed: int = 0, policy: str = "random", progress: bool = False) -> RolloutSummary:
    """Run ``steps`` environment steps (resetting at episode ends) and summarise.

    If no episode ends within ``steps``, the partial episode's return is reported (episodes=0).
    """
    rng = np.random.default_rng(seed)
    act = fixed_policy(policy, env, rng)
    obs, _ = env.reset(seed=seed)
    k = env.reward_dim
    ret = np.zeros(k)
    finished: list[np.ndarray] = []
    reasons: Counter[str] = Counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=steps, desc=env.task.name, unit="step", leave=False)
    start = time.perf_counter()
    for i in range(steps):
        obs, reward, terminated, truncated, info = env.step(act(obs))
        ret += reward
        if terminated or truncated:
            finished.append(ret.copy())
            reasons[info["termination"]] += 1
            ret[:] = 0.0
            obs, _ = env.reset(seed=seed + len(finished))
        if bar is not None:
            bar.update(1)
    elapsed = time.perf_counter() - start
    if bar is not None:
        bar.close()
    mean = np.mean(finished, axis=0) if finished else ret
    return RolloutSummary(
        task=env.task.name,
        steps=steps,
        episodes=len(finished),
        returns={n: float(v) for n, v in zip(env.objective_names, mean)},
        terminations=dict(reasons),
        steps_per_second=steps / elapsed if elapsed > 0 else float("inf"),
    )
