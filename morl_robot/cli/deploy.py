"""``morl-robot deploy POLICY [--robot R] [--backend sim|hardware] [--episodes N] [--preference EPS …]``: serve an
ONNX policy through the graph of ``config/sessions/deploy.yaml`` (as ``deploy.launch.py``).

The sim-to-sim check (``--episodes N``: lockstep, then the same seeds in process), its report, real
time and ``--stall-timeout``: docs/tutorials/deploy_sim.md; ``--preference``:
docs/explanation/conditioned.md.  A reward-machine policy (its contract's ``reward_machine``) is
deployed with its machine, checked against this installation's files first; the robot node runs it
and the check compares every objective, the task's and the machine's.  Progress (for the stall
timeout) is the robot node's episode and step, not its robot steps.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.cli.options import add_observe, add_policy, add_set, deprecated
from morl_robot.cli.video import add_video, list_videos, node_video_overrides
from morl_robot.errors import GraphStalled, UsageError

if TYPE_CHECKING:
    from morl_robot.serving.contract import PolicyContract


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("deploy", help="serve an ONNX policy through robot node + safety monitor + policy server")
    add_policy(p, "ONNX policy to serve (morl-robot export, or a run's policy.onnx)", required=True)
    p.add_argument("--robot", default=None,
                   help="sawyer | shadow_hand, checked against the policy's contract (default: the contract's)")
    p.add_argument("--backend", choices=("sim", "hardware"), default="sim",
                   help="the robot: MuJoCo simulation or the hardware driver")
    p.add_argument("--episodes", type=int, default=0, help="run N episodes and compare returns with the same seeds in process (sim: the sim-to-sim check; hardware: in real time, in process in the emulator's context)")
    p.add_argument("--timing", choices=("lockstep", "realtime"), default=None,
                   help="robot timing (default: lockstep for --episodes in sim, else realtime)")
    p.add_argument("--compare", default=None, metavar="RUN_DIR",
                   help="run directory whose checkpoint is evaluated in-process (default: the folder the policy "
                        "lies in)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode (episode i: seed + i)")
    p.add_argument("--preference", type=float, nargs="+", default=None, metavar="EPS",
                   help="ε-conditioned policy: the preference to serve under, one ε per objective (default: the "
                        "centre of its preference box); change it live with the policy_server parameter or topic "
                        "'preference'")
    p.add_argument("--duration", type=float, default=0.0, help="without --episodes: stop after this many seconds")
    p.add_argument("--session", default="deploy", metavar="NAME|PATH",
                   help="session YAML, name under config/sessions/ or path (default deploy)")
    add_set(p, ("session", "robot", "safety", "task"))
    p.add_argument("--out", default=None, help="report directory (default: next to the policy)")
    add_observe(p)
    add_video(p, "episode (--backend sim: the robot node renders DIR/episode_<seed>.mp4 at 10 fps)")
    p.add_argument("--emulate", default=None, metavar="FAULTS",
                   help="--backend hardware without a robot: start the MuJoCo driver emulator, with faults "
                        "'latency=0.02,jitter=0.01,drop=0.05,reorder=0.1' (s, probabilities) or 'none' "
                        "(default: no emulator)")
    p.add_argument("--realtime-priority", type=int, default=0, metavar="N",
                   help="run the robot node, safety monitor, policy server and driver emulator SCHED_FIFO at "
                        "priority N (1-99; needs CAP_SYS_NICE or an rtprio limit, else each says so and runs "
                        "normally), so a busy host cannot starve the real-time loops (default 0: normal priority)")
    p.add_argument("--use-sim-time", action="store_true",
                   help="every node follows /clock from the simulated robot (ROS use_sim_time; the launch argument use_sim_time:=true)")
    p.add_argument("--stall-timeout", type=float, default=120.0, metavar="S",
                   help="sim-to-sim check: give up with an error (and every node's newest status) when the episode "
                        "has not advanced for S seconds (default 120)")
    p.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID or random)")
    deprecated(p, "--config", "--session")
    p.set_defaults(func=run)


def in_process_returns(policy_path: Path, compare: Path | None, served: PolicyContract,
                       seeds: list[int], preference: np.ndarray | None = None, context: Any = None,
                       ) -> tuple[np.ndarray, list[bool], str, list[str | None]]:
    """Per-episode returns [N, K] and successes [N] of the deterministic policy in-process (an
    ε-conditioned one under ``preference``, default its box's centre) in the environment the served
    policy's contract describes (a reward-machine policy: the product with its machine), and what
    was evaluated, and how each episode ended (``termination``: ``safety`` when the rules stopped it);
    ``context``: every episode in that environment context (issue 37: the emulator's)."""
    from morl_robot.envs.mo_env import open_policy_env

    act: Any
    source: str
    payload_dir = compare if compare is not None else policy_path.parent
    try:
        from morl_robot.serving.export import load_run_policy, reference_outputs

        path, policy, contract, normalizer = load_run_policy(payload_dir)

        def act(obs: np.ndarray) -> np.ndarray:
            mean = reference_outputs(policy, contract, obs[None], normalizer, preference)["mean"][0]
            return np.clip(mean, -1.0, 1.0)

        source = f"torch policy from {path}"
    except Exception as exc:  # no checkpoint: fall back to onnxruntime, and say so
        if compare is not None:
            raise
        from morl_robot.serving.runtime import OnnxPolicy

        onnx_policy = OnnxPolicy.from_file(policy_path)
        if preference is not None:
            onnx_policy.set_preference(preference)

        def act(obs: np.ndarray) -> np.ndarray:
            return onnx_policy.act(obs, deterministic=True).action

        source = f"onnxruntime in-process (no checkpoint next to the policy: {exc})"
    from morl_robot.evaluation.protocol import run_episode
    from morl_robot.safety.shield import SafetyShield

    env = open_policy_env(served)
    if context is not None:
        env.set_contexts(context)
    try:  # through the same safety rules as the graph's monitor
        shield = SafetyShield(env)
        episodes = [run_episode(env, act, seed, shield) for seed in seeds]
    finally:
        env.close()
    return (np.asarray([e.returns for e in episodes]), [bool(e.success) for e in episodes], source,
            [e.termination for e in episodes])


def _faults(text: str) -> dict[str, float | int]:
    """``latency=0.02,jitter=0.01`` → emulator parameters (``none``: no faults)."""
    if text.strip() in ("", "none"):
        return {}
    out: dict[str, float | int] = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key.strip() not in ("latency", "jitter", "drop", "reorder", "rate", "seed"):
            raise UsageError(f"--emulate: unknown fault '{key.strip()}'; known: latency, jitter, drop, reorder, rate, seed")
        try:
            out[key.strip()] = int(value) if key.strip() == "seed" else float(value)
        except ValueError:
            raise UsageError(f"--emulate: '{item}' is not name=number") from None
    return out


def _recalibrate_for_context(cfg: Any, robot: str, out: Path) -> None:
    """Hardware through the emulator in a context that moves a fixture (e.g. ``hole_offset``):
    the robot node reads the cell's landmarks as an operator re-measuring the moved cell would
    (``out/robot.yaml``, extending the robot's YAML), and the safety monitor and the robot node's
    inner layer read the approach boxes moved with their bodies (``out/safety.yaml``, extending the
    safety YAML; :meth:`~morl_robot.safety.compiled.CompiledRules.placed`), so the context means a
    placement on this path as it does in process — not a calibration error (issue 37)."""
    import yaml

    from morl_robot.contexts.schema import context_by_reference
    from morl_robot.records import write_bytes_atomic
    from morl_robot.resources import resolve_config
    from morl_robot.robots.config import load_robot_config, resolve_robot
    from morl_robot.robots.emulation import recalibrated_landmarks
    from morl_robot.safety.compiled import load_rules

    source = cfg.driver_emulator.config or cfg.robot_node.robot or robot
    context = context_by_reference(cfg.driver_emulator.context).robot_context(cfg.driver_emulator.seed)
    robot_config = load_robot_config(source)
    landmarks = recalibrated_landmarks(robot_config, context, cfg.driver_emulator.scene or None)
    safety_source = str(resolve_config("safety", cfg.safety_monitor.config or robot_config.safety or robot_config.name))
    rules = load_rules(safety_source)
    placed = rules.placed(context)
    extra: dict[str, Any] = {}
    if placed is not rules and placed.approach is not None and rules.config.approach is not None:
        from morl_robot.safety.config import to_si

        per_unit = to_si(1.0, rules.config.approach.unit, ("length",))  # m per YAML length unit
        boxes = rules.config.approach.obstacles
        moved = {n: {"lower": [float(x) / per_unit for x in placed.approach.lower[i]],
                     "upper": [float(x) / per_unit for x in placed.approach.upper[i]], "body": boxes[n].body}
                 for i, n in enumerate(placed.approach.names) if boxes[n].body in context.body_offset}
        path = out / "safety.yaml"
        write_bytes_atomic(path, yaml.safe_dump({"extends": safety_source, "approach": {"obstacles": moved}},
                                                sort_keys=False).encode())
        cfg.safety_monitor.config = extra["safety"] = str(path)
        print(f"context {cfg.driver_emulator.context} moves the cell: approach boxes "
              f"{', '.join(moved)} moved with their bodies in {path}", file=sys.stderr)
    if not landmarks and not extra:
        return
    path = out / "robot.yaml"
    write_bytes_atomic(path, yaml.safe_dump({"extends": str(resolve_config("robots", resolve_robot(source))),
                                             **({"hardware": {"landmarks": landmarks}} if landmarks else {}),
                                             **extra}, sort_keys=False).encode())
    cfg.robot_node.robot = str(path)
    if landmarks:
        print(f"context {cfg.driver_emulator.context} moves the cell: landmarks re-measured on the emulated cell "
              f"({', '.join(f'{k} {v[:3]}' for k, v in landmarks.items())}) in {path}", file=sys.stderr)


def _status_after(probe: Any, part: str) -> dict[str, str]:
    """The node's first ``/diagnostics`` status after now (within 2 s), else the newest seen."""
    try:
        return probe.next_diagnostics(part, timeout=2.0)
    except TimeoutError:
        return probe.diagnostics(part)


def run(args: argparse.Namespace) -> int:
    from std_msgs.msg import Bool, String

    from morl_robot.nodes import wire
    from morl_robot.serving.runtime import OnnxPolicy
    from morl_robot.session.config import load_session_config, node_parameters
    from morl_robot.session.graph import deploy_nodes, observer_specs, policy_session
    from morl_robot.session.processes import NodeSpec
    from morl_robot.session.runner import SessionRunner

    policy_path = Path(args.policy).resolve()
    if not policy_path.is_file():
        raise UsageError(f"--policy: no such file {policy_path}")
    contract = OnnxPolicy.from_file(policy_path).contract
    if args.robot and args.robot != contract.robot:
        raise UsageError(f"--robot {args.robot}: the policy was trained for '{contract.robot}' (task {contract.task})")
    preference = None
    if args.preference is not None:
        from morl_robot.serving.contract import PreferenceError

        try:
            preference = contract.check_preference(args.preference, "--preference")
        except PreferenceError as exc:
            raise UsageError(str(exc)) from None
    elif contract.preferences is not None:
        preference = contract.preferences.centre
    if args.episodes < 0:
        raise UsageError(f"--episodes must be >= 0, got {args.episodes}")
    if not 0 <= args.realtime_priority <= 99:
        raise UsageError(f"--realtime-priority must be 0 (off) or a SCHED_FIFO priority 1-99, got {args.realtime_priority}")
    if not args.stall_timeout > 0:
        raise UsageError(f"--stall-timeout must be > 0 seconds, got {args.stall_timeout}")
    timing = args.timing or ("lockstep" if args.episodes and args.backend == "sim" else "realtime")
    overrides: dict[str, Any] = {**policy_session(contract, str(policy_path)), "backend": args.backend,
                                 "seed": args.seed, "use_sim_time": args.use_sim_time or None,
                                 "robot_node": {"timing": timing, **node_video_overrides(args)},
                                 "policy_server": {"timing": timing}}
    if preference is not None:
        overrides["policy_server"]["preference"] = [float(x) for x in preference]
    if timing == "lockstep":
        overrides["safety_monitor"] = {"watchdogs": False}  # simulated time stands still between steps
    out = Path(args.out).resolve() if args.out else policy_path.parent / f"deploy_{policy_path.stem}"
    out.mkdir(parents=True, exist_ok=True)
    if contract.task_overrides():  # e.g. delta actions: the robot node's task reads them as training did
        from morl_robot.tasks.registry import write_task_config

        overrides["robot_node"]["task_config"] = write_task_config(contract.task, contract.task_overrides(),
                                                                   out / "task.yaml")
    cfg = load_session_config(args.session, overrides)
    ns = "/" + cfg.namespace.strip("/")
    if args.emulate is not None and cfg.driver_emulator.context:
        _recalibrate_for_context(cfg, contract.robot, out)
    specs = deploy_nodes(cfg)
    if args.emulate is not None:
        if args.backend != "hardware":
            raise UsageError("--emulate stands in for the robot's driver: use it with --backend hardware")
        emulator = node_parameters(cfg.driver_emulator, {"robot": contract.robot})  # the session YAML's section
        specs.insert(0, NodeSpec("driver_emulator", "driver_emulator", "/", {**emulator, **_faults(args.emulate)}))
    if args.realtime_priority:
        from morl_robot.nodes.base import RT_PRIORITY_ENV

        for spec in specs:  # the loops a real robot's cycle runs through (not the observers)
            spec.env[RT_PRIORITY_ENV] = str(args.realtime_priority)
    specs = observer_specs(ns, out, args.record, args.foxglove) + specs  # first up, last down
    runner = SessionRunner(specs, out / "logs", args.domain_id)
    print(f"deploying {policy_path.name} (task {contract.task}, robot {contract.robot}, version "
          f"{contract.policy_version}) on {args.backend}, {timing}"
          + (f", preference {contract.preferences.describe(preference)}" if contract.preferences is not None
             and preference is not None else "")
          + f"; ROS_DOMAIN_ID={runner.domain_id}", file=sys.stderr)
    ends: list[dict[str, Any]] = []
    try:
        runner.start()
        runner.probe.diagnostics()  # subscribe now, so the newest statuses are there at the end
        all_ends: list[dict[str, Any]] = []
        runner.probe.subscribe(f"{ns}/episode", String, wire.EVENT_QOS,
                               callback=lambda m: all_ends.append(e) if (e := json.loads(m.data))["event"] == "end"
                               else None)
        try:  # an episode end published before the probe is matched would never arrive
            runner.probe.wait_for_publishers(f"{ns}/episode", 1, timeout=60.0)
        except TimeoutError as exc:
            raise GraphStalled(f"{exc}: the robot node does not publish its episode events") from None
        # the monitor's latched e-stop state, (receive time, engaged): a stop during the counted
        # episodes holds the robot to their time limit, so their returns are not the policy's
        estop = runner.probe.subscribe(f"{ns}/safety/estop", Bool, wire.LATCHED_QOS)
        try:  # matched, and the start-up state in, before the release: it must not look like a later stop
            runner.probe.wait_for_publishers(f"{ns}/safety/estop", 1, timeout=60.0)
            runner.probe.wait_for(lambda: len(estop) > 0, timeout=5.0, what="the safety monitor's e-stop state")
        except TimeoutError as exc:
            raise GraphStalled(f"{exc}: the safety monitor does not publish its e-stop state") from None
        if args.record:  # the recorder has the robot's streams before the episodes that count begin
            from morl_robot.recording.live import wait_recording

            wait_recording(runner.probe, [f"{ns}/task_step", f"{ns}/command_safe"], check=runner.check_failed)
        if args.backend == "hardware":  # its start is a reset motion under the start-up e-stop: let it end
            runner.wait_for_first_episode()
        released_at = time.monotonic()
        runner.release_safety([ns])
        first_episode, counted_from = 0, time.monotonic()
        if args.episodes and args.backend == "sim":
            first_episode, counted_from = _start_counted_episodes(runner, ns, estop, released_at)
        elif args.episodes:  # hardware has no reset_world: count from the episode after the running one
            first_episode, counted_from = int(runner.probe.diagnostics("robot").get("episode", 0)) + 1, time.monotonic()
        start = time.monotonic()
        last = [start]
        progress: list[Any] = [None, start]  # (episode, step, episode ends) last seen, and when it changed

        resets = [len(all_ends), 0]  # (episode ends seen, operator resets)

        def tick() -> None:
            now = time.monotonic()
            if args.episodes and args.backend == "hardware" and len(all_ends) > resets[0]:
                # as the evaluation protocol: a latched e-stop holds the robot to the end of its episode;
                # then it is released (the operator's reset), so the reset motion backs the peg out
                resets[0] = len(all_ends)
                states = _estop_states(estop)
                if states and states[-1][1]:
                    runner.release_safety([ns])
                    resets[1] += 1
            robot = runner.probe.diagnostics("robot")
            seen = (robot.get("episode"), robot.get("step"), len(all_ends))
            if seen != progress[0]:
                progress[:] = [seen, now]
            elif args.episodes and now - progress[1] > args.stall_timeout:
                statuses = {part: runner.probe.diagnostics(part) for part in ("robot", "safety", "policy")}
                raise GraphStalled(
                    f"no task step and no episode end for {now - progress[1]:.0f} s (--stall-timeout "
                    f"{args.stall_timeout:g}) after {len(ends)} of {args.episodes} episode(s); node logs in "
                    f"{out / 'logs'}; newest statuses: " + json.dumps(statuses))
            if time.monotonic() - last[0] >= 5.0:
                last[0] = time.monotonic()
                st = runner.probe.diagnostics("policy")
                keys = [k for k in st if any(w in k for w in ("rate", "latency", "miss", "version", "held"))]
                print(f"[{time.monotonic() - start:6.1f} s] episodes {len(ends)}  " +
                      "  ".join(f"{k}={st[k]}" for k in keys[:8]), file=sys.stderr)

        def done() -> bool:
            ends[:] = [e for e in all_ends if int(e["episode"]) >= first_episode and e.get("termination") != "reset"]
            if args.episodes:
                return len(ends) >= args.episodes
            return bool(args.duration) and time.monotonic() - start >= args.duration

        finished = runner.wait(done, tick)
        finished_at = time.monotonic()  # the monitor latches an e-stop when the nodes stop: not the episodes'
        # statuses published after the last episode (a node reports at 1 Hz: the newest one seen may
        # predate the run's end, or in a short run its configuration), the newest seen if none comes
        server_status, safety_status = (_status_after(runner.probe, part) for part in ("policy", "safety"))
    finally:
        runner.stop()
        if args.record:
            from morl_robot.recording.reader import summary_line

            print(summary_line(out) or f"recording: none written in {out}", file=sys.stderr)
        if args.video is not None:
            print(list_videos(args.video), file=sys.stderr)
    misses = deadline_misses(safety_status)
    if not args.episodes:
        print(json.dumps({"policy_server": server_status, "safety_monitor": safety_status}, indent=1))
        if misses.get("deadline_misses"):
            print(describe_deadline_misses(misses), file=sys.stderr)
        return 0 if finished else 130
    if not finished:
        return 130
    graph = np.asarray([[e["returns"][n] for n in contract.objective_names] for e in ends[:args.episodes]])
    # robot_node: reset_world started episode first_episode with the seed, the next ones seed + 1, …
    seeds = [cfg.seed + int(e["episode"]) - (first_episode if args.backend == "sim" else 0)  # hardware: seed + i
             for e in ends[:args.episodes]]
    # hardware through the emulator (issue 37): the in-process episodes in the emulator's context
    context = cfg.driver_emulator.context if args.emulate is not None and cfg.driver_emulator.context else ""
    from morl_robot.contexts.schema import context_by_reference

    reference, reference_success, source, reference_ends = in_process_returns(policy_path, Path(args.compare) if args.compare else None,
                                           contract, seeds, preference, context_by_reference(context) if context else None)
    report = {
        "policy": str(policy_path), "task": contract.task, "timing": timing, "episodes": args.episodes,
        "backend": args.backend, "context": context or None, "realtime_priority": args.realtime_priority,
        "seeds": seeds, "objectives": list(contract.objective_names),
        "preference": None if preference is None else [float(x) for x in preference],
        "graph_returns": graph.tolist(), "in_process_returns": reference.tolist(), "in_process_source": source,
        "graph_mean": graph.mean(0).tolist(), "in_process_mean": reference.mean(0).tolist(),
        "max_abs_difference": np.abs(graph - reference).max(0).tolist(),
        "terminations": [e.get("termination") for e in ends[:args.episodes]],
        "graph_success": [bool(e.get("success", False)) for e in ends[:args.episodes]],
        "in_process_success": reference_success,
        "in_process_terminations": reference_ends,
        "policy_server": server_status,
        "safety_monitor": safety_status,
        # e-stops the monitor engaged after the counted episodes began (it then holds the robot)
        "graph_estops": sum(engaged for t, engaged in _estop_states(estop) if counted_from < t <= finished_at),
        # hardware: e-stops released at the next episode's start (the evaluation protocol's operator reset)
        "operator_resets": resets[1] if args.backend == "hardware" else None,
        # the monitor's missed deadlines, and how many a late process on this host explains
        "deadline_misses": misses,
        # --record: the recorder's counts (messages, dropped, per topic), session.recording.json
        "recording": _recording(out) if args.record else None,
    }
    from morl_robot.evaluation.provenance import write_results_json

    write_results_json(out / "deploy_report.json", report)
    print(f"{'objective':14s} {'graph (ONNX, ROS)':>18s} {'in-process':>12s} {'max |diff|':>11s}")
    for i, name in enumerate(contract.objective_names):
        print(f"{name:14s} {graph[:, i].mean():18.4f} {reference[:, i].mean():12.4f} "
              f"{report['max_abs_difference'][i]:11.3g}")
    print(f"{'success':14s} {sum(report['graph_success']):>12d} of {args.episodes:<3d} "
          f"{sum(reference_success):>8d} of {args.episodes}")
    if report["graph_estops"]:
        print(f"warning: the safety monitor e-stopped {report['graph_estops']} time(s) during the counted "
              "episodes and held the robot from then on: the graph's returns are not the policy's "
              f"(see {out / 'logs' / 'safety_monitor.log'})", file=sys.stderr)
    if misses.get("deadline_misses"):
        print(describe_deadline_misses(misses), file=sys.stderr)
    print(f"in-process: {source}\nreport: {out / 'deploy_report.json'}")
    return 0


def _recording(out: Path) -> dict[str, Any] | None:
    from morl_robot.recording.reader import recording_summary

    return recording_summary(out)


def deadline_misses(safety_status: dict[str, str]) -> dict[str, float]:
    """The safety monitor's missed deadlines from its newest ``/diagnostics`` status
    (:func:`~morl_robot.safety.monitor.summarise_misses`): counts by cause and the p50/max of the
    host delays measured; empty when the status has none."""
    out: dict[str, float] = {}
    for key, value in safety_status.items():
        if key in ("deadline_misses", "host_deadline_misses", "host_delay_p50_ms", "host_delay_max_ms") \
                or key.startswith("deadline_misses/"):
            try:
                out[key] = float(value)
            except ValueError:
                continue
    return out


def describe_deadline_misses(m: dict[str, float]) -> str:
    """One line: the missed deadlines, how many were this host's scheduling (which process) and
    the delays measured, and how many are unexplained (a stream that stopped)."""
    def n(cause: str) -> int:
        return int(m.get(f"deadline_misses/{cause}", 0))

    host = int(m.get("host_deadline_misses", 0))
    line = f"safety monitor: {int(m.get('deadline_misses', 0))} missed deadline(s) (stale sensor / heartbeat / command)"
    if host:
        line += (f"; {host} from host scheduling delays — monitor's own check late {n('monitor_late')}, "
                 f"published late {n('published_late')}, delivered late {n('delivered_late')} — delay p50 "
                 f"{m.get('host_delay_p50_ms', float('nan')):.0f} ms, max {m.get('host_delay_max_ms', float('nan')):.0f} ms")
    if n("unexplained"):
        line += f"; {n('unexplained')} unexplained (no host delay measured: the stream stopped)"
    return line


def _estop_states(received: list[tuple[float, Any]]) -> list[tuple[float, bool]]:
    """The ``safety/estop`` messages the probe recorded as ``(receive time, engaged)``."""
    return [(t, bool(msg.data)) for t, msg in list(received)]


def _start_counted_episodes(runner: Any, ns: str, estop: list[tuple[float, Any]], released_at: float,
                            attempts: int = 3, settle_s: float = 0.5) -> tuple[int, float]:
    """Start the first counted episode (``reset_world``) with the safety monitor released; returns
    its episode number and when the reset was answered (``time.monotonic``).  Between the release
    (at ``released_at``) and the reset the graph acts an uncounted episode from wherever the robot
    was; if that one trips the monitor's latching e-stop (a policy that presses can reach the
    collision limit within a few dozen lockstep steps), the counted episodes would be served held.
    An e-stop received after the release and before the reset's answer is that episode's: release
    again and start afresh, up to ``attempts`` times.  Later ones belong to the counted episodes and
    are reported (``graph_estops``), not retried."""
    from std_srvs.srv import Trigger

    for attempt in range(1, attempts + 1):
        reply = runner.probe.call(f"{ns}/robot_node/reset_world", Trigger, timeout=30.0)
        reset_at = time.monotonic()
        if not reply.success:
            raise UsageError(f"the robot node refused reset_world: {reply.message}")
        first_episode = int(reply.message.split()[1])  # "episode N started"
        time.sleep(settle_s)  # messages already on their way arrive (the e-stop topic is latched)
        if not any(engaged for t, engaged in _estop_states(estop) if released_at <= t <= reset_at):
            return first_episode, reset_at
        if attempt < attempts:
            print(f"the safety monitor e-stopped in the uncounted episode before the counted ones (attempt "
                  f"{attempt}): releasing it and starting afresh", file=sys.stderr)
            released_at = time.monotonic()
            runner.release_safety([ns])
    raise GraphStalled(f"the safety monitor e-stopped before the counted episodes could begin, {attempts} times; "
                       f"node logs in {runner.log_dir}")
