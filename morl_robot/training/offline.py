"""MO-MPO from recorded sessions (``morl-robot train --from-recording A.mcap [B.mcap …]``).

The recordings' transitions (:mod:`.recordings`) go into the replay of the learner a training
run would use (:func:`~morl_robot.training.session.session_for_task`: the same learner YAML,
contract, checkpoints, ``metrics.csv``, ``episodes.csv`` and ``policy.onnx``), then, with no robot:

1. behaviour cloning of the recorded (executed) actions, ``training.demonstrations.pretrain_updates``
   minibatches at ``pretrain_lr`` (0: none) — the recordings stand in for the demonstrations;
2. the critic warm-up, ``training.demonstrations.critic_warmup_updates``;
3. MO-MPO updates on the fixed replay (default: as many as the samples-per-insert ratio allows an
   online run for that many transitions: ``samples_per_insert · N / batch_size``).

The behaviour log-probability of a recorded action is unknown (the recording holds the executed
command, not the policy's distribution): it is stored as :data:`UNKNOWN_LOG_MU`, so Retrace's
traces are cut (c = 0) and the critic targets are one-step (expected SARSA under π).
docs/howto/learn_from_recordings.md.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import ConfigError
from morl_robot.training.recordings import RecordedTransitions, TaskFrame, task_frame

#: Behaviour log-probability stored for a recorded action: π/μ = 0, Retrace traces cut.
UNKNOWN_LOG_MU = 1.0e6
#: What ``train --from-recording`` writes in ``--out`` besides a learner run's files.
SUMMARY_NAME = "from_recording.json"


@dataclass
class OfflineResult:
    """What :func:`train_offline` did."""

    transitions: int
    episodes: int  # complete recorded episodes in the replay
    clone_updates: int
    critic_warmup_updates: int
    updates: int  # MO-MPO updates on the fixed replay
    rewards_recomputed: bool
    recorded_returns: list[float]  # mean undiscounted return per objective of the recorded episodes
    sources: list[dict[str, Any]]  # per recording: path, MB
    seconds: float
    policy: Path | None


def fill_replay(session: Any, recorded: RecordedTransitions, log_episodes: bool = True) -> int:
    """Insert ``recorded`` into ``session``'s replay in order (a bootstrapped cut, ``truncated``,
    wherever the next row does not continue the episode) and log every recorded episode whose
    first step is in it (``episodes.csv``; not with ``log_episodes`` False); returns how many
    complete episodes it holds."""
    n, k = len(recorded), len(recorded.objectives)
    worst = getattr(session, "worst_case", None)
    returns, complete, logged = np.zeros(k), True, 0
    for i in range(n):
        if i == 0 or (recorded.stream[i], recorded.episode[i]) != (recorded.stream[i - 1], recorded.episode[i - 1]):
            returns, complete = np.zeros(k), bool(recorded.step[i] == 0)
        terminated, truncated = bool(recorded.terminated[i]), bool(recorded.truncated[i])
        follows = (i + 1 < n and recorded.stream[i + 1] == recorded.stream[i]
                   and recorded.episode[i + 1] == recorded.episode[i] and recorded.step[i + 1] == recorded.step[i] + 1)
        cut = not (terminated or truncated) and not follows
        reward = recorded.reward[i]
        learned = worst.terminal_reward(reward, int(recorded.step[i]) + 1) if worst is not None and terminated else reward
        session.add_transition(recorded.obs[i], recorded.action[i], np.asarray(learned, np.float32), recorded.next_obs[i],
                               terminated, truncated or cut, UNKNOWN_LOG_MU)
        returns = returns + reward
        if terminated or truncated:
            if complete and log_episodes:
                session.record_episode(returns.copy(), "terminated" if terminated else "truncated",
                                       {"length": int(recorded.step[i]) + 1, "actor": int(recorded.stream[i]),
                                        "policy_version": 0})
            logged += int(complete)
        elif cut:
            complete = False
    return logged


def read_for_session(session: Any, frame: TaskFrame, paths: Sequence[str | os.PathLike[str]]) -> RecordedTransitions:
    """The recordings' transitions for ``session``'s policy contract (refused, naming why, if the
    learner's observations or actions are not the recordings')."""
    c = session.contract
    if c is not None and (tuple(c.observation_labels) != frame.observation_labels
                          or tuple(c.action_labels) != frame.action_labels):
        raise ConfigError("train --from-recording: the learner's observations or actions are not the task's own "
                          "(an ε-conditioned or reward-machine learner cannot learn from recordings yet)")
    return frame.read(paths)


def train_offline(paths: Sequence[str | os.PathLike[str]], task: str, task_config: str | None,
                  learner_config: str | Path, out: Path, *, seed: int = 0, updates: int | None = None,
                  normalize_observations: bool = False, max_transitions: int | None = None,
                  report: Callable[[str], None] = print) -> OfflineResult:
    """Train the task's learner on the recordings ``paths`` alone (see the module docstring) into
    the run directory ``out`` (a new run: refused if it holds a checkpoint); ``max_transitions``:
    only the first that many recorded transitions."""
    from morl_robot.learning.checkpoint import run_checkpoint_dir
    from morl_robot.training.session import session_for_task

    start = time.monotonic()
    ckpt = run_checkpoint_dir(out)
    if ckpt.is_dir() and any(ckpt.iterdir()):
        raise ConfigError(f"--out {out}: holds a run already (checkpoints/); learning from recordings makes a new "
                          "run: choose another --out")
    frame = task_frame(task, task_config)
    session = session_for_task(task, task_config, learner_config, seed=seed, run_dir=out,
                               normalize_observations=normalize_observations)
    recorded = read_for_session(session, frame, paths)
    if max_transitions is not None:
        recorded = recorded.head(max_transitions)
    if updates is not None and updates < 0:
        raise ConfigError(f"--updates must be >= 0, got {updates}")
    cfg = session.config
    dcfg = cfg.training.demonstrations
    session.counters["demonstrations_done"] = 1  # the recordings are the demonstrations: no demonstrator acts
    try:
        session.start()
        logged = fill_replay(session, recorded)
        sizes = [{"path": str(p), "MB": round(Path(p).stat().st_size / 1e6, 2)} for p in
                 dict.fromkeys(s.rsplit(":", 1)[0] for s in recorded.streams)]
        report(f"replay: {len(recorded)} transitions, {logged} complete episodes from {len(sizes)} recording(s) "
               f"({recorded.task_steps} task steps, {recorded.commands} executed commands"
               + (", rewards recomputed by the task" if recorded.rewards_recomputed else "") + ")")
        if dcfg.pretrain_updates:
            obs = recorded.obs.astype(np.float32)
            x = session.normalizer.normalize(obs) if session.normalizer is not None else obs
            loss = session.learner.behaviour_clone(x, recorded.action.astype(np.float32), dcfg.pretrain_updates,
                                                   cfg.batch_size, seed, dcfg.pretrain_lr)
            report(f"behaviour cloning of the recorded actions: {dcfg.pretrain_updates} updates, last loss {loss:.4g}")
        if dcfg.critic_warmup_updates:
            session.warm_up_critic(dcfg.critic_warmup_updates)
        if updates is None:
            updates = int(cfg.replay.samples_per_insert * len(recorded) / cfg.batch_size)
        if updates and len(session.replay) < cfg.batch_size:
            raise ConfigError(f"the recordings fill the replay with {len(session.replay)} sequences, fewer than one "
                              f"batch ({cfg.batch_size}): record more steps, or pass --updates 0 to clone only")
        done = 0
        while done < updates and not session.diverged:
            step = session.learn(max_updates=min(updates - done, 100), offline=True)
            if step == 0:  # nothing sampled (cannot happen with a full batch; never spin)
                raise ConfigError(f"no MO-MPO update could be made on the recorded replay ({len(session.replay)} "
                                  f"sequences, batch {cfg.batch_size})")
            done += step
            report(f"MO-MPO updates {done}/{updates}")
        if session.diverged:
            report(f"stopped: {session.diverged}")
        session.finish("offline training from recordings")
    finally:
        session.close()
    returns = np.mean(recorded.episode_returns(), axis=0) if recorded.episodes else np.zeros(len(recorded.objectives))
    result = OfflineResult(len(recorded), logged, int(dcfg.pretrain_updates), int(dcfg.critic_warmup_updates), done,
                           recorded.rewards_recomputed, [float(v) for v in returns], sizes,
                           round(time.monotonic() - start, 2), out / "policy.onnx")
    summary = {**{k: v for k, v in result.__dict__.items() if k != "policy"}, "policy": str(result.policy),
               "objectives": list(recorded.objectives), "task": task, "unanswered_steps": recorded.unanswered_steps,
               "task_steps": recorded.task_steps, "commands": recorded.commands,
               "action": "command_safe (executed), normalised by the task's action bounds",
               "behaviour_log_prob": "unknown: stored as 1e6 (Retrace traces cut)"}
    (out / SUMMARY_NAME).write_text(json.dumps(summary, indent=1) + "\n")
    return result


def seed_replay(session: Any, task: str, task_config: str | None, paths: Sequence[str | os.PathLike[str]],
                report: Callable[[str], None] = print) -> int:
    """An online run's replay seeded with the recordings ``paths`` before any actor's experience
    (the learner node's ``recordings`` parameter, ``train --from-recording … --online``).  The
    recorded transitions count in the samples-per-insert ratio (the learner learns on them at
    once) but not as the run's env steps (``--steps`` counts the robot's).  Returns how many."""
    frame = task_frame(task, task_config)
    recorded = read_for_session(session, frame, paths)
    steps, episodes = session.counters["env_steps"], session.counters["episodes"]
    fill_replay(session, recorded, log_episodes=False)
    session.counters["env_steps"], session.counters["episodes"] = steps, episodes
    report(f"replay seeded with {len(recorded)} recorded transitions ({recorded.episodes} episode ends) from "
           f"{len(paths)} recording(s)")
    return len(recorded)
