"""``morl-robot train --from-recording A.mcap [B.mcap …] [--updates N] [--steps S]``: MO-MPO offline
from recorded sessions (no robot, no graph: the in-process learner, :mod:`morl_robot.training.offline`);
``--steps`` keeps the first S recorded transitions.
docs/howto/learn_from_recordings.md."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from morl_robot.errors import UsageError

#: ``train`` options that need a session graph (refused with --from-recording).
GRAPH_OPTIONS = (("record", "--record"), ("foxglove", "--foxglove"), ("actors", "--actors"),
                 ("actors_kind", "--actors-kind"), ("envs", "--envs"), ("backend", "--backend"),
                 ("use_sim_time", "--use-sim-time"))


def add_options(p: argparse.ArgumentParser) -> None:
    """``--from-recording`` and ``--updates`` on ``train``."""
    p.add_argument("--from-recording", nargs="+", default=None, metavar="PATH",
                   help="train offline from recorded sessions (session.mcap files or run directories recorded "
                        "with --record): their transitions fill the replay, no robot runs (default: none)")
    p.add_argument("--online", action="store_true",
                   help="with --from-recording: run the training session (robot, actors, learner) with the "
                        "recordings in its learner's replay first, instead of training offline")
    p.add_argument("--updates", type=int, default=None,
                   help="--from-recording: MO-MPO updates on the recorded replay (default: samples_per_insert × "
                        "transitions / batch_size, what an online run would make)")


def run(args: argparse.Namespace, cfg: Any, out: Path) -> int:
    """Train offline from ``args.from_recording`` into ``out`` (the task and learner of ``cfg``)."""
    from morl_robot.learning.run_lock import RunLock
    from morl_robot.training.offline import train_offline

    used = [flag for name, flag in GRAPH_OPTIONS if getattr(args, name, None) not in (None, False)]
    if args.role != "all":
        used.append("--role")
    if used:
        raise UsageError(f"--from-recording trains offline, with no session graph: {', '.join(used)} do not apply")
    if args.updates is not None and args.updates < 0:
        raise UsageError(f"--updates must be at least 0, got {args.updates}")
    node = cfg.learner_node
    lock = RunLock.acquire(out, "morl-robot train --from-recording")
    try:
        result = train_offline(args.from_recording, cfg.task, node.task_config or None, node.config, out,
                               seed=cfg.seed, updates=args.updates, max_transitions=args.steps,
                               normalize_observations=node.observation_normalization,
                               report=lambda line: print(line, file=sys.stderr))
    finally:
        lock.release()
    print(f"done: {result.transitions} recorded transitions ({result.episodes} episodes), "
          f"{result.clone_updates} cloning + {result.updates} MO-MPO updates in {result.seconds:.0f} s; "
          f"policy {result.policy}")
    return 0
