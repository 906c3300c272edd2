"""The in-process training loop (:func:`train`) and deterministic evaluation (:func:`evaluate`) for
MO-Gymnasium-style environments (``step`` returns a reward vector [K]).

The learning is the :class:`~morl_robot.training.session.LearnerSession` the learner node drives,
and experience reaches it as on the graph: through the actor core's
:class:`~morl_robot.acting.experience.ExperienceWriter` into the session's ingest (one transition
per chunk, flagged contiguous: one actor, so no sequence break between chunks).  Calling
:func:`train` again with the same ``out_dir`` resumes from its newest readable checkpoint
(environment state is not checkpointed: a fresh episode starts).  docs/explanation/mo_mpo.md.
"""
from __future__ import annotations

import copy
import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.acting.demonstrator import Demonstrator, NoisyDemonstrator
from morl_robot.acting.experience import (
    DEMONSTRATION_VERSION,
    ExperienceWriter,
    Pending,
    experience_columns,
    split_experience,
)
from morl_robot.errors import ConfigError
from morl_robot.learning.config import MPOConfig, load_learner_config
from morl_robot.learning.learner import MOMPOLearner, PolicyActor
from morl_robot.learning.networks import ActionSpec
from morl_robot.reward_machines.columns import machine_columns, machine_values
from morl_robot.training.session import LearnerSession, counterfactual_relabeller
from morl_robot.training.termination import worst_case_termination

EnvFn = Callable[[], Any]


class ObservationEncoder:
    """Environment observation → flat float32 vector (``Discrete`` → one-hot)."""

    def __init__(self, space: Any):
        from gymnasium import spaces

        self.discrete_n = int(space.n) if isinstance(space, spaces.Discrete) else 0
        self.dim = self.discrete_n or int(np.prod(space.shape))

    def __call__(self, obs: Any) -> np.ndarray:
        if self.discrete_n:
            out = np.zeros(self.discrete_n, np.float32)
            out[int(obs)] = 1.0
            return out
        return np.asarray(obs, np.float32).reshape(-1)


class ActionDecoder:
    """Policy action → environment action (``Box``: [-1, 1] rescaled to the bounds)."""

    def __init__(self, space: Any):
        from gymnasium import spaces

        self.discrete = isinstance(space, spaces.Discrete)
        if not self.discrete:
            low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise ValueError(f"Box action space must be bounded, got {space}")
            self.identity = bool(np.allclose(low, -1.0) and np.allclose(high, 1.0))
            self.low, self.high, self.shape, self.dtype = low, high, space.shape, space.dtype

    def __call__(self, action: Any) -> Any:
        if self.discrete:
            return int(action)
        a = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
        if not self.identity:
            a = self.low.reshape(-1) + (a + 1.0) * 0.5 * (self.high - self.low).reshape(-1)
        return a.reshape(self.shape).astype(self.dtype)


def num_objectives_of(env: Any) -> int:
    # the outermost wrapper that declares one wins (a reward-machine wrapper changes K)
    space = getattr(env, "reward_space", None) or getattr(env.unwrapped, "reward_space", None)
    if space is None:
        raise ValueError("environment has no reward_space: expected an MO-Gymnasium-style env (reward vector)")
    return int(np.prod(space.shape))


def experience_propositions(env: Any) -> tuple[str, ...]:
    """The propositions of ``env``'s reward machine (its experience has the machine columns), or ()."""
    try:  # through wrappers (Gymnasium 1.x does not forward attributes)
        product = env.get_wrapper_attr("product") if hasattr(env, "get_wrapper_attr") else env.product
    except AttributeError:
        return ()
    return tuple(product.propositions)


def in_process_columns(obs_dim: int, spec: ActionSpec, learner: MOMPOLearner,
                       propositions: Sequence[str]) -> tuple[str, ...]:
    """The experience table of the in-process actor (:func:`~morl_robot.acting.experience.experience_columns`):
    positional observation labels (``o<i>``, then ``preference/<i>`` when ε-conditioned),
    ``a<i>`` actions (``index`` for a discrete action), the learner's objectives."""
    names = list(learner.objective_names)
    features = [f"preference/{i}" for i in range(learner.input_dim - obs_dim)]
    actions = ["index"] if spec.is_discrete else [f"a{i}" for i in range(spec.dim)]
    return experience_columns([f"o{i}" for i in range(obs_dim)] + features, actions, names,
                              machine_columns(propositions))


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    policy: PolicyActor  # frozen copy of the final online policy (deterministic: ``policy(obs)``)
    learner: MOMPOLearner
    metrics: list[dict[str, float]]  # logged learner statistics (every ``log_every`` updates)
    evaluations: list[tuple[int, np.ndarray]]  # (env steps, mean per-objective return [K])
    final_return: np.ndarray | None  # the last evaluation [K]
    env_steps: int
    updates: int
    episodes: int
    wall_time_s: float
    out_dir: Path | None = None
    resumed_from: Path | None = None
    objective_names: list[str] = field(default_factory=list)
    #: env steps at which ``training.stop_when_stable`` evaluations in a row agreed (None: not stopped)
    converged_at: int | None = None
    #: why learning stopped early: non-finite learner statistics (rolled back; "" if it did not)
    diverged: str = ""


def stable_since(evaluations: Sequence[tuple[int, np.ndarray]], count: int, atol: float = 1e-9) -> int | None:
    """Env steps of the first of the last ``count`` evaluations if they all gave the same return
    vector (within ``atol``), else None: the stopping rule of ``training.stop_when_stable``."""
    if count < 2 or len(evaluations) < count:
        return None
    last = [np.asarray(r, np.float64) for _, r in evaluations[-count:]]
    return evaluations[-count][0] if all(np.allclose(r, last[0], rtol=0.0, atol=atol) for r in last[1:]) else None


def evaluate(policy: Any, env_fn: EnvFn, episodes: int, seed: int, deterministic: bool = True,
             discount: float = 1.0, max_steps: int | None = None) -> np.ndarray:
    """Mean per-objective episode return ``[K]`` of ``policy`` over ``episodes`` episodes.

    ``policy``: a :class:`PolicyActor` (or anything with ``act(obs, deterministic) -> (action, …)``)
    or a callable ``obs -> action``; it sees the encoded observation (flat float32) and returns an
    action in [-1, 1] (Box) or an index (Discrete).  Episode ``i`` resets with ``seed + i``.
    ``discount`` < 1 gives discounted returns; ``max_steps`` caps episode length.
    """
    env = env_fn()
    try:
        enc, dec = ObservationEncoder(env.observation_space), ActionDecoder(env.action_space)
        k = num_objectives_of(env)
        totals = np.zeros((episodes, k), np.float64)
        for i in range(episodes):
            obs, _ = env.reset(seed=int(seed) + i)
            scale, steps, done = 1.0, 0, False
            while not done:
                x = enc(obs)
                a = policy.act(x, deterministic)[0] if hasattr(policy, "act") else policy(x)
                obs, r, terminated, truncated, _ = env.step(dec(a))
                totals[i] += scale * np.asarray(r, np.float64).reshape(-1)
                scale *= discount
                steps += 1
                done = bool(terminated or truncated) or (max_steps is not None and steps >= max_steps)
        return totals.mean(axis=0)
    finally:
        env.close()


def train(env_fn: EnvFn, config: MPOConfig | str | os.PathLike[str] | None, total_steps: int, seed: int = 0,
          out_dir: str | os.PathLike[str] | None = None, progress: bool = True,
          eval_fn: Callable[[PolicyActor], np.ndarray] | None = None,
          demonstrator: Demonstrator | None = None) -> TrainResult:
    """Train MO-MPO / scalarized MPO (see :func:`_train`); with ``out_dir``, holding the run
    directory's lock (:class:`~morl_robot.learning.run_lock.RunLock`: one writer per run).  Runs with
    ``training.threads`` torch threads (restored after)."""
    import torch

    threads = torch.get_num_threads()
    try:
        if out_dir is None:
            return _train(env_fn, config, total_steps, seed, None, progress, eval_fn, demonstrator)
        from morl_robot.learning.run_lock import RunLock

        with RunLock.acquire(out_dir, "morl_robot.training.train") as lock:
            if lock.stale:
                warnings.warn(f"took over the stale lock of {lock.stale} on {out_dir}", RuntimeWarning, stacklevel=2)
            return _train(env_fn, config, total_steps, seed, out_dir, progress, eval_fn, demonstrator)
    finally:
        torch.set_num_threads(threads)


def _train(env_fn: EnvFn, config: MPOConfig | str | os.PathLike[str] | None, total_steps: int, seed: int = 0,
           out_dir: str | os.PathLike[str] | None = None, progress: bool = True,
           eval_fn: Callable[[PolicyActor], np.ndarray] | None = None,
           demonstrator: Demonstrator | None = None) -> TrainResult:
    """Train MO-MPO / scalarized MPO on ``env_fn()`` for ``total_steps`` environment steps.

    Args:
        env_fn: makes a fresh environment (called once for training and once per evaluation).
        config: :class:`MPOConfig`, a YAML path, or None (reference defaults).
        total_steps: environment steps in total (a resumed run continues up to this count).
        seed: seeds networks, sampling, exploration and environment resets.
        out_dir: run folder for ``metrics.csv``, ``eval.csv``, TensorBoard and checkpoints;
            an existing checkpoint there is resumed.  None: nothing is written.
        progress: show a tqdm progress bar.
        eval_fn: optional ``policy -> returns [K]`` replacing the default :func:`evaluate`.
        demonstrator: ``observation -> normalised action`` acting the first
            ``training.demonstrations.episodes`` episodes (with noise; see :class:`NoisyDemonstrator`).

    Returns:
        :class:`TrainResult` with the final policy and the logged statistics.
    """
    if config is None:
        config = MPOConfig()
    elif not isinstance(config, MPOConfig):
        config = load_learner_config(config)
    tcfg = config.training
    if tcfg.threads:  # restored by train()
        import torch

        torch.set_num_threads(tcfg.threads)
    demo_episodes = tcfg.demonstrations.episodes
    if demo_episodes and demonstrator is None:
        raise ConfigError(f"training.demonstrations.episodes is {demo_episodes} but no demonstrator was given "
                          "(the task has none, or the command does not pass one)")
    start_time = time.monotonic()
    env = env_fn()
    enc, dec = ObservationEncoder(env.observation_space), ActionDecoder(env.action_space)
    spec = ActionSpec.from_space(env.action_space)
    k = num_objectives_of(env)
    env_names = list(getattr(env, "objective_names", None) or getattr(env.unwrapped, "objective_names", []) or [])
    if not config.objective_names and len(env_names) == k:
        config = dataclasses.replace(config, objective_names=env_names)  # log under the env's names
    relabeller = counterfactual_relabeller(config, env)  # replay.crm: counterfactual experience (CRM)
    worst = worst_case_termination(env, k) if tcfg.worst_case_termination else None
    session = LearnerSession(enc.dim, spec, k, config, seed=seed, run_dir=out_dir,
                             normalize_observations=tcfg.observation_normalization, relabeller=relabeller,
                             keep_metrics=True, demonstrator=demonstrator if demo_episodes else None)
    session.worst_case = worst  # the ingest charges terminations (as the learner node's does)
    base_env = getattr(env, "unwrapped", env)  # issue 37: a task with contexts records each episode's
    contexts = getattr(base_env, "contexts", None) is not None
    session.context_spec = base_env.task.config.contexts if contexts else ""
    learner = session.learner
    propositions = experience_propositions(env)
    session.accept_experience(in_process_columns(enc.dim, spec, learner, propositions))  # before start: restored
    space = learner.preferences  # ε-conditioned: actors act under a preference drawn per episode
    pref_rng = np.random.default_rng(seed + 7)
    normalizer = session.normalizer
    resumed_from = session.start()
    counters = session.counters  # restored

    def snapshot() -> PolicyActor:  # a frozen policy with a frozen copy of the normaliser
        frozen = learner.policy_snapshot()
        frozen.normalizer = copy.deepcopy(normalizer)
        return frozen

    def run_eval() -> np.ndarray:
        snapshot_ = snapshot()
        if eval_fn is not None:
            returns = np.asarray(eval_fn(snapshot_), np.float64)
        else:
            returns = evaluate(snapshot_, env_fn, tcfg.eval_episodes, seed=seed + 1_000_000 + counters["env_steps"])
        session.record_evaluation(returns)
        return returns

    converged_at: int | None = None
    actor = learner.actor()
    actor.normalizer = normalizer  # acts on the live statistics
    if demo_episodes and spec.is_discrete:
        raise ConfigError("training.demonstrations: demonstrations need a continuous (Box) action space")
    demo = (NoisyDemonstrator(demonstrator, tcfg.demonstrations.action_noise, seed + 5)
            if demonstrator is not None and demo_episodes else None)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total_steps, initial=min(counters["env_steps"], total_steps), unit="step", dynamic_ncols=True)
    def new_preference() -> None:  # the preference an episode is collected under (conditioned)
        if space is not None:
            actor.set_preference(space.sample(1, pref_rng)[0])

    ending: list[str | None] = [None]  # the task's reason for the episode end being written

    def emit(table: np.ndarray, columns: tuple[str, ...]) -> None:
        session.add_chunk(split_experience(table, columns), contiguous=True, termination=ending[0])

    writer = ExperienceWriter(0, 1, emit)  # actor 0; every transition goes to the learner at once
    writer.set_columns(session.ingest.columns + (("context",) if contexts else ()))
    try:
        obs, _ = env.reset(seed=seed + counters["episodes"])
        x = enc(obs)
        new_preference()
        episode = counters["episodes"]
        episode_steps = 0
        while counters["env_steps"] < total_steps:
            demonstrating = demo is not None and session.demonstrating and counters["episodes"] < demo_episodes
            if demonstrating:
                action, log_mu = demo.act(x)
            elif demo is not None and session.demonstrating:
                # the demonstrations are in: clone them once before the policy acts (after a resume
                # mid-demonstrations, on the part collected since), then fit the critics to it
                session.end_demonstrations()
                continue
            else:
                action, log_mu = actor.act(x)
            version = DEMONSTRATION_VERSION if demonstrating else max(1, counters["policy_version"])
            writer.acted(Pending(x, np.atleast_1d(np.asarray(action, np.float64)), float(log_mu), version, episode,
                                 episode_steps, actor.augment(x)[enc.dim:]))
            next_obs, reward, terminated, truncated, info = env.step(dec(action))
            episode_steps += 1
            nx = enc(next_obs)
            info = info if isinstance(info, dict) else {}
            ending[0] = info.get("termination")
            machine = machine_values(info, len(propositions), bool(terminated)) if propositions else ()
            if contexts:
                machine = np.append(machine, base_env.context_code)
            if not writer.observe(episode, episode_steps, np.asarray(reward, np.float64).reshape(-1), nx,
                                  bool(terminated), bool(truncated), machine):
                raise RuntimeError(f"the experience writer dropped a transition (row of {len(session.ingest.columns)} "
                                   "columns expected)")
            if terminated or truncated:
                episode_steps = 0
                obs, _ = env.reset(seed=seed + counters["episodes"])
                episode = counters["episodes"]
                x = enc(obs)
                new_preference()
            else:
                x = nx
            logged = len(session.metrics)
            session.learn()
            if session.diverged:
                warnings.warn(f"training stopped at {counters['env_steps']} env steps: {session.diverged}",
                              RuntimeWarning, stacklevel=2)
                break
            if bar is not None and len(session.metrics) > logged:
                stats = session.metrics[-1]
                bar.set_postfix({n: f"{stats[f'q_mean/{n}']:.3g}" for n in learner.objective_names[:3]}, refresh=False)
            step = counters["env_steps"]
            if tcfg.eval_every and step % tcfg.eval_every == 0 and step < total_steps:
                run_eval()
                if tcfg.stop_when_stable and (since := stable_since(session.evaluations, tcfg.stop_when_stable)) is not None:
                    converged_at = since
                    break
            if session.checkpoint_due() and step < total_steps:
                session.checkpoint()
            if bar is not None:
                bar.update(1)
        if converged_at is not None:
            final = session.evaluations[-1][1]  # stopped right after this evaluation: it is the final one
        else:
            final = run_eval() if total_steps > 0 else None
        session.finish("end of training")
    finally:
        env.close()
        if bar is not None:
            bar.close()
        session.close()
    return TrainResult(
        policy=snapshot(), learner=learner, metrics=session.metrics, evaluations=session.evaluations,
        final_return=final, env_steps=counters["env_steps"], updates=learner.num_updates,
        episodes=counters["episodes"], wall_time_s=time.monotonic() - start_time, out_dir=session.run_dir,
        resumed_from=resumed_from, objective_names=list(learner.objective_names), converged_at=converged_at,
        diverged=session.diverged,
    )
