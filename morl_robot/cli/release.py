"""``morl-robot release --namespace NS [--timeout S]``: release a running graph's safety monitor
from its start-up e-stop once the monitor's own checks pass (``NS/safety/reset`` accepted: sensors
fresh and finite, no active violation), on ``$ROS_DOMAIN_ID`` (or ``--domain-id``).

``ros2 launch morl_robot deploy.launch.py release:=after_checks`` runs this beside the graph (sim
backend only); with ``release:=operator`` a person does the same with ``ros2 service call
NS/safety/reset std_srvs/srv/Trigger``.  Exit 0 once released, 1 if the checks never pass.
"""
from __future__ import annotations

import argparse
import os
import sys

from morl_robot.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("release", help="release a running graph's safety monitor once its checks pass")
    p.add_argument("--namespace", default="/morl", help="namespace of the safety monitor (default /morl)")
    p.add_argument("--timeout", type=float, default=120.0, help="s to wait for the checks to pass (default 120)")
    p.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID or 0)")
    p.set_defaults(func=run)


def domain_of(domain_id: int | None) -> int:
    """``domain_id``, else ``$ROS_DOMAIN_ID``, else 0 (ROS's default): the graph this process joins."""
    if domain_id is not None:
        return int(domain_id)
    text = os.environ.get("ROS_DOMAIN_ID", "") or "0"
    if not text.isdigit():
        raise UsageError(f"ROS_DOMAIN_ID: expected a whole number, got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.session.runner import NodeDiedError, release_estop

    if not args.timeout > 0:
        raise UsageError(f"--timeout must be > 0 s, got {args.timeout}")
    ns = "/" + args.namespace.strip("/")
    domain = domain_of(args.domain_id)
    print(f"waiting for the safety monitor in {ns} to pass its checks (ROS_DOMAIN_ID={domain})", file=sys.stderr)
    with GraphProbe(domain, name=f"morl_robot_release_{os.getpid()}") as probe:
        try:
            message = release_estop(probe, ns, args.timeout)
        except NodeDiedError as exc:
            print(f"not released: {exc}", file=sys.stderr)
            return 1
    print(f"released the safety monitor in {ns} after its checks passed: {message}", file=sys.stderr)
    return 0
