"""``morl-robot evaluate RUN_DIR|policy.onnx|random [--episodes N] [--seed S] [--json]``: the
evaluation protocol (:mod:`morl_robot.evaluation.protocol`) on one policy.

Deterministic episodes on seeds S … S+N−1; prints a Markdown table (each objective's mean return
with its 95 % bootstrap CI, success rate, peak and mean contact force, the distribution of the
per-episode peak force (p50/p90/p99 with bootstrap CIs, max), the fraction of episodes above the
task's force threshold and reaching the safety collision level with Wilson CIs, termination
reasons) or, with ``--json``, one JSON object on stdout (its ``force`` block:
:mod:`morl_robot.evaluation.protocol`).

Defaults: 100 episodes (``--episodes``) on seeds 50000 … 50099 (``--seed``), held out from the
seeds the recipes were tuned on (0 … 9) and from the demo's evaluation seeds (10000 …).  100
episodes are what makes a rate mean something: 2 episodes in 100 above the threshold is 2 % with
a 95 % Wilson interval of about [0.6 %, 7 %]; with 10 episodes, 0 of 10 is still [0 %, 28 %].  ``random --task T`` evaluates uniform random actions;
``scripted --task T`` a hand-written controller (Sawyer insertion, Shadow slow press, slow dial sweep, grasp and lift);
``press --task sawyer_peg_in_hole`` the hostile case (full speed straight down into the fixture, every step).  ``--against scripted``:
instead of the protocol, the policy's action error against the task's scripted controller along
the controller's own trajectories.

An ONNX policy acts with exactly what the policy server would send
(:meth:`~morl_robot.serving.runtime.OnnxPolicy.served_action`); a model whose ``action`` output is
not its contract's scaling of its ``mean``, or whose contract names another robot, control mode or
rate than its task's, is refused (rc 2, one line naming the output or field and the file).

A policy of a reward-machine task (its contract's ``reward_machine``) is evaluated in the product of
its task and that machine, checked against this installation's machine files: the table lists the
task's objectives and the machine's.  A policy with delta actions (contract ``action_mode``) acts on
its task built in that mode.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from morl_robot.cli.options import add_set
from morl_robot.cli.video import add_video, evaluation_videos, video_summary
from morl_robot.errors import UsageError
from morl_robot.evaluation.protocol import DEFAULT_EPISODES, HELD_OUT_SEED

if TYPE_CHECKING:
    from morl_robot.evaluation.protocol import LoadedPolicy


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate a policy deterministically on fixed seeds (the protocol of every result)")
    p.add_argument("policy", help="policy.onnx, a run directory (its policy.onnx), 'random' (with --task), or "
                                  "'scripted' (--task sawyer_peg_in_hole|shadow_touch|shadow_turn|shadow_orient: a hand-written controller), "
                                  "or 'press' (--task sawyer_peg_in_hole: the hostile case, full speed straight down "
                                  "at every step)")
    p.add_argument("--episodes", type=int, default=DEFAULT_EPISODES,
                   help=f"episodes (default {DEFAULT_EPISODES}: enough for a rate to mean something; a 2 %% "
                        "rate over 100 episodes has the 95 %% Wilson interval [0.6 %%, 7 %%])")
    p.add_argument("--seed", type=int, default=HELD_OUT_SEED,
                   help=f"episode i resets with seed S+i (default {HELD_OUT_SEED}: held out from the seeds "
                        "the recipes were tuned on, 0…9, and from the demo's evaluation seeds, 10000…)")
    p.add_argument("--task", default=None,
                   help="task (needed for 'random'; otherwise checked against the policy) (default: the policy's)")
    add_set(p, ("task", "robot", "safety"))
    p.add_argument("--json", action="store_true", help="print one JSON object (EVAL) instead of Markdown")
    p.add_argument("--no-safety", action="store_true",
                   help="act without the robot's safety rules (default: through them, as deployed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--action-mode", choices=["absolute", "delta"], default=None,
                   help="Shadow Hand tasks, a random or scripted policy: act with absolute motor targets or with "
                        "their changes from the measured positions (default: the task YAML's action_mode; an "
                        "ONNX policy's contract declares its own)")
    p.add_argument("--gain", type=float, default=None,
                   help="scripted sawyer_peg_in_hole: the insertion controller's gain (1/s, default 5); lower "
                        "approaches slower and presses less (the scripted reference front of the Sawyer sweep)")
    p.add_argument("--against", choices=["scripted"], default=None,
                   help="instead of the protocol: the policy's action error against the task's scripted "
                        "controller on the controller's own trajectories (per action component, robot units; "
                        "e.g. how exactly a behaviour clone reproduces its demonstrator) (default: the protocol)")
    p.add_argument("--preference", type=float, nargs="+", default=None, metavar="EPS",
                   help="ε-conditioned policy: the preference to act under, one ε per objective "
                        "(default: the centre of its box)")
    p.add_argument("--contact-control", choices=["compliant", "stiff"], default="compliant",
                   help="compliant (default): the force-limited admittance in the robot backend, the safety "
                        "rules' approach-speed limit, the peg held along the hole's axis (docs/explanation/contact_control.md); "
                        "stiff: the stack before them, to re-check the baseline figures measured then")
    add_video(p, "episode (DIR/episode_<seed>.mp4, at the control rate)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from morl_robot.evaluation.protocol import evaluate_policy, load_policy

    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    loaded = load_policy(args.policy, args.task, args.seed, args.preference, args.action_mode, args.gain)
    if args.against:
        if args.video is not None:
            raise UsageError("--video renders the protocol's episodes; --against scripted runs the controller's")
        return _action_error(args, loaded)
    videos = evaluation_videos(args.video, loaded)
    result = evaluate_policy(loaded.act, loaded.task, args.episodes, args.seed, loaded.description,
                             progress=not args.no_progress and not args.json and sys.stderr.isatty(),
                             safety=not args.no_safety, env_fn=loaded.make_env,
                             contact_control=args.contact_control, observer=videos)
    if videos is not None:
        print(video_summary(videos), file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(result.to_markdown())
    return 0


def _action_error(args: argparse.Namespace, loaded: LoadedPolicy) -> int:
    from morl_robot.evaluation.protocol import action_error, scripted_policy

    reference = scripted_policy(loaded.task, overrides=loaded.task_overrides)
    err = action_error(loaded.act, reference.act, loaded.task, args.episodes, args.seed, loaded.task_overrides)
    err.update({"policy": loaded.description, "reference": reference.description,
                "episodes": args.episodes, "seed": args.seed})
    if args.json:
        print(json.dumps(err))
        return 0
    print(f"action error of {err['policy']} against {err['reference']} on its trajectories "
          f"({err['steps']} steps, seeds {args.seed}…{args.seed + args.episodes - 1}; {err['units']})\n")
    print("| action | mean abs | max abs |\n|---|---|---|")
    for lab, m, x in zip(err["labels"], err["mean_abs"], err["max_abs"]):
        print(f"| {lab} | {m:.4f} | {x:.4f} |")
    return 0
