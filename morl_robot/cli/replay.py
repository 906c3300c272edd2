"""``morl-robot replay SESSION.mcap [--safety CONFIG] [--json] [--out DIR]``: a safety post-mortem.

Re-runs the safety rules over a recorded session (``--record``'s ``<out>/session.mcap``) and prints
every violation with its time (s from the start and UTC), rule, key, level, value, threshold and
unit; compares them with what the live monitor published (``safety/violations``); ends with one
line: WOULD TRIP (first e-stop time and rule) or NO TRIP, and the counts per rule and level.
``--safety`` (a robot name or a safety YAML) asks "would this session have tripped under these
limits?".  Exit 0: no e-stop-level violation; 1: one or more (:mod:`morl_robot.cli.exit_codes`).
The core is :mod:`morl_robot.safety.replay`; docs/howto/post_mortem.md says what is replayed exactly.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="re-run the safety rules over a recorded session (safety post-mortem)")
    p.add_argument("recording", metavar="SESSION.mcap",
                   help="a recording of `--record` (<out>/session.mcap, or the run folder holding it)")
    p.add_argument("--safety", default=None, metavar="NAME|PATH",
                   help="safety rules to replay under: a robot name (config/safety/<robot>.yaml) or a safety YAML "
                        "(default: the recorded robot's own)")
    p.add_argument("--watchdogs", choices=("auto", "on", "off"), default="auto",
                   help="replay the deadline rules (stale.*): auto = as the recorded monitor ran them (its "
                        "/diagnostics, else on)")
    p.add_argument("--rule", action="append", default=[], metavar="PREFIX",
                   help="report and judge only rules starting with PREFIX (repeatable), e.g. `--rule wrench.` asks "
                        "whether the force rules alone would have tripped (every rule still runs)")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON on stdout")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="also write DIR/replay.json and a plot of the trace around each trip (trip_*.png) (default: "
                        "nothing written, the report is printed)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from morl_robot.safety.replay import plot_trips, post_mortem

    watchdogs = {"auto": None, "on": True, "off": False}[args.watchdogs]
    report = post_mortem(args.recording, args.safety, watchdogs, rules=args.rule)
    data = report.as_dict()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        data["plots"] = [str(p) for p in plot_trips(report, out)]
        (out / "replay.json").write_text(json.dumps(_finite(data), indent=1) + "\n")
    if args.json:
        print(json.dumps(_finite(data), indent=1))
    else:
        print("\n".join(report.lines()))
        if args.out:
            print(f"wrote {Path(args.out) / 'replay.json'} and {len(data['plots'])} plot(s)", file=sys.stderr)
    return 1 if report.would_trip else 0


def _finite(x: Any) -> Any:
    """JSON without NaN (null instead)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x
