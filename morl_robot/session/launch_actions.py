"""For the launch files in ``launch/``: session YAML + launch arguments → launch actions.

Imports ROS's ``launch`` packages, which a ROS install provides (they are not on PyPI); nothing
else in the package imports this module.

The graph itself comes from :func:`morl_robot.session.graph.session_nodes`, the same function
``morl-robot train|deploy|safety-test`` uses, so ``ros2 launch`` and the CLI start the same nodes
with the same parameters from the same ``config/sessions/*.yaml``.  A launch also ends the way
the CLI does:

* **train** — when the learner exits after ``total_steps`` (``steps:=``) the launch shuts down
  (training finished); any other node's exit, or the learner's failure, shuts it down with the
  reason.
* **deploy** — every node is required: one that exits (a policy the server refuses, a robot
  whose driver cannot be reached) shuts the launch down with the reason.  The safety monitor
  starts latched; ``release:=operator`` (default) waits for a person to call
  ``<ns>/safety/reset``, ``release:=after_checks`` (sim backend only) runs ``morl-robot release``,
  which releases it once the monitor's checks pass.  Either way the launch logs which.
* **safety_test** — ``morl-robot safety-test --attach`` runs the probes against the launched
  graph and writes the same report, plots and pass/fail as ``morl-robot safety-test``; the launch
  ends when it does, with the result as the reason.

Arguments naming files (``policy:=``, ``session:=``, ``learner_config:=``) also resolve relative to
the package (:func:`package_path`); nodes that write artefacts when stopped get a longer SIGTERM
window (:data:`STOP_TIMEOUTS`).  docs/howto/colcon_workspace.md.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    LogInfo,
    OpaqueFunction,
    Shutdown,
)
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from morl_robot.errors import UsageError

#: Launch arguments (name, default, description); "" = take the session YAML's value.
ARGUMENT_TEXT = {
    "session": ("", "session YAML (default: config/sessions/<kind>.yaml)"),
    "robot": ("", "robot: sawyer | shadow_hand"),
    "task": ("", "task name (morl-robot tasks)"),
    "reward_machine": ("", ("reward-machine task for the task (e.g. sawyer/peg_touch_then_insert): the task in its "
                            "product machine; with replay.crm in the learner YAML, counterfactual experience")),
    "backend": ("", "sim | hardware"),
    "actors": ("", "number of actor pipelines (robot + safety monitor + policy server), >= 1"),
    "actors_kind": ("", ("auto (vectorized on backend sim unless the session needs per-step) | per-step (robot + "
                         "safety monitor + policy server per actor) | vectorized (one vector_actor process per "
                         "actor, simulated environments)")),
    "envs": ("", "actors_kind:=vectorized: simulated environments per actor, >= 1"),
    "steps": ("", "environment steps in total; the launch ends when the learner reaches them (0 = until stopped)"),
    "seed": ("", "random seed of the session"),
    "namespace": ("", "ROS namespace of the session"),
    "policy": ("", "ONNX policy file (morl-robot export); its contract names the task and robot"),
    "preference": ("", ("ε-conditioned policy: the preference to start with, one ε per objective, comma-separated "
                        "(e.g. 0.1,0.01; default the centre of the policy's preference box)")),
    "release": ("operator", ("who releases the safety monitor's start-up e-stop: operator (a person calls "
                            "<ns>/safety/reset) | after_checks (released once its checks pass; sim backend only)")),
    "learner_config": ("", "learner YAML or name under config/learner/"),
    "out": ("", "run / report directory (train: runs/<task>; deploy: runs/deploy; safety test: runs/safety_test)"),
    "use_sim_time": ("false", "every node follows /clock from the simulated robot (sim backend)"),
    "record": ("false", "record the session's topics to <out>/session.mcap (the recorder node; docs/howto/record.md)"),
    "foxglove": ("false", "live view: a Foxglove WebSocket server (the live_view node) on foxglove_port"),
    "foxglove_port": ("8765", "foxglove:=true: the Foxglove WebSocket server's TCP port"),
}
#: The observer arguments every session kind declares (session.graph.observer_specs).
OBSERVE = ("record", "foxglove", "foxglove_port")
#: Which arguments each launch file declares.
ARGUMENTS = {
    "train": ("session", "task", "reward_machine", "backend", "actors", "actors_kind", "envs", "steps", "seed", "namespace", "learner_config", "out",
              "use_sim_time", *OBSERVE),
    "deploy": ("session", "policy", "robot", "backend", "seed", "namespace", "release", "use_sim_time",
               "preference", "out", *OBSERVE),
    "safety_test": ("session", "robot", "backend", "seed", "namespace", "out", "use_sim_time", *OBSERVE),
}
RELEASES = ("operator", "after_checks")
#: Seconds between launch's SIGINT and its SIGTERM (launch's default 5) for the nodes that write
#: artefacts when stopped: the learner's final checkpoint, policy.onnx and plots (2-4 s on a loaded
#: 2-core machine, issue 41), the recorder closing its MCAP.  SIGKILL follows 5 s after SIGTERM.
STOP_TIMEOUTS = {"learner_node": 30.0, "recorder": 15.0}
#: The launch arguments naming an input file, and the config kind each names (None: not a config).
PATH_ARGUMENTS = {"policy": None, "session": "sessions", "learner_config": "learner"}


def package_roots() -> list[Path]:
    """The folders a package-relative path is looked up in: ``$MORL_ROBOT_SHARE``, the source tree
    (a ``--symlink-install`` or editable install), the ament share (``$(find-pkg-share morl_robot)``),
    ``<sys.prefix>/share/morl_robot``; each once, in that order."""
    import morl_robot

    roots = [Path(os.environ["MORL_ROBOT_SHARE"])] if os.environ.get("MORL_ROBOT_SHARE") else []
    source = Path(morl_robot.__file__).resolve().parents[1]
    if (source / "package.xml").is_file():  # not site-packages of a plain install
        roots.append(source)
    with contextlib.suppress(Exception):  # no ament index, or the package is not in it
        from ament_index_python.packages import get_package_share_directory

        roots.append(Path(get_package_share_directory("morl_robot")))
    roots.append(Path(sys.prefix) / "share" / "morl_robot")
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def package_path(name: str, text: str, kind: str | None = None) -> str:
    """Launch argument ``name:=text`` naming a file → its absolute path: as given (absolute, or from
    the current folder), else relative to the package (:func:`package_roots`; a config ``kind``
    also under ``config/<kind>/`` and ``config/``), so ``policy:=results/demo/seed0/policy.onnx``
    works from a workspace root.  A config name (``session:=train``) is returned unchanged.  A file
    found nowhere is a :class:`UsageError` naming every place looked in."""
    from morl_robot.resources import is_config_path

    if not text or (kind is not None and not is_config_path(text)):
        return text
    given = Path(text).expanduser()
    if given.is_absolute():
        candidates = [given]
    else:
        candidates = [Path.cwd() / given]
        for root in package_roots():
            candidates.append(root / given)
            if kind is not None:
                candidates += [root / "config" / kind / given, root / "config" / given]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    looked = "\n  ".join(str(c) for c in candidates)
    raise UsageError(f"launch argument {name}:={text}: no such file; looked in:\n  {looked}")


def resolve_paths(args: dict[str, str]) -> dict[str, str]:
    """``args`` with every file argument (:data:`PATH_ARGUMENTS`) resolved by :func:`package_path`."""
    return {key: package_path(key, value, PATH_ARGUMENTS[key]) if key in PATH_ARGUMENTS else value
            for key, value in args.items()}


def declare_arguments(kind: str) -> list:
    return [DeclareLaunchArgument(name, default_value=ARGUMENT_TEXT[name][0], description=ARGUMENT_TEXT[name][1])
            for name in ARGUMENTS[kind]]


def whole_number(name: str, text: str, low: int) -> int:
    """A launch argument that must be a whole number >= ``low``, or a clear error naming it."""
    try:
        value = int(text.strip())
    except ValueError:
        raise UsageError(f"launch argument {name}:={text!r}: expected a whole number >= {low}") from None
    if value < low:
        raise UsageError(f"launch argument {name}:={text!r}: must be >= {low}")
    return value


def preference_argument(text: str) -> list[float]:
    """``preference:=0.1,0.01`` (or ``[0.1, 0.01]``) → floats, or a clear error naming the argument."""
    items = [t for t in text.strip().strip("[]").replace(",", " ").split() if t]
    try:
        return [float(t) for t in items]
    except ValueError:
        raise UsageError(f"launch argument preference:={text!r}: expected numbers, one ε per objective, "
                         "comma-separated") from None


def boolean(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise UsageError(f"launch argument {name}:={text!r}: expected true or false")
    return value == "true"


def session_overrides(kind: str, args: dict[str, str]) -> dict[str, Any]:
    """Launch arguments (text; "" = not given) → session YAML overrides."""
    overrides: dict[str, Any] = {key: args.get(key) or None
                                 for key in ("robot", "task", "reward_machine", "backend", "namespace")}
    if args.get("actors"):
        overrides["actors"] = whole_number("actors", args["actors"], 1)
    if args.get("actors_kind"):
        overrides["actors_kind"] = args["actors_kind"]  # checked with the session YAML (allowed values)
    if args.get("envs"):
        overrides["vector_actor"] = {"envs": whole_number("envs", args["envs"], 1)}
    if args.get("steps"):
        overrides["total_steps"] = whole_number("steps", args["steps"], 0)
    if args.get("seed"):
        overrides["seed"] = whole_number("seed", args["seed"], 0)
    if args.get("use_sim_time"):
        overrides["use_sim_time"] = boolean("use_sim_time", args["use_sim_time"])
    if args.get("learner_config"):
        overrides["learner_node"] = {"config": args["learner_config"]}
    if kind == "deploy" and args.get("policy"):
        from morl_robot.serving.runtime import OnnxPolicy

        contract = OnnxPolicy.from_file(args["policy"]).contract
        if args.get("robot") and args["robot"] != contract.robot:
            raise UsageError(f"launch argument robot:={args['robot']}: the policy was trained for "
                             f"'{contract.robot}' (task {contract.task})")
        from morl_robot.session.graph import policy_session

        overrides.update(policy_session(contract, args["policy"]))
        if args.get("preference"):
            eps = preference_argument(args["preference"])
            try:
                contract.check_preference(eps, f"launch argument preference:={args['preference']}")
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            overrides["policy_server"] = {"preference": eps}
    if kind == "safety_test":
        overrides["task"] = ""  # a bare robot: the probes command it directly
    return overrides


def _exit_reason(kind: str, spec_or_name: str, returncode: int) -> str:
    if kind == "train" and spec_or_name.endswith("/learner_node") and returncode == 0:
        return "training finished: the learner reached its total steps"
    return f"{spec_or_name} exited with code {returncode}; a required node of the {kind} session has ended"


def _shutdown(reason: str) -> list:
    """Shut the launch down, logging why (launch's own line only says a process was required)."""
    return [LogInfo(msg=reason), Shutdown(reason=reason)]


def _shutdown_on_exit(kind: str, name: str) -> Any:
    """``on_exit`` of a required process: shut the launch down, saying why (unless it is already
    shutting down, when every node exits)."""
    def on_exit(event: Any, context: Any) -> list:
        if getattr(context, "is_shutdown", False):
            return []
        return _shutdown(_exit_reason(kind, name, int(event.returncode)))

    return on_exit


def _cli(*args: str) -> list[str]:
    """A ``morl-robot`` command as a launch-attached process (the console script is installed under
    lib/morl_robot, not on PATH; the module runs wherever the package is importable)."""
    return [sys.executable, "-m", "morl_robot.cli", *args]


def _actions(kind: str, context: Any) -> list:
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import robot_of, session_nodes

    args = resolve_paths({name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS[kind]})
    cfg = load_session_config(args["session"] or kind, session_overrides(kind, args))
    ns = "/" + cfg.namespace.strip("/")
    out = os.path.abspath(args.get("out") or {"train": f"runs/{cfg.task}", "deploy": "runs/deploy"}.get(kind,
                                                                                                "runs/safety_test"))
    if kind == "deploy" and not cfg.policy:
        raise UsageError("deploy.launch.py needs policy:=FILE.onnx (or policy: in the session YAML)")
    actions: list = []
    if kind == "deploy":
        release = args["release"].strip()
        if release not in RELEASES:
            raise UsageError(f"launch argument release:={release!r}: allowed values: {', '.join(RELEASES)}")
        if release == "after_checks" and cfg.backend != "sim":
            raise UsageError("launch argument release:=after_checks is allowed only with backend:=sim; "
                             "on hardware a person releases the e-stop (release:=operator)")
    if kind == "train" and cfg.actors_kind == "auto":
        from morl_robot.session.graph import resolve_actors_kind

        why = resolve_actors_kind(cfg, record=boolean("record", args.get("record") or "false"),
                                  live_view=boolean("foxglove", args.get("foxglove") or "false"))
        actions.append(LogInfo(msg=f"actors: {cfg.actors_kind}" + (f", needed by {why}" if why else "")))
    actions += observer_nodes(ns, out, args)
    for spec in session_nodes(kind, cfg, out):
        name = f"{spec.namespace.rstrip('/')}/{spec.name}"
        actions.append(Node(package="morl_robot", executable=spec.executable, name=spec.name, namespace=spec.namespace,
                            parameters=[spec.parameters], remappings=list(spec.remappings.items()), output="screen",
                            on_exit=_shutdown_on_exit(kind, name), **stop_window(spec.executable)))
    if kind == "deploy":
        if release == "operator":
            actions.append(LogInfo(msg=f"release:=operator: the safety monitor in {ns} holds its start-up e-stop "
                                       f"until a person releases it: ros2 service call {ns}/safety/reset "
                                       "std_srvs/srv/Trigger"))
        else:
            actions.append(LogInfo(msg=f"release:=after_checks: the safety monitor in {ns} is released "
                                       "automatically once its checks pass (sim backend)"))
            actions.append(ExecuteProcess(cmd=_cli("release", "--namespace", ns), name="release", output="screen",
                                          on_exit=_release_exit(ns)))
    if kind == "safety_test":
        cmd = _cli("safety-test", "--attach", "--robot", robot_of(cfg), "--backend", cfg.backend, "--namespace", ns,
                   "--out", out, "--session", args["session"] or kind)
        if cfg.use_sim_time:
            cmd.append("--use-sim-time")
        actions.append(ExecuteProcess(cmd=cmd, name="safety_test", output="screen", on_exit=_safety_test_exit(out)))
    return actions


def observer_nodes(ns: str, out: str, args: dict[str, str]) -> list:
    """The observers ``record:=true`` / ``foxglove:=true`` ask for, as launch ``Node`` actions (not
    required: the session goes on without them)."""
    port = (whole_number("foxglove_port", args.get("foxglove_port") or "8765", 1)
            if boolean("foxglove", args.get("foxglove") or "false") else None)
    if port is not None and port > 65535:
        raise UsageError(f"launch argument foxglove_port:={port}: a TCP port is 1-65535")
    from morl_robot.session.graph import observer_specs

    specs = observer_specs(ns, out, boolean("record", args.get("record") or "false"), port)
    return [Node(package="morl_robot", executable=s.executable, name=s.name, namespace=s.namespace,
                 parameters=[s.parameters], output="screen", **stop_window(s.executable)) for s in specs]


def stop_window(executable: str) -> dict[str, str]:
    """``sigterm_timeout`` for a node that writes artefacts when stopped (:data:`STOP_TIMEOUTS`)."""
    seconds = STOP_TIMEOUTS.get(executable)
    return {} if seconds is None else {"sigterm_timeout": str(seconds)}


def _release_exit(ns: str) -> Any:
    def on_exit(event: Any, context: Any) -> list:
        if getattr(context, "is_shutdown", False) or event.returncode == 0:
            return []  # released: the deployment goes on
        return _shutdown(f"the safety monitor in {ns} never passed its checks (morl-robot release exited "
                         f"with code {event.returncode})")

    return on_exit


def _safety_test_exit(out: str) -> Any:
    def on_exit(event: Any, context: Any) -> list:
        if getattr(context, "is_shutdown", False):
            return []
        from morl_robot.safety.testing import VERDICTS

        result = next((v.label for v in VERDICTS if v.code == int(event.returncode)), f"error (exit {event.returncode})")
        return _shutdown(f"safety test finished: {result}; report in {out}/report.md")

    return on_exit


def session_launch(kind: str) -> list:
    """Launch entities for a session of ``kind`` (train, deploy, safety_test)."""
    if kind not in ARGUMENTS:
        raise ValueError(f"unknown session kind '{kind}'; known: {', '.join(ARGUMENTS)}")
    return declare_arguments(kind) + [OpaqueFunction(function=lambda context: _actions(kind, context))]
