"""``morl-robot experiment hopper-dynamics``: MO-MPO vs SAC on mo-hopper-v5 trained on the nominal
model, evaluated on unseen dynamics (:mod:`morl_robot.experiments.hopper_dynamics`)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(exp_sub: Any) -> None:
    p = exp_sub.add_parser("hopper-dynamics", help="MORL-generalisation paper in miniature: MO-MPO vs SB3 SAC on "
                           "mo-hopper-v5 trained nominal, scored by SAC's own reward on light/heavy dynamics")
    p.add_argument("--out", required=True, type=Path,
                   help="folder: runs/<method>_s<seed>/result.json, results.json, results.md, returns.png")
    p.add_argument("--steps", type=int, default=6_000, help="training steps per run (default 6000)")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per method (default 3)")
    p.add_argument("--methods", nargs="+", default=None, help="default: mo-mpo sac")
    p.add_argument("--contexts", default="nominal,light,heavy",
                   help="comma-separated contexts of config/contexts/gym/mo-hopper-v5.yaml, or held_out for all "
                        "(default nominal,light,heavy)")
    p.add_argument("--eval-episodes", type=int, default=5, help="episodes per (policy, context) (default 5)")
    p.add_argument("--points", type=int, default=11, help="MO-MPO preferences evaluated (default 11)")
    p.add_argument("--min-replay", type=int, default=None,
                   help="tiny budgets: MO-MPO replay.min_size_to_sample and SAC learning_starts (default: the profiles')")
    p.add_argument("--max-episode-steps", type=int, default=None,
                   help="tiny budgets: cap every episode (default: the env's 1000)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated wall time only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from morl_robot.experiments import hopper_dynamics as hd

    cfg = hd.HopperDynamics(out=args.out, steps=args.steps, seeds=args.seeds, contexts=args.contexts,
                            eval_episodes=args.eval_episodes, points=args.points, min_size_to_sample=args.min_replay,
                            max_episode_steps=args.max_episode_steps,
                            **({"methods": args.methods} if args.methods else {}))
    cfg.validate()
    if args.dry_run:
        print(hd.plan_text(cfg))
        return 0
    results = hd.run(cfg, progress=not args.no_progress)
    print(hd.format_table(results))
    print(f"wrote {args.out / 'results.json'}")
    return 0
