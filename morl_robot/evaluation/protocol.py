"""The evaluation protocol every result in this project uses: a trained policy, acting
deterministically, on a fixed list of episode seeds.  An ONNX policy acts with exactly what the
policy server sends (:meth:`~morl_robot.serving.runtime.OnnxPolicy.served_action`: the one
function that computes the served action; a model whose ``action`` output disagrees with it is
refused by both), so a model is scored as it is deployed.

A *learning result* is a measured outcome of a policy, not a training curve.  For one policy and
one task, :func:`evaluate_policy` runs ``episodes`` episodes; episode ``i`` resets the
environment with seed ``seed + i`` (the same convention as ``robot_node``, so a deploy check on
the graph and an in-process evaluation see the same starts).  Per episode it records the
per-objective return (undiscounted sum of the per-step rewards, MO-MPO paper §6), the termination
reason, success (the task's ``info['success']`` at the last step), and the task's contact force at
every step (:meth:`morl_robot.tasks.base.Task.contact_force`: the tared wrist force norm for the
Sawyer, the largest fingertip tactile reading for the Shadow Hand).  By default every action
passes the robot's safety rules first (:class:`~morl_robot.safety.shield.SafetyShield`), so the
figures are those of the policy as deployed behind the safety monitor; ``safety_rules`` in the
summary counts the commands clamped or held.

The summary (:meth:`Evaluation.to_json`, the ``EVAL`` object of ``morl-robot evaluate --json``)::

    {"episodes": N,
     "objectives": {name: {"mean": m, "ci_low": lo, "ci_high": hi}},   # 95 % percentile bootstrap
     "success_rate": s, "terminations": {reason: count},
     "peak_force": f_max, "mean_force": f_mean,
     "force": FORCE | null,
     "progress": {"name", "unit", "median", "min", "max"} | null, ...}

``force`` (:func:`force_summary`; null for a task without a force sensor) makes force a result in
its own right, from each episode's *peak* contact force (the largest reading of the episode)::

    {"unit": "N", "episodes": n,                    # episodes with a force reading
     "peak": {"p50" | "p90" | "p99": {"value", "ci_low", "ci_high"},   # percentile bootstrap
              "max": m},
     "threshold": EXCEED | null,                     # the task's own force threshold (none: null)
     "collision": EXCEED | null}                     # the safety YAML's stopping level (none: null)
    EXCEED = {"level": N, "source": str, "inclusive": bool, "count": k, "episodes": n,
              "rate": k / n, "ci_low", "ci_high"}    # 95 % Wilson score interval of the rate

The levels (:func:`force_levels`): the Sawyer peg-in-hole's ``force_threshold`` (30 N of tared
force, which ends the episode) and ``config/safety/sawyer.yaml`` ``wrench.force_norm.collision``
(40 N, the e-stop); the Shadow Hand tasks have no force threshold (their pain objective penalises
force *rises*, not a level), and their collision level is the tactile ``collision`` level of
``config/safety/shadow_hand.yaml`` (60 N on any pad).  With a rate's Wilson interval, 100 episodes
say a 2 % rate lies in about [0.6 %, 7 %]; 10 episodes cannot tell 0 % from 25 %.

``progress`` is the task's progress measure at each episode's last step
(:meth:`morl_robot.tasks.base.Task.progress`; the Sawyer's insertion depth in mm), which shows
the near misses a success rate hides.  It is the depth at the end; ``success`` is whether the
task's threshold on it was reached at any step (a peg that reached 45 mm and was pulled back up
still counts as a success, with a final depth below the threshold).

Confidence intervals are percentile bootstrap intervals of the mean over episodes, or of a
percentile of the peak forces (``scipy.stats.bootstrap``, 10 000 resamples, seeded, so the same
returns give the same interval), and Wilson score intervals of a rate (a proportion of episodes).

Defaults (:data:`DEFAULT_EPISODES`, :data:`HELD_OUT_SEED`): 100 episodes on seeds 50 000 … 50 099,
held out from the seeds the recipes were tuned on (0 … 9) and from the demo's evaluation seeds
(10 000 …).
"""
from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import UsageError

#: A deterministic policy as the protocol sees it: observation (O,) → action (D,) in [-1, 1].
Actor = Callable[[np.ndarray], np.ndarray]

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000
#: Default number of protocol episodes: enough for a rate to mean something (a 2 % rate over 100
#: episodes has the 95 % Wilson interval [0.6 %, 7.0 %]; over 20 episodes [0 %, 16 %] for 0 of 20).
DEFAULT_EPISODES = 100
#: Default first episode seed: held out from the seeds the recipes were tuned on (0 … 9) and from the
#: demo's evaluation seeds (10 000 …).
HELD_OUT_SEED = 50_000
#: The percentiles of the per-episode peak force :func:`peak_force_percentiles` reports.
FORCE_PERCENTILES = (50, 90, 99)


def bootstrap_ci(samples: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval ``(low, high)`` of the mean of ``samples`` (N,).

    With fewer than two samples, or samples that are all equal, the interval collapses to the mean.
    """
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return (math.nan, math.nan)
    mean = float(x.mean())
    if x.size < 2 or np.ptp(x) == 0.0:
        return (mean, mean)
    from scipy.stats import bootstrap

    res = bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                    method="percentile", vectorized=True, random_state=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def wilson_interval(count: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of a proportion: ``count`` successes in ``n`` trials
    (``scipy.stats.binomtest(count, n).proportion_ci(method="wilson")``, no continuity correction).

    Unlike the normal approximation it is never empty at 0 or n, stays in [0, 1] and contains the
    point estimate count / n: 2 of 100 gives [0.0055, 0.0700], 0 of 100 [0, 0.037].  ``n`` = 0:
    ``(nan, nan)``."""
    if n < 0 or not 0 <= count <= max(n, 0):
        raise ValueError(f"a proportion needs 0 <= count <= n, got count {count}, n {n}")
    if n == 0:
        return (math.nan, math.nan)
    from scipy.stats import binomtest

    ci = binomtest(int(count), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return (max(0.0, float(ci.low)), min(1.0, float(ci.high)))


def exceedance(peaks: Sequence[float] | np.ndarray, level: float, inclusive: bool = False,
               confidence: float = CONFIDENCE) -> dict[str, Any]:
    """How many of the per-episode ``peaks`` (N,) exceed ``level``: ``{"level", "inclusive", "count",
    "episodes", "rate", "ci_low", "ci_high"}``, the rate with its Wilson score interval
    (:func:`wilson_interval`).  ``inclusive``: a peak equal to the level counts (a safety rule fires
    on *reaching* its level, ``>=``; the Sawyer task ends *above* its threshold, ``>``)."""
    x = np.asarray(peaks, dtype=np.float64).reshape(-1)
    n = int(x.size)
    count = int(np.count_nonzero(x >= level if inclusive else x > level))
    lo, hi = wilson_interval(count, n, confidence)
    return {"level": float(level), "inclusive": bool(inclusive), "count": count, "episodes": n,
            "rate": count / n if n else math.nan, "ci_low": lo, "ci_high": hi}


def quantile_ci(samples: Sequence[float] | np.ndarray, q: float, confidence: float = CONFIDENCE,
                seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval ``(low, high)`` of the ``q`` quantile (0 … 1,
    ``numpy.quantile``'s linear interpolation) of ``samples`` (N,), seeded like :func:`bootstrap_ci`.

    The interval lies within [min, max] of the samples (every resample's quantile does).  With
    fewer than two samples, or all equal, it collapses to the quantile.  A high quantile of few
    samples is poorly determined: p99 of 100 episodes rests on the two largest peaks."""
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return (math.nan, math.nan)
    point = float(np.quantile(x, q))
    if x.size < 2 or np.ptp(x) == 0.0:
        return (point, point)
    from scipy.stats import bootstrap

    res = bootstrap((x,), lambda s, axis: np.quantile(s, q, axis=axis), confidence_level=confidence,
                    n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", vectorized=True,
                    random_state=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (max(lo, float(x.min())), min(hi, float(x.max())))  # guard against rounding only


def peak_force_percentiles(peaks: Sequence[float] | np.ndarray, seed: int = 0,
                           percentiles: Sequence[int] = FORCE_PERCENTILES) -> dict[str, Any]:
    """The distribution of per-episode peak forces ``peaks`` (N,): ``{"p50": {"value", "ci_low",
    "ci_high"}, "p90": …, "p99": …, "max": m}``, each percentile with its percentile-bootstrap CI
    (:func:`quantile_ci`); the maximum without one (a bootstrap cannot bound a sample maximum).
    The values are monotone: p50 ≤ p90 ≤ p99 ≤ max.  No peaks: every value is nan."""
    x = np.asarray(peaks, dtype=np.float64).reshape(-1)
    out: dict[str, Any] = {}
    for p in percentiles:
        value = float(np.quantile(x, p / 100.0)) if x.size else math.nan
        lo, hi = quantile_ci(x, p / 100.0, seed=seed)
        out[f"p{p:g}"] = {"value": value, "ci_low": lo, "ci_high": hi}
    out["max"] = float(x.max()) if x.size else math.nan
    return out


@dataclass(frozen=True)
class ForceLevels:
    """The levels an evaluation compares each episode's peak contact force with (N; None: the task
    or robot has none), each with where it comes from (see :func:`force_levels`)."""

    threshold: float | None = None
    threshold_source: str | None = None
    collision: float | None = None
    collision_source: str | None = None


def force_levels(task: Any) -> ForceLevels:
    """The force levels of ``task`` (a :class:`~morl_robot.tasks.base.Task`).

    * threshold: the task config's ``force_threshold`` (Sawyer peg-in-hole: 30 N of *tared* wrist
      force, above which the episode ends); None for a task without one (the Shadow Hand tasks:
      their pain objective penalises force rises per step, not a force level).
    * collision: the stopping level of the robot's safety YAML (``config/safety/<robot>.yaml``, read
      with :func:`~morl_robot.safety.config.load_safety_config`): ``wrench.force_norm.collision``
      (Sawyer: 40 N, the e-stop; the nominal level, not the acceleration phase's 45 N), else the
      lowest ``tactile`` collision level over the default and the per-sensor ones (Shadow Hand:
      60 N on any pad; the task's contact force is the largest pad reading, so it reaches the level
      exactly when some pad does).  None when the robot has no safety YAML or no such level.

    The Sawyer's safety levels act on the *raw* wrist reading, which holds the tool's weight
    (3.4 N at rest), while the task's contact force, the one evaluated, is *tared*: the tared peak
    is compared with the raw level, so a rate above the collision level may be off by up to the
    tool's weight either way (and an episode stopped by the monitor ends near, not necessarily
    above, the level)."""
    threshold = getattr(getattr(task, "config", None), "force_threshold", None)
    threshold_source = None
    if threshold is not None:
        threshold = float(threshold)
        threshold_source = f"task {getattr(task, 'name', type(task).__name__)}: force_threshold"
    collision, collision_source = None, None
    robot = getattr(task, "robot_name", None)
    if robot:
        from morl_robot.errors import UnknownNameError
        from morl_robot.safety.config import load_safety_config, to_si

        try:
            config, source = load_safety_config(robot)
        except UnknownNameError:
            config, source = None, ""
        name = f"safety/{Path(source).name}" if source else ""
        if config is not None and config.wrench is not None and config.wrench.force_norm is not None \
                and config.wrench.force_norm.collision is not None:
            t = config.wrench.force_norm
            collision = to_si(t.collision, t.unit, ("force",))
            collision_source = f"{name}: wrench.force_norm.collision (on the raw wrist force; compared with the tared peak)"
        elif config is not None and config.tactile is not None:
            levels = [(to_si(t.collision, t.unit, ("force",)), key)
                      for key, t in [("default", config.tactile.default), *config.tactile.sensors.items()]
                      if t.collision is not None]
            if levels:
                collision, key = min(levels)
                collision_source = f"{name}: tactile.{'default' if key == 'default' else 'sensors.' + key}.collision"
    return ForceLevels(threshold, threshold_source, collision, collision_source)


def force_summary(peaks: Sequence[float] | np.ndarray, levels: ForceLevels | None = None,
                  seed: int = 0) -> dict[str, Any] | None:
    """The ``force`` block of the ``EVAL`` object (module docstring) from the per-episode peak
    forces ``peaks`` (N,) (None when there are none: a task without a force sensor): their
    percentiles (:func:`peak_force_percentiles`) and the rates above ``levels`` (:func:`exceedance`;
    above the task threshold strictly, as the task ends an episode; at or above the collision level,
    as the safety rule fires)."""
    x = np.asarray(peaks, dtype=np.float64).reshape(-1)
    if not x.size:
        return None
    levels = levels or ForceLevels()
    out: dict[str, Any] = {"unit": "N", "episodes": int(x.size), "peak": peak_force_percentiles(x, seed)}
    for key, level, source, inclusive in (("threshold", levels.threshold, levels.threshold_source, False),
                                          ("collision", levels.collision, levels.collision_source, True)):
        out[key] = None if level is None else {"source": source, **exceedance(x, level, inclusive)}
    return out


def rate_value(block: dict[str, Any], digits: int = 1) -> str:
    """An :func:`exceedance` block's rate as a person reads it: ``2/100 = 2.0 %``."""
    return f"{block['count']}/{block['episodes']} = {100 * block['rate']:.{digits}f} %"


def rate_ci(block: dict[str, Any], digits: int = 1) -> str:
    """An :func:`exceedance` block's 95 % Wilson interval in percent: ``[0.6, 7.0]``."""
    return f"[{100 * block['ci_low']:.{digits}f}, {100 * block['ci_high']:.{digits}f}]"


def format_rate(block: dict[str, Any], digits: int = 1) -> str:
    """An :func:`exceedance` block as a person reads it: ``2/100 = 2.0 % [0.6, 7.0] %``."""
    return f"{rate_value(block, digits)} {rate_ci(block, digits)} %"


@dataclass
class EpisodeRecord:
    """One evaluation episode."""

    seed: int
    returns: np.ndarray  # (K,) undiscounted per-objective return
    termination: str | None  # time_limit, success, force_threshold, ... (None: cut by max_steps)
    success: bool
    steps: int
    forces: np.ndarray  # (T,) contact force per step (N); empty for a task without a force sensor
    progress: float | None = None  # the task's progress measure at the last step (Task.progress)
    context: str | None = None  # the episode's environment context (issue 37; None: the robot as built)

    @property
    def peak_force(self) -> float:
        return float(self.forces.max()) if self.forces.size else math.nan


@dataclass
class Evaluation:
    """The protocol's outcome for one policy on one task."""

    task: str
    objective_names: tuple[str, ...]
    episodes: list[EpisodeRecord]
    seed: int
    policy: str = ""  # what was evaluated (path, "random", ...)
    extra: dict[str, Any] = field(default_factory=dict)
    progress_measure: tuple[str, str] | None = None  # the task's (name, unit), see Task.progress_measure
    force_levels: ForceLevels | None = None  # the task's force threshold and collision level (force_levels)

    @property
    def returns(self) -> np.ndarray:
        """Per-episode returns (N, K)."""
        return np.stack([e.returns for e in self.episodes]) if self.episodes else np.zeros((0, len(self.objective_names)))

    @property
    def mean_returns(self) -> np.ndarray:
        """Mean return per objective (K,)."""
        return self.returns.mean(axis=0)

    @property
    def success_rate(self) -> float:
        return float(np.mean([e.success for e in self.episodes])) if self.episodes else math.nan

    @property
    def peak_forces(self) -> np.ndarray:
        """Per-episode peak contact force (n,), N, over the episodes with a force reading."""
        return np.array([e.peak_force for e in self.episodes if e.forces.size], dtype=np.float64)

    def force(self) -> dict[str, Any] | None:
        """The ``force`` block (:func:`force_summary`), its bootstrap seeded with the first seed."""
        return force_summary(self.peak_forces, self.force_levels, seed=self.seed)

    def objectives(self) -> dict[str, dict[str, float]]:
        out = {}
        for k, name in enumerate(self.objective_names):
            col = self.returns[:, k]
            lo, hi = bootstrap_ci(col, seed=self.seed)
            out[name] = {"mean": float(col.mean()), "ci_low": lo, "ci_high": hi}
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``EVAL`` object (see the module docstring), with per-episode detail."""
        forces = [e.forces for e in self.episodes if e.forces.size]
        all_forces = np.concatenate(forces) if forces else np.zeros(0)
        terminations = Counter(str(e.termination) for e in self.episodes)
        progress = None
        reached = np.array([e.progress for e in self.episodes if e.progress is not None])
        if self.progress_measure is not None and reached.size:
            progress = {"name": self.progress_measure[0], "unit": self.progress_measure[1],
                        "median": float(np.median(reached)), "min": float(reached.min()),
                        "max": float(reached.max())}
        return {
            "task": self.task,
            "policy": self.policy,
            "episodes": len(self.episodes),
            "seed": self.seed,
            "seeds": [e.seed for e in self.episodes],
            "objectives": self.objectives(),
            "success_rate": self.success_rate,
            "terminations": dict(sorted(terminations.items())),
            "peak_force": float(all_forces.max()) if all_forces.size else None,
            "mean_force": float(all_forces.mean()) if all_forces.size else None,
            "force": self.force(),
            "progress": progress,
            "per_episode": [
                {"seed": e.seed, "returns": dict(zip(self.objective_names, map(float, e.returns))),
                 "termination": e.termination, "success": e.success, "steps": e.steps,
                 "peak_force": None if not e.forces.size else e.peak_force, "progress": e.progress,
                 **({"context": e.context} if e.context is not None else {})}
                for e in self.episodes
            ],
            **self.extra,
        }

    def to_markdown(self) -> str:
        """A table a person reads: each objective with its CI, success, forces, terminations."""
        data = self.to_json()
        head = (f"**{self.task}** — {self.policy or 'policy'}: {data['episodes']} episodes, "
                f"seeds {self.seed}…{self.seed + data['episodes'] - 1}")
        lines = [head, "",
                 "| measure | value | 95 % CI |", "|---|---|---|"]
        for name, s in data["objectives"].items():
            lines.append(f"| return: {name} | {s['mean']:.3f} | [{s['ci_low']:.3f}, {s['ci_high']:.3f}] |")
        lines.append(f"| success rate | {data['success_rate']:.0%} | |")
        if data["peak_force"] is not None:
            lines.append(f"| peak contact force (N) | {data['peak_force']:.2f} | |")
            lines.append(f"| mean contact force (N) | {data['mean_force']:.2f} | |")
        if data["force"] is not None:
            lines.extend(_force_rows(data["force"]))
        if data["progress"] is not None:
            pr = data["progress"]
            lines.append(f"| final {pr['name']} ({pr['unit']}), median [min, max] | {pr['median']:.1f} | "
                         f"[{pr['min']:.1f}, {pr['max']:.1f}] |")
        lines.append("| terminations | " + ", ".join(f"{k} {v}" for k, v in data["terminations"].items()) + " | |")
        return "\n".join(lines)


def _force_rows(force: dict[str, Any]) -> list[str]:
    """Markdown rows of a ``force`` block: the peak-force percentiles with their CIs, the rates."""
    peak = force["peak"]
    rows = [f"| per-episode peak force (N): {k} | {v['value']:.2f} | [{v['ci_low']:.2f}, {v['ci_high']:.2f}] |"
            for k, v in peak.items() if k != "max"]
    rows.append(f"| per-episode peak force (N): max | {peak['max']:.2f} | |")
    for key, what in (("threshold", "above the task's force threshold"), ("collision", "reaching the collision level")):
        b = force[key]
        if b is not None:
            where = f" ({b['source'].split(':', 1)[0]})" if key == "collision" and b.get("source") else ""
            rows.append(f"| episodes {what} {b['level']:g} N{where} | {rate_value(b)} | {rate_ci(b)} % |")
    return rows


def run_episode(env: Any, act: Actor, seed: int, shield: Any = None, observer: Any = None) -> EpisodeRecord:
    """One deterministic episode of ``act`` on a :class:`~morl_robot.envs.mo_env.MORobotEnv`.
    ``observer`` (e.g. :class:`~morl_robot.rendering.video.EvaluationVideos`) is told
    ``begin(env, seed)`` after the reset, ``step(env, reward, info, done, shield)`` after each step, ``end()``.

    With a :class:`~morl_robot.safety.shield.SafetyShield`, every action passes the robot's safety
    rules first, as on the graph (clamped, or held after an e-stop, which as in deployment holds the
    robot until the episode ends; the termination is then reported as ``safety``)."""
    obs, info = env.reset(seed=int(seed))
    context = info.get("context") if isinstance(info, dict) else None  # issue 37: recorded per episode
    if shield is not None:
        shield.begin(env.state)
    if observer is not None:
        observer.begin(env, int(seed))
    total = np.zeros(env.reward_dim)
    forces: list[float] = []
    steps, done, term, success, estop = 0, False, None, False, False
    progress = None
    while not done:
        action = np.asarray(act(np.asarray(obs, dtype=np.float64)), dtype=np.float64).reshape(env.action_space.shape)
        if not np.all(np.isfinite(action)):
            raise UsageError(f"the policy produced a non-finite action at step {steps} of the episode with seed "
                             f"{seed}: {action}")
        executed = np.clip(action, -1.0, 1.0) if shield is None else shield.filter(action, env.state.stamp)
        obs, reward, terminated, truncated, info = env.step(executed)
        if shield is not None:
            shield.observe(env.state)
            estop = estop or shield.estopped
        total += np.asarray(reward, dtype=np.float64)
        force = env.task.contact_force(info)
        if force is not None:
            forces.append(force)
        steps += 1
        done = bool(terminated or truncated)
        term = info.get("termination")
        success = success or bool(info.get("success", False))
        progress = env.task.progress(info)
        if observer is not None:
            observer.step(env, reward, info, done, shield)
    if observer is not None:
        observer.end()
    return EpisodeRecord(int(seed), total, "safety" if estop else term, success, steps,
                         np.asarray(forces, dtype=np.float64), progress, context)


def evaluate_policy(act: Actor, task: str, episodes: int = DEFAULT_EPISODES, seed: int = HELD_OUT_SEED,
                    policy: str = "", task_config: str | os.PathLike[str] | None = None, progress: bool = False,
                    env_fn: Callable[[], Any] | None = None, safety: bool = True,
                    task_overrides: dict[str, Any] | None = None, contact_control: str = "compliant",
                    observer: Any = None) -> Evaluation:
    """Run the protocol: ``episodes`` deterministic episodes of ``act`` on ``task`` (its config
    with ``task_overrides``, e.g. a policy's :attr:`LoadedPolicy.task_overrides`), seeds
    ``seed … seed + episodes − 1`` (default: :data:`DEFAULT_EPISODES` on the held-out seeds from
    :data:`HELD_OUT_SEED`); with ``safety`` (default) through the robot's safety rules, as
    deployed (:class:`~morl_robot.safety.shield.SafetyShield`).  ``contact_control``:
    :data:`~morl_robot.envs.mo_env.CONTACT_CONTROLS` (``stiff`` re-checks figures measured before
    the compliant controller and the approach limit existed).  ``observer``: see :func:`run_episode`."""
    from morl_robot.envs.mo_env import MORobotEnv, set_contact_control

    if episodes < 1:
        raise UsageError(f"episodes must be >= 1, got {episodes}")
    env = env_fn() if env_fn is not None else MORobotEnv(task, config_file=task_config,
                                                           overrides=task_overrides or None)
    try:
        set_contact_control(env, contact_control)
    except Exception:
        env.close()
        raise
    shield = None
    if safety:
        from morl_robot.safety.shield import SafetyShield

        shield = SafetyShield(env, approach=contact_control == "compliant")
    elif hasattr(base := getattr(env, "unwrapped", env), "approach_at_arrival"):
        base.approach_at_arrival = False  # none of the robot's rules: nor the approach limit where a late command arrives
    records = []
    try:
        seeds = range(seed, seed + episodes)
        if progress:
            from tqdm.auto import tqdm

            seeds = tqdm(seeds, unit="episode", desc=f"evaluating {policy or task}", leave=False)
        for s in seeds:
            records.append(run_episode(env, act, s, shield, observer))
    finally:
        if observer is not None:
            observer.close()
        env.close()
    extra = {"safety_rules": shield.summary() if shield is not None else None}
    return Evaluation(task, tuple(env.objective_names), records, seed, policy, extra,
                      progress_measure=env.task.progress_measure, force_levels=force_levels(env.task))


def action_error(act: Actor, reference: Actor, task: str, episodes: int = 10, seed: int = 0,
                 task_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """How far ``act`` is from ``reference`` on ``reference``'s own trajectories: ``reference``
    drives ``episodes`` episodes (seeds ``seed …``, no safety shield) and at every state both act.
    Returns ``{"labels": [D], "units": str, "mean_abs": [D], "max_abs": [D], "steps": n}``: per
    action component the mean and largest |a − a_ref| over the visited states, in robot units (the
    task's action bounds: rad of a position target or of its change), e.g. how exactly a clone
    reproduces its demonstrator where the demonstrator goes (the closed-loop error starts here)."""
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv(task, overrides=task_overrides or None)
    lo, hi = env.task.action_bounds(env.robot)
    half = 0.5 * (hi - lo)  # (D,) robot units per normalised unit
    errors: list[np.ndarray] = []
    try:
        for s in range(seed, seed + episodes):
            obs, _ = env.reset(seed=s)
            done = False
            while not done:
                o = np.asarray(obs, dtype=np.float64)
                a_ref = np.clip(np.asarray(reference(o), np.float64).reshape(-1), -1.0, 1.0)
                a = np.clip(np.asarray(act(o), np.float64).reshape(-1), -1.0, 1.0)
                errors.append(np.abs(a - a_ref) * half)
                obs, _, terminated, truncated, _ = env.step(a_ref)
                done = bool(terminated or truncated)
    finally:
        env.close()
    e = np.stack(errors)  # [steps, D]
    return {"labels": list(env.action_labels), "units": env.task.action_units(), "mean_abs": e.mean(axis=0).tolist(),
            "max_abs": e.max(axis=0).tolist(), "steps": int(e.shape[0])}


# --- policies ---------------------------------------------------------------------------------
@dataclass
class LoadedPolicy:
    act: Actor
    task: str
    description: str
    contract: Any = None  # serving.contract.PolicyContract (None for a random policy)
    #: task-config keys the policy's actions need (``action_mode`` …); evaluate it on a task built with them
    task_overrides: dict[str, Any] = field(default_factory=dict)
    #: an ε-conditioned policy's active preference (one ε per objective); None: not conditioned
    preference: tuple[float, ...] | None = None

    def make_env(self) -> Any:
        """The environment the policy acts in: the one its contract describes (its task in the
        contract's action mode; a reward-machine policy: in the product with its machine, checked;
        :func:`~morl_robot.envs.mo_env.open_policy_env`), else its task's with :attr:`task_overrides`."""
        from morl_robot.envs.mo_env import MORobotEnv, open_policy_env

        if self.contract is not None:
            return open_policy_env(self.contract)
        return MORobotEnv(self.task, overrides=self.task_overrides or None)


def onnx_policy(path: str | os.PathLike[str], preference: Sequence[float] | None = None) -> LoadedPolicy:
    """An exported ONNX policy (normaliser and action scaling inside), acting with what it serves
    (:meth:`~morl_robot.serving.runtime.OnnxPolicy.served_action`); an ε-conditioned one under
    ``preference`` (default: the centre of its box; checked against it).  Its contract is checked
    against the task and robot it names (:meth:`PolicyContract.check_runs_on`, a
    :class:`~morl_robot.serving.contract.ContractError` naming the field and the file)."""
    from morl_robot.serving.runtime import OnnxPolicy

    model = OnnxPolicy.from_file(path)
    where = ""
    if preference is not None:
        try:
            eps = model.set_preference(np.asarray(preference, np.float64))
        except ValueError as e:
            raise UsageError(f"--preference: {e}") from e
        where = ", preference " + ", ".join(f"{v:g}" for v in eps)
    elif getattr(model, "conditioned", False):
        where = ", preference " + ", ".join(f"{v:g}" for v in model.preference) + " (the centre)"
    return LoadedPolicy(lambda obs: model.served_action(obs).action, model.contract.task,
                        f"{Path(path)} (version {model.contract.policy_version}{where})", model.contract,
                        model.contract.task_overrides(),
                        tuple(map(float, model.preference)) if getattr(model, "conditioned", False) else None)


def press_policy(task: str) -> LoadedPolicy:
    """The hostile case of a Cartesian task: full speed straight down (vz = −1, the permitted maximum
    into the fixture) at every step, whatever it observes.  What the robot does with it is the contact
    safety of the stack (compliant controller, approach limit, monitor), not the policy's luck."""
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv(task)
    labels = tuple(env.action_labels)
    env.close()
    if "vz" not in labels:
        raise UsageError(f"'press' pushes straight down along vz; task {task} acts on {', '.join(labels)}")
    action = np.zeros(len(labels))
    action[labels.index("vz")] = -1.0
    return LoadedPolicy(lambda obs: action.copy(), task, "press: full speed straight down (vz = -1)")


def random_policy(task: str, seed: int = 0, overrides: dict[str, Any] | None = None) -> LoadedPolicy:
    """Uniform random actions in [-1, 1]^D (the baseline a task's difficulty is stated against), on
    the task built with ``overrides`` (e.g. ``{"action_mode": "delta"}``)."""
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv(task, overrides=overrides)
    dim = env.action_space.shape[0]
    env.close()
    rng = np.random.default_rng(seed + 7_777)
    return LoadedPolicy(lambda obs: rng.uniform(-1.0, 1.0, dim), task, "uniform random actions",
                        task_overrides=dict(overrides or {}))


# The hand-written controllers live with their tasks (Task.scripted / Task.scripted_policy); these
# names stay importable from here.
from morl_robot.tasks.shadow_hand import (
    SHADOW_ORIENT_PHASES,
    SHADOW_PRESS_POSTURE,
    SHADOW_TURN_POSTURE,
    ShadowPhase,
)

__all__ = ["SHADOW_ORIENT_PHASES", "SHADOW_PRESS_POSTURE", "SHADOW_TURN_POSTURE", "ShadowPhase"]


def __getattr__(name: str) -> Any:
    if name == "SCRIPTED_TASKS":  # the old constant: now whatever the registered tasks declare
        return scripted_tasks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def scripted_tasks() -> tuple[str, ...]:
    """The tasks with a hand-written controller (``morl-robot evaluate scripted --task T``,
    demonstrations): :func:`morl_robot.tasks.registry.scripted_tasks`."""
    from morl_robot.tasks.registry import scripted_tasks as registered

    return registered()


def scripted_policy(task: str, gain: float | None = None, clearance: float | None = None, lead: float | None = None,
                    overrides: dict[str, Any] | None = None) -> LoadedPolicy:
    """The hand-written controller of ``task`` (its :meth:`~morl_robot.tasks.base.Task.scripted_policy`:
    the reference a learned policy is read against, and the demonstrator of learning from
    demonstrations), on the task built with ``overrides`` (e.g. its action mode).  ``gain``,
    ``clearance`` (sawyer_peg_in_hole), ``lead`` (Shadow Hand tasks): the task's
    :attr:`~morl_robot.tasks.base.Task.scripted_options`; None: the task's default."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.tasks.registry import task_class, task_entries

    have = scripted_tasks()
    if task not in task_entries() or task_class(task).scripted is None:
        raise UsageError(f"a scripted policy exists for {', '.join(have)} only, not {task!r}")
    cls = task_class(task)
    options = {k: v for k, v in (("gain", gain), ("clearance", clearance), ("lead", lead)) if v is not None}
    unknown = sorted(set(options) - set(cls.scripted_options))
    if unknown:
        raise UsageError(f"the scripted {task} controller takes {', '.join(cls.scripted_options) or 'no options'}, "
                         f"not {', '.join(unknown)}")
    env = MORobotEnv(task, overrides=overrides or None)
    try:
        act, what = env.task.scripted_policy(env, **options)
    finally:
        env.close()
    return LoadedPolicy(act, task, what, task_overrides=dict(overrides or {}))


#: Policies named instead of a file: uniform random, the task's hand-written controller, the hostile press.
BUILT_IN_POLICIES = ("random", "scripted", "press")


def load_policy(source: str | os.PathLike[str], task: str | None = None, seed: int = 0,
                preference: Sequence[float] | None = None, action_mode: str | None = None,
                gain: float | None = None) -> LoadedPolicy:
    """``policy.onnx``, a run directory (its ``policy.onnx``), ``random``, ``scripted`` or ``press``
    (:func:`press_policy`; these need ``task``);
    ``preference`` for an ε-conditioned ONNX policy; ``action_mode`` (Shadow tasks: ``absolute`` or
    ``delta``) for a random or scripted policy (an ONNX policy's contract declares its own); ``gain``
    for a scripted controller that takes one (the Sawyer insertion controller: 1/s, default 5; see
    :meth:`~morl_robot.tasks.sawyer_peg_in_hole.SawyerPegInHole.scripted_policy`)."""
    if preference is not None and str(source) in BUILT_IN_POLICIES:
        raise UsageError(f"--preference is for an ε-conditioned ONNX policy, not a {source} policy")
    if gain is not None:
        from morl_robot.tasks.registry import task_class, task_entries

        with_gain = [n for n in scripted_tasks() if "gain" in task_class(n).scripted_options]
        if str(source) != "scripted" or task not in task_entries() or task not in with_gain:
            raise UsageError(f"--gain is the scripted {' / '.join(with_gain)} controller's gain: give it with "
                             f"'scripted --task {with_gain[0] if with_gain else 'TASK'}'")
        if not (gain > 0 and math.isfinite(gain)):
            raise UsageError(f"--gain must be a finite number > 0 (1/s), got {gain}")
    if action_mode is not None and str(source) not in ("random", "scripted"):
        raise UsageError("--action-mode is for a random or scripted policy; an ONNX policy's contract declares "
                         "its action mode")
    overrides = {} if action_mode is None else {"action_mode": action_mode}
    if str(source) in BUILT_IN_POLICIES:
        if not task:
            raise UsageError(f"a {source} policy needs --task")
        import dataclasses

        from morl_robot.tasks.registry import (
            config_class,
            task_class,
            task_entries,
            task_names,
        )

        if task not in task_entries():
            raise UsageError(f"--task {task!r}: unknown task; known: {', '.join(sorted(task_names()))}")
        fields = {f.name for f in dataclasses.fields(config_class(task_class(task)))}
        if overrides and "action_mode" not in fields:
            with_modes = [n for n in task_names() if "action_mode" in
                          {f.name for f in dataclasses.fields(config_class(task_class(n)))}]
            raise UsageError(f"--action-mode: task {task} has no action modes (tasks with them: "
                             f"{', '.join(with_modes)})")
        if str(source) == "random":
            return random_policy(task, seed, overrides)
        if str(source) == "press":
            if overrides:
                raise UsageError("--action-mode is for a random or scripted policy")
            return press_policy(task)
        return scripted_policy(task, overrides=overrides, **({} if gain is None else {"gain": gain}))
    path = Path(source)
    if path.is_dir():
        if not (path / "policy.onnx").is_file():
            raise UsageError(f"{path} has no policy.onnx (export one with `morl-robot export {path}`)")
        path = path / "policy.onnx"
    if not path.is_file():
        raise UsageError(f"no such policy file or run directory: {path}")
    loaded = onnx_policy(path, preference)
    if task and task != loaded.task:
        raise UsageError(f"--task {task}: {path} was trained for task '{loaded.task}'")
    return loaded


# --- learning curves of deterministic evaluations ---------------------------------------------
def snapshot_files(run_dir: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(env_steps, path)`` of a run directory's kept policy snapshots
    (``snapshots/policy_<env_steps>.onnx``, written by the learner at every checkpoint), oldest first."""
    found = []
    for p in Path(run_dir, "snapshots").glob("policy_*.onnx"):
        try:
            found.append((int(p.stem.split("_", 1)[1]), p))
        except ValueError:
            continue
    return sorted(found)


def evaluation_curve(run_dir: str | os.PathLike[str], episodes: int, seed: int,
                     progress: bool = False, last_observer: Any = None) -> list[tuple[int, Evaluation]]:
    """The protocol applied to every kept snapshot of a run: a learning curve of deterministic
    evaluations (not of the exploring policy's episodes); ``last_observer`` watches the last
    snapshot's episodes (:func:`run_episode`; the demo's videos)."""
    curve = []
    files = snapshot_files(run_dir)
    for i, (steps, path) in enumerate(files):
        loaded = onnx_policy(path)
        curve.append((steps, evaluate_policy(loaded.act, loaded.task, episodes, seed, loaded.description,
                                             progress=progress, env_fn=loaded.make_env,
                                             observer=last_observer if i == len(files) - 1 else None)))
    return curve
