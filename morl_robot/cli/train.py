"""``morl-robot train --task NAME [--learner NAME|PATH] [--session NAME|PATH] [--set KIND.KEY=VALUE ...]
[--reward-machine SPEC] [--backend sim|hardware] [--actors N] [--actors-kind auto|per-step|vectorized] [--envs B]
[--steps S] [--out DIR]``: a training session as processes on the ROS graph (the nodes of the session YAML,
the same graph ``ros2 launch morl_robot train.launch.py`` starts).  ``--task T`` alone trains T's recipe:
the learner profile and session its task YAML names (:mod:`morl_robot.tasks.recipes`).

Shows a progress bar (env steps, updates, policy version, per-objective episode returns) read from
the learner's ``/diagnostics``; Ctrl-C stops every node cleanly (the learner writes its
checkpoint; running the same command again resumes).  ``--out`` receives checkpoints,
``metrics.csv``, TensorBoard logs, plots, ``policy.onnx``, ``session.yaml`` and ``logs/``.

Before any node starts and before anything in ``--out`` changes, the run is checked: the
configs, and for an existing run the resume (task, robot, reward machine, observation and action
labels, learner and normaliser: the learner's own restore check, reading only) — a refused resume
is one line and exit status 2, the run directory byte-identical.  A file that cannot be written
(read-only folder, name too long, disk full) is one line naming it and the OS error, never a
traceback; a learner that fails (e.g. cannot write ``policy.onnx``) makes the command exit
non-zero with the learner's first error line, never "done".

``--actors-kind vectorized`` (simulated training) runs each actor as one ``vector_actor`` process
stepping ``--envs`` environments with one batched policy forward, the safety rules inside its loop;
``auto`` (config/sessions/train.yaml) picks it on backend sim unless the session needs per-step
actors, and logs why (:func:`morl_robot.session.graph.resolve_actors_kind`).

Distributed: ``--role learner`` on one machine and ``--role actors --first-actor K`` on others,
with the same ``ROS_DOMAIN_ID`` and ``--discovery subnet``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from morl_robot.cli.options import add_observe, add_set, deprecated
from morl_robot.errors import UsageError

#: What ``train`` itself writes in ``--out`` (path, content), beside the learner's files
#: (:data:`morl_robot.training.run_directory.RUN_FILES`): the source of docs/reference/run_directory.md.
RUN_FILES: tuple[tuple[str, str], ...] = (
    ("session.yaml", "the session config this run used (every node's settings)"),
    ("sessions.json", ("one entry per start of the command (a resume adds one): session index, start time, "
                       "total_steps, seed")),
    ("safety_violations.json", "violation counts by rule and by actor, summed over the sessions"),
    ("logs/<node>.log", "each node's output"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train MO-MPO through the ROS graph (robot, safety monitor, actors, learner)")
    p.add_argument("--task", default=None,
                   help="task name (default: the session YAML's); with no other flag, trains the task's recipe "
                        "(`morl-robot tasks --recipes`)")
    p.add_argument("--task-config", default=None, metavar="NAME|PATH",
                   help="task YAML for every node instead of config/tasks/<task>.yaml (a YAML naming its class "
                        "needs no --task) (default: the task's own)")
    p.add_argument("--learner", default=None, metavar="NAME|PATH",
                   help="learner profile (name under config/learner/ or a YAML path) (default: the task's recipe; "
                        "with --session, the session's learner_node.config)")
    p.add_argument("--session", default=None, metavar="NAME|PATH",
                   help="session YAML (name under config/sessions/ or a path) (default: the task's recipe; "
                        "without --task, config/sessions/train.yaml)")
    p.add_argument("--reward-machine", default=None, metavar="SPEC",
                   help="a reward-machine task for the task (name under config/reward_machines/, e.g. "
                        "sawyer/peg_touch_then_insert, or a path): the task in its product machine; with "
                        "replay.crm in the learner YAML, counterfactual experience (default: none)")
    p.add_argument("--backend", choices=("sim", "hardware"), default=None,
                   help="the robot: MuJoCo simulation or the hardware driver (default: the session YAML's)")
    add_set(p, ("learner", "session", "task", "robot", "safety"))
    p.add_argument("--steps", type=int, default=None,
                   help="environment steps in total (a resumed run continues) (default: the session YAML's "
                        "total_steps)")
    p.add_argument("--actors", type=int, default=None,
                   help="actor pipelines (robot + monitor + policy server) (default: the session YAML's)")
    p.add_argument("--actors-kind", choices=("auto", "per-step", "vectorized"), default=None,
                   help="per-step: robot + monitor + policy server per actor (hardware, sim-to-sim); "
                        "vectorized: one process per actor stepping --envs simulated environments; auto: "
                        "vectorized on backend sim unless the session needs per-step (hardware, "
                        "--record, --foxglove, --use-sim-time, videos: the reason is logged) (default: the "
                        "session YAML's, auto in config/sessions/train.yaml)")
    p.add_argument("--envs", type=int, default=None,
                   help="--actors-kind vectorized: environments per actor (default: the session YAML's)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the learner and the actors (actor i: seed + 1000 (i + 1)) (default: the session "
                        "YAML's)")
    p.add_argument("--out", default=None, help="run directory (default runs/<task>)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (log lines instead)")
    add_observe(p)
    from morl_robot.cli import from_recording

    from_recording.add_options(p)  # --from-recording, --updates: offline (docs/howto/learn_from_recordings.md)
    p.add_argument("--namespace", default=None, help="ROS namespace of the graph (default: the session YAML's)")
    p.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID or random)")
    p.add_argument("--role", choices=("all", "learner", "actors"), default="all",
                   help="distributed training: run only the learner or only actors here")
    p.add_argument("--first-actor", type=int, default=0, help="--role actors: id of the first actor started here")
    p.add_argument("--discovery", choices=("localhost", "subnet"), default="localhost",
                   help="DDS discovery range (subnet: actors on other machines)")
    p.add_argument("--use-sim-time", action="store_true",
                   help="every node follows /clock from the simulated robot (ROS use_sim_time; the launch argument use_sim_time:=true)")
    deprecated(p, "--learner-config", "--learner")
    deprecated(p, "--session-config", "--session")
    deprecated(p, "--config", "--session")
    p.set_defaults(func=run)


def recipe_defaults(task: str | None, learner: str | None, session: str | None) -> tuple[str | None, str]:
    """The learner profile and session ``train`` uses: the ones given, else task ``task``'s recipe
    (:func:`morl_robot.tasks.recipes.default_recipe`); a session given without a learner keeps its
    own ``learner_node.config`` (None).  No task: ``config/sessions/train.yaml``."""
    if task is None or (learner is not None and session is not None):
        return learner, session or "train"
    try:
        from morl_robot.tasks.recipes import default_recipe
    except ImportError:  # no recipes in this installation: the session defaults
        return learner, session or "train"
    recipe = default_recipe(task)
    if session is None:
        return learner or recipe.learner, recipe.session
    return learner, session


def _count_violations(probe: Any, namespaces: list[str]) -> dict[str, Any]:
    """Live counts of the safety monitors' violation events, by rule and by actor (written to
    ``safety_violations.json``; a collision-level stop also ends the episode as ``safety``)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    from morl_robot.nodes import wire

    counts: dict[str, Any] = {"total": 0, "by_rule": {}, "by_actor": {}}

    def on_event(ns: str, msg: Any) -> None:
        values = {kv.key: kv.value for kv in msg.values}
        key = f"{values.get('rule', msg.name)}/{values.get('level', '')}"
        counts["total"] += 1
        counts["by_rule"][key] = counts["by_rule"].get(key, 0) + 1
        actor = counts["by_actor"].setdefault(ns, {})
        actor[key] = actor.get(key, 0) + 1

    for ns in namespaces:
        probe.subscribe(f"{ns}/safety/violations", DiagnosticStatus, wire.EVENT_QOS,
                        callback=lambda m, ns=ns: on_event(ns, m))
    return counts


def merge_violations(previous: dict[str, Any] | None, session: dict[str, Any], index: int) -> dict[str, Any]:
    """``safety_violations.json`` across the sessions of a run: totals over all of them, and each
    session's own counts under ``sessions`` (a resumed run keeps the earlier sessions' counts)."""
    sessions = list((previous or {}).get("sessions", []))
    if previous and not sessions and previous.get("total"):  # a file from before sessions were kept
        sessions.append({"session": 0, **{k: previous[k] for k in ("total", "by_rule", "by_actor") if k in previous}})
    sessions.append({"session": index, **session})
    total: dict[str, Any] = {"total": 0, "by_rule": {}, "by_actor": {}}
    for s in sessions:
        total["total"] += int(s.get("total", 0))
        for rule, n in s.get("by_rule", {}).items():
            total["by_rule"][rule] = total["by_rule"].get(rule, 0) + n
        for actor, rules in s.get("by_actor", {}).items():
            mine = total["by_actor"].setdefault(actor, {})
            for rule, n in rules.items():
                mine[rule] = mine.get(rule, 0) + n
    return {**total, "sessions": sessions}


def _check_before_start(cfg: Any, out: Path | None = None) -> None:
    """The task (and its reward machine) and the learner YAML the learner node will load, checked
    here first (the learner's own construction: objectives, ``replay.crm`` against the reward
    machine); with ``out``, the resume the learner would make from its newest checkpoint, read
    only (:meth:`~morl_robot.training.session.LearnerSession.check_resume`): a refused one is a
    :class:`UsageError` and nothing in ``out`` has changed."""
    from morl_robot.training.session import session_for_task

    if not cfg.task:
        raise UsageError("training needs a task (--task)")
    node = cfg.learner_node
    session = session_for_task(cfg.task, node.task_config, node.config, seed=cfg.seed, run_dir=out,
                               reward_machine=cfg.reward_machine, normalize_observations=node.observation_normalization,
                               normalization_setting="learner_node.observation_normalization")
    if out is None:
        return
    preflight_resume(session, out)


def preflight_resume(session: Any, out: Path) -> Path | None:
    """The learner's restore check for ``session`` over the run directory ``out``, reading only
    (the experience ingest included, as the learner node builds it); returns the checkpoint it
    would resume from (None: a new run).  A refused resume is a :class:`UsageError` naming the
    checkpoint and the first difference."""
    from morl_robot.errors import MorlRobotError
    from morl_robot.learning.run_lock import WriteError, writing
    from morl_robot.nodes import wire

    c = session.contract
    session.accept_experience(wire.experience_columns(c.input_labels, c.action_labels, c.objective_names,
                                                      wire.machine_columns(session.propositions)))
    try:
        with writing(out):  # e.g. a name too long to even look up
            return session.check_resume()
    except MorlRobotError as exc:
        if isinstance(exc, WriteError):
            raise
        raise UsageError(f"--out {out}: refusing to resume this run: {exc} (nothing in it was changed; train "
                         "it with its own task and configuration, or choose another --out)") from None


def run(args: argparse.Namespace) -> int:
    from morl_robot.session.config import load_session_config

    for name in ("actors", "steps", "envs"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "steps" else 1):
            raise UsageError(f"--{name} must be at least {0 if name == 'steps' else 1}, got {value}")
    overrides: dict[str, Any] = {"task": args.task, "reward_machine": args.reward_machine, "backend": args.backend, "actors": args.actors,
                                 "total_steps": args.steps, "seed": args.seed, "namespace": args.namespace,
                                 "use_sim_time": args.use_sim_time or None, "actors_kind": args.actors_kind}
    if args.task_config is not None:
        from morl_robot.tasks.registry import resolve_task_name

        args.task = overrides["task"] = resolve_task_name(args.task, args.task_config)
        config_file = Path(args.task_config)
        config_file = str(config_file.resolve()) if config_file.exists() else str(args.task_config)  # nodes' cwd may differ
        overrides.update({node: {"task_config": config_file}
                          for node in ("robot_node", "learner_node", "vector_actor")})
    learner, session = recipe_defaults(args.task, args.learner, args.session)
    if learner:
        overrides.setdefault("learner_node", {})["config"] = learner
    if args.envs is not None:
        overrides.setdefault("vector_actor", {})["envs"] = args.envs
    if args.from_recording and args.online:  # a training session whose replay starts with the recordings
        overrides.setdefault("learner_node", {})["recordings"] = ",".join(str(Path(r).resolve()) for r in args.from_recording)
    cfg = load_session_config(session, overrides)
    if not cfg.task:
        raise UsageError("training needs a task (--task)")
    out = Path(args.out or f"runs/{cfg.task}").resolve()
    if args.from_recording and not args.online:
        from morl_robot.cli import from_recording

        return from_recording.run(args, cfg, out)
    # every config read and checked, and a resume checked against the run, before any node starts
    # and before anything in the run directory changes: rc 2 and one line
    _check_before_start(cfg, out if args.role != "actors" else None)
    from morl_robot.learning.run_lock import RunLock

    lock = RunLock.acquire(out, "morl-robot train")  # refused while another run writes there
    try:
        if lock.stale:
            print(f"took over the stale lock of {lock.stale} on {out}", file=sys.stderr)
        return _run_locked(args, cfg, out)
    finally:
        lock.release()


def _run_locked(args: argparse.Namespace, cfg: Any, out: Path) -> int:
    from morl_robot.learning.run_lock import writing
    from morl_robot.records import (
        read_json,
        write_bytes_atomic,
        write_json_atomic,
    )
    from morl_robot.session.graph import (
        SESSION_SEED_STRIDE,
        observer_specs,
        resolve_actors_kind,
        train_nodes,
    )
    from morl_robot.session.runner import SessionRunner, first_error_line

    history = read_json(out / "sessions.json") if (out / "sessions.json").is_file() else []
    index = len(history)  # 0: a new run; k: the k-th resumption (the actors' seeds move on)
    if cfg.actors_kind == "auto":  # concrete before session.yaml records it
        why = resolve_actors_kind(cfg, record=args.record, live_view=args.foxglove is not None)
        print(f"actors: {cfg.actors_kind}" + (f", needed by {why}" if why else ", actors_kind auto on backend sim"),
              file=sys.stderr)
    with writing(out / "session.yaml"):
        write_bytes_atomic(out / "session.yaml", yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False).encode())
    history.append({"session": index, "started": time.time(), "total_steps": cfg.total_steps, "seed": cfg.seed})
    with writing(out / "sessions.json"):
        write_json_atomic(out / "sessions.json", history)
    specs = train_nodes(cfg, out, session_index=index)
    if args.role == "learner":
        specs = [s for s in specs if s.executable == "learner_node"]
    elif args.role == "actors":
        specs = [s for s in specs if s.executable != "learner_node"]
        for s in specs:  # renumber actor namespaces / ids from --first-actor
            i = int(s.namespace.rsplit("actor", 1)[1]) + args.first_actor
            s.namespace = s.namespace.rsplit("actor", 1)[0] + f"actor{i}"
            if "actor_id" in s.parameters:
                s.parameters["actor_id"] = i
            if "seed" in s.parameters:
                s.parameters["seed"] = cfg.seed + SESSION_SEED_STRIDE * index + 1000 * (i + 1)
    ns = "/" + cfg.namespace.strip("/")
    specs = observer_specs(ns, out, args.record, args.foxglove) + specs  # first up, last down
    actor_ns = sorted({s.namespace for s in specs if s.executable in ("robot_node", "vector_actor")})
    monitored = sorted({s.namespace for s in specs if s.executable == "safety_monitor"})
    with writing(out / "logs"):
        (out / "logs").mkdir(exist_ok=True)
    runner = SessionRunner(specs, out / "logs", args.domain_id, localhost=args.discovery == "localhost")
    print(f"training {cfg.task} on {cfg.backend} with {len(actor_ns)} actor(s) here (role {args.role}); "
          f"ROS_DOMAIN_ID={runner.domain_id}; run directory {out}", file=sys.stderr)
    bar = None
    violations: dict[str, Any] = {"total": 0, "by_rule": {}, "by_actor": {}}
    has_learner = any(s.executable == "learner_node" for s in specs)
    finished = False

    def may_exit(p: Any) -> bool:  # the learner exits by itself when total_steps is reached
        return p.spec.executable == "learner_node" and p.returncode == 0

    try:
        runner.start()
        violations = _count_violations(runner.probe, actor_ns)
        if args.record and monitored:  # the recorder has every actor's task steps before they count
            from morl_robot.recording.live import wait_recording

            wait_recording(runner.probe, [f"{n}/task_step" for n in monitored],
                           check=lambda: runner.check_alive(may_exit))
        if monitored:
            runner.release_safety(monitored, allowed_to_exit=may_exit)
        if not args.no_progress and has_learner:
            from tqdm.auto import tqdm

            bar = tqdm(total=cfg.total_steps or None, unit="step", dynamic_ncols=True, desc="env steps")
        last_log = [0.0]

        def tick() -> None:
            if not has_learner:
                return
            st = runner.probe.diagnostics("learner", ns.strip("/"))
            if not st:
                return
            steps = int(float(st.get("env_steps", 0)))
            returns = {k.split("/", 1)[1]: v for k, v in st.items() if k.startswith("return/")}
            info = {"updates": st.get("updates", "0"), "policy": st.get("policy_version", "0"), **returns}
            if bar is not None:
                bar.n = steps
                bar.set_postfix(info, refresh=True)
            elif time.monotonic() - last_log[0] > 10:
                last_log[0] = time.monotonic()
                print(f"env steps {steps} " + " ".join(f"{k}={v}" for k, v in info.items()), file=sys.stderr)

        def done() -> bool:
            return has_learner and not runner.process("learner_node").alive

        finished = runner.wait(done, tick, allowed_to_exit=may_exit)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP before the wait (start-up, release): same clean end
        finished = False
    finally:
        if bar is not None:
            bar.close()
        codes = runner.stop()
        if args.record:
            from morl_robot.recording.reader import summary_line

            print(summary_line(out) or f"recording: none written in {out}", file=sys.stderr)
    learner_rc = codes.get("learner_node")
    if actor_ns:
        from morl_robot.records import write_json_atomic

        path = out / "safety_violations.json"
        with writing(path):
            write_json_atomic(path, merge_violations(read_json(path) if path.is_file() else None, violations, index))
        if violations["total"]:
            print(f"safety violations: {violations['by_rule']}", file=sys.stderr)
    if not finished:
        print(f"interrupted: nodes stopped (learner exit status {learner_rc}); run the same command to resume "
              f"from the checkpoint in {out}", file=sys.stderr)
        return 130
    if has_learner and learner_rc not in (0, None):
        log = runner.process("learner_node").log_text()
        lines = [line.strip() for line in log.splitlines() if line.strip()]
        why = first_error_line(log) or (lines[-1] if lines else "no error logged")
        print(f"morl-robot train: error: the learner exited with status {learner_rc}: {why} "
              f"(log {out / 'logs' / 'learner_node.log'})", file=sys.stderr)
        return 1
    artefacts = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and "logs" not in p.parts)
    print(f"done: {out}\n  " + "\n  ".join(artefacts[:30]))
    return 0
