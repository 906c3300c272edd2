"""``morl-robot prism``: PRISM in MO-MPO (issue 38; docs/explanation/prism.md).

* ``prism run --env ENV --out DIR``: oracle (dense) vs baseline (sparse) vs PRISM (ReSymNet +
  SymReg) and its ablations, per seed, with a progress bar; ``results.json``, ``fronts.png`` and
  the reward model's prediction plots in DIR.
* ``prism mirror-check --map NAME``: a mirror map is an involution, fits its environment's spaces,
  and how far the environment is from symmetric under it (reflected rollouts).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("prism", help="PRISM: learned densification of sparse objectives and mirror symmetry (issue 38)")
    psub = parser.add_subparsers(dest="prism_command", metavar="ACTION")
    psub.required = True

    run = psub.add_parser("run", help="oracle vs sparse baseline vs PRISM on an MO-Gymnasium task")
    run.add_argument("--out", required=True, type=Path, help="output folder (results.json, fronts.png, runs/)")
    run.add_argument("--env", default="mo-hopper-v5", help="MO-Gymnasium environment id (default mo-hopper-v5)")
    run.add_argument("--prism", default=None,
                     help="PRISM config: a name under config/prism/ or a path (default: the --env name)")
    run.add_argument("--variants", nargs="+", default=["oracle", "baseline", "prism"],
                     help="oracle baseline prism prism_no_symreg prism_no_residual (default: oracle baseline prism)")
    run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds (default 0 1 2)")
    run.add_argument("--mode", default="conditioned", choices=("conditioned", "per_setting"),
                     help="one ε-conditioned policy, or one policy per ε setting (default conditioned)")
    run.add_argument("--learner", default="conditioned_spi64",
                     help="learner profile (ε-conditioned; its observation normalisation is kept) "
                          "(default conditioned_spi64)")
    run.add_argument("--settings", type=int, default=3, help="per_setting: ε settings (default 3)")
    run.add_argument("--points", type=int, default=11, help="evaluation preferences (conditioned; default 11)")
    run.add_argument("--eval-episodes", type=int, default=3, help="episodes per evaluated policy (default 3)")
    run.add_argument("--steps-per-cycle", type=int, default=None, help="M (default: the config's, Table 8: 100000)")
    run.add_argument("--refinements", type=int, default=None, help="IR (default: the config's, 2)")
    run.add_argument("--initial-episodes", type=int, default=None, help="N random episodes (default: the config's, 1000)")
    run.add_argument("--policy-episodes", type=int, default=None, help="E policy episodes per refinement (default 1000)")
    run.add_argument("--epochs", type=int, default=None, help="ReSymNet epochs at most (default: the config's, 1000)")
    run.add_argument("--min-replay", type=int, default=None,
                     help="replay.min_size_to_sample (default: min(the profile's, M / 4))")
    run.add_argument("--label", default="", help="a label written into results.json (e.g. 'pipeline check')")
    run.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(func=_run)

    rep = psub.add_parser("report", help="recompute a committed comparison's hypervolumes, EUMs and CIs from its fronts")
    rep.add_argument("results", type=Path, help="a results.json written by prism run")
    rep.set_defaults(func=_report)

    mc = psub.add_parser("mirror-check", help="check a mirror map: involution, spaces, reflected rollouts")
    mc.add_argument("--map", required=True, help="a name under config/prism/mirror/ or a path")
    mc.add_argument("--rollouts", type=int, default=3, help="reflected rollouts (seeds 0…) (default 3)")
    mc.add_argument("--steps", type=int, default=50, help="steps per rollout (default 50)")
    mc.set_defaults(func=_mirror_check)


def _run(args: argparse.Namespace) -> int:
    from morl_robot.prism.experiment import PrismExperiment, format_summary, run

    exp = PrismExperiment(env_id=args.env, prism=args.prism or args.env, variants=list(args.variants),
                          seeds=list(args.seeds), mode=args.mode, learner=args.learner, settings=args.settings,
                          points=args.points, eval_episodes=args.eval_episodes, steps_per_cycle=args.steps_per_cycle,
                          refinements=args.refinements, initial_episodes=args.initial_episodes,
                          policy_episodes=args.policy_episodes, epochs=args.epochs, min_replay=args.min_replay,
                          label=args.label, threads=args.threads)
    results = run(exp, args.out, progress=not args.no_progress, command=" ".join(["morl-robot", *sys.argv[1:]]))
    print(format_summary(results))
    print(f"wrote {args.out / 'results.json'} and {args.out / 'fronts.png'}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from morl_robot.errors import UsageError
    from morl_robot.prism.experiment import format_summary, load_results, recheck

    try:
        results = load_results(args.results)
    except (OSError, ValueError) as e:
        raise UsageError(f"{args.results}: cannot read a prism run's results.json ({e})") from e
    recomputed, mismatches = recheck(results)
    print(format_summary(recomputed))
    for line in mismatches:
        print(line, file=sys.stderr)
    print(f"{args.results}: {len(results['runs'])} runs; recomputed from their fronts: "
          f"{'match' if not mismatches else f'{len(mismatches)} differ'}")
    return 0 if not mismatches else 1


def _mirror_check(args: argparse.Namespace) -> int:
    import functools

    import mo_gymnasium

    from morl_robot.errors import UsageError
    from morl_robot.prism.mirror import is_involution, load_mirror_map, symmetry_defect

    mirror = load_mirror_map(args.map)
    try:
        env = mo_gymnasium.make(mirror.env_id)
    except Exception as e:
        raise UsageError(f"mirror map {args.map!r}: cannot make {mirror.env_id!r} ({type(e).__name__}: {e})") from e
    mirror.check_spaces(env.observation_space, env.action_space)
    env.close()
    inv = is_involution(mirror)
    print(f"{args.map}: {mirror.env_id}, negates observations {mirror.observation_negate} and actions "
          f"{mirror.action_negate}; involution: {inv}; declared exact: {mirror.exact}")
    if mirror.state is not None:
        defects = [symmetry_defect(mirror, functools.partial(mo_gymnasium.make, mirror.env_id), args.steps, seed)
                   for seed in range(args.rollouts)]
        print(f"reflected rollouts: max |obs(L s, K a) - L obs(s, a)| = {', '.join(f'{d:.3g}' for d in defects)}")
        if mirror.exact and max(defects) > 1e-6:
            print("the map is declared exact but the environment is not symmetric under it", file=sys.stderr)
            return 1
    return 0 if inv else 1
