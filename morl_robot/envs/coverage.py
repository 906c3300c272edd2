"""Coverage distributions of transitions for reward comparisons (EPIC, Gleave et al. 2021, §6.2).

A coverage distribution D is a set of transitions (s, a, s') in a task's *transition features*
(:meth:`~morl_robot.tasks.base.Task.transition_features`: the sensor readings its rewards need, in
the task frame) and normalised actions.  Sources:

* ``random``: rollouts of a uniformly random policy (the paper's π_uni: broad support);
* a policy file ``*.onnx``: rollouts of the exported policy, exploring (its Gaussian), so the
  distribution is the policy's neighbourhood rather than a single path;
* a run directory: its logged transitions (``transitions*.npz``, written by
  :func:`save_transitions`, e.g. ``morl-robot epic --save-coverage``); without them, its
  ``policy.onnx``.  (A run's replay holds observations, not the sensor readings every reward
  needs, e.g. the block's touch sensor, so it is not used.)
* a ``.npz`` file written by :func:`save_transitions`.

Several sources form a mixture with equal shares of transitions, the paper's recommendation:
"broad coverage over plausible transitions" (its Mix of π_uni and π*).
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from morl_robot.errors import UsageError


@dataclass
class TransitionLog:
    """Transitions of one task: features s [N, F], actions a [N, D], features s' [N, F], the
    episode index of each [N] and where they came from."""

    task: str
    feature_labels: tuple[str, ...]
    states: np.ndarray
    actions: np.ndarray
    next_states: np.ndarray
    episode: np.ndarray
    source: str

    def __len__(self) -> int:
        return int(self.states.shape[0])

    @staticmethod
    def concatenate(logs: list[TransitionLog]) -> TransitionLog:
        first = logs[0]
        for log in logs[1:]:
            if log.task != first.task or log.feature_labels != first.feature_labels:
                raise UsageError(f"coverage sources disagree: task '{log.task}' ({len(log.feature_labels)} features, "
                                 f"{log.source}) vs '{first.task}' ({len(first.feature_labels)}, {first.source})")
        offsets = np.cumsum([0] + [int(log.episode.max()) + 1 if len(log) else 0 for log in logs[:-1]])
        return TransitionLog(first.task, first.feature_labels,
                             np.concatenate([log.states for log in logs]),
                             np.concatenate([log.actions for log in logs]),
                             np.concatenate([log.next_states for log in logs]),
                             np.concatenate([log.episode + o for log, o in zip(logs, offsets)]),
                             " + ".join(log.source for log in logs))


def collect_transitions(task: str, policy: str, steps: int, seed: int = 0, progress: bool = False,
                        config_file: str | os.PathLike[str] | None = None) -> TransitionLog:
    """Roll ``task`` out in simulation for ``steps`` steps with ``policy`` (``random`` or an ONNX
    file) and record every transition's features and normalised action."""
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv(task, config_file=config_file)
    rng = np.random.default_rng(seed)
    d = env.action_space.shape[0]
    if policy == "random":
        def act(obs: np.ndarray) -> np.ndarray:
            return rng.uniform(-1.0, 1.0, size=d)
    else:
        from morl_robot.serving.runtime import OnnxPolicy

        onnx = OnnxPolicy.from_file(policy)
        if onnx.action_dim != d or onnx.obs_dim != env.observation_space.shape[0]:
            raise UsageError(f"policy {policy} has observation/action widths {onnx.obs_dim}/"
                             f"{onnx.action_dim}; task '{task}' needs {env.observation_space.shape[0]}/{d}")

        def act(obs: np.ndarray) -> np.ndarray:
            return onnx.act(obs, deterministic=False, rng=rng).action

    labels = env.task.transition_feature_labels()
    states, actions, nexts, episodes = [], [], [], []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=steps, desc=f"coverage {task} ({Path(policy).name})", unit="step", leave=False)
    try:
        episode = 0
        obs, _ = env.reset(seed=seed)
        s = env.task.transition_features(env.state)
        labels = env.task.transition_feature_labels()
        for _ in range(steps):
            a = np.asarray(act(obs), dtype=np.float64)
            obs, _, terminated, truncated, _ = env.step(a)
            s2 = env.task.transition_features(env.state)
            states.append(s)
            actions.append(a)
            nexts.append(s2)
            episodes.append(episode)
            s = s2
            if terminated or truncated:
                episode += 1
                obs, _ = env.reset(seed=seed + episode)
                s = env.task.transition_features(env.state)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        env.close()
    return TransitionLog(task, tuple(labels), np.array(states), np.array(actions), np.array(nexts),
                         np.array(episodes, dtype=np.int64), f"{policy} x {steps}")


def save_transitions(path: str | os.PathLike[str], log: TransitionLog) -> Path:
    """Write ``log`` as ``.npz`` atomically."""
    from morl_robot.records import write_bytes_atomic

    buf = io.BytesIO()
    np.savez_compressed(buf, task=np.array(log.task), feature_labels=np.array(log.feature_labels),
                        states=log.states, actions=log.actions, next_states=log.next_states, episode=log.episode,
                        source=np.array(log.source))
    return write_bytes_atomic(path, buf.getvalue())


def load_transitions(path: str | os.PathLike[str]) -> TransitionLog:
    """Read a file written by :func:`save_transitions`; a clear error when it is not one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return TransitionLog(str(z["task"]), tuple(str(x) for x in z["feature_labels"]), z["states"],
                                 z["actions"], z["next_states"], z["episode"], f"{path}")
    except (OSError, KeyError, ValueError) as exc:
        raise UsageError(f"{path}: not a transition log written by morl-robot epic --save-coverage ({exc})") from None


def run_task(run_dir: str | os.PathLike[str]) -> str:
    """The task of a training run directory (its ``session.yaml``)."""
    import yaml

    path = Path(run_dir) / "session.yaml"
    if not path.is_file():
        raise UsageError(f"{run_dir}: not a run directory (no session.yaml)")
    task = (yaml.safe_load(path.read_text()) or {}).get("task")
    if not task:
        raise UsageError(f"{path}: key 'task' is missing")
    return str(task)


def load_coverage(task: str, sources: list[str], steps: int, seed: int = 0, progress: bool = False,
                  config_file: str | os.PathLike[str] | None = None) -> TransitionLog:
    """The mixture (equal shares) of the coverage ``sources`` for ``task`` (module docstring);
    ``steps`` transitions are collected per rolled-out source."""
    if steps < 1:
        raise UsageError(f"--steps must be >= 1, got {steps}")
    logs: list[TransitionLog] = []
    for i, source in enumerate(sources):
        p = Path(source)
        if source == "random" or (p.suffix == ".onnx" and p.is_file()):
            logs.append(collect_transitions(task, source, steps, seed + 1000 * i, progress, config_file))
        elif p.suffix == ".npz" and p.is_file():
            logs.append(load_transitions(p))
        elif p.is_dir():
            files = sorted(p.glob("transitions*.npz"))
            if files:
                logs += [load_transitions(f) for f in files]
            elif (p / "policy.onnx").is_file():
                logs.append(collect_transitions(task, str(p / "policy.onnx"), steps, seed + 1000 * i, progress,
                                                config_file))
            else:
                raise UsageError(f"--coverage {source}: the folder has neither transitions*.npz nor policy.onnx")
        else:
            raise UsageError(f"--coverage {source}: allowed: random, a policy .onnx file, a transitions .npz file "
                             "or a run directory")
    for log in logs:
        if log.task != task:
            raise UsageError(f"coverage {log.source} is of task '{log.task}', not '{task}'")
    if len(logs) > 1:  # equal shares: subsample every source to the smallest
        n = min(len(log) for log in logs)
        rng = np.random.default_rng(seed)
        logs = [_subsample(log, n, rng) for log in logs]
    return TransitionLog.concatenate(logs)


def _subsample(log: TransitionLog, n: int, rng: np.random.Generator) -> TransitionLog:
    if len(log) == n:
        return log
    idx = np.sort(rng.choice(len(log), n, replace=False))
    return TransitionLog(log.task, log.feature_labels, log.states[idx], log.actions[idx], log.next_states[idx],
                         log.episode[idx], log.source)
