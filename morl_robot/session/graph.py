"""The node graph of a session, as :class:`~morl_robot.session.processes.NodeSpec` lists.

One function per session kind, used by the CLI (as processes) and by the launch files (as
``launch_ros.actions.Node``), so both start exactly the same graph:

* **train** — in ``/<ns>``: ``learner_node``; per actor i in ``/<ns>/actor<i>``: ``robot_node``,
  ``safety_monitor`` and ``policy_server`` (mode train, ``actor_id`` i) (``actors_kind: per-step``)
  or one ``vector_actor`` (``actors_kind: vectorized``: B simulated environments, their experience
  actor ids ``i·B + b``), with ``policy_snapshot``, ``experience`` and ``experience_allowance``
  remapped to the learner's ``/<ns>/…`` topics.  With ``training.demonstrations.episodes`` N > 0
  in the learner YAML, a new run's policy servers or vector actors act the first N episodes with
  the task's demonstrator (:func:`demonstration_settings`: N shared among the actors).
* **deploy** — in ``/<ns>``: ``robot_node``, ``safety_monitor``, ``policy_server`` (mode deploy);
  :func:`policy_session` gives the session settings a policy's contract decides (task, robot,
  reward machine).
* **safety_test** — per phase (control mode) in ``/<ns>/<mode>``: ``robot_node`` (bare robot) and
  ``safety_monitor``; later phases start unconfigured.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from morl_robot.session.config import SessionConfig, node_parameters
from morl_robot.session.processes import NodeSpec

if TYPE_CHECKING:
    from morl_robot.serving.contract import PolicyContract


def _ns(cfg: SessionConfig) -> str:
    return "/" + cfg.namespace.strip("/")


def _robot_params(cfg: SessionConfig, seed: int) -> dict:
    session = {"task": cfg.task, "backend": cfg.backend, "seed": seed, "reward_machine": cfg.reward_machine}
    if cfg.robot:
        session["robot"] = cfg.robot
    return node_parameters(cfg.robot_node, session)


def _safety_params(cfg: SessionConfig, robot: str) -> dict:
    # actuator-labelled commands are read in the robot node's control mode; the task's action
    # components are the one partial command the monitor lets through (as the robot node executes)
    session = {"robot": robot, "control_mode": cfg.robot_node.control_mode}
    if cfg.task:
        from morl_robot.tasks.registry import load_task

        session["action_labels"] = ",".join(load_task(cfg.task).action_labels)
    return node_parameters(cfg.safety_monitor, session)


def policy_session(contract: PolicyContract, policy: str) -> dict[str, Any]:
    """The session overrides of a deploy session serving ``policy`` (a model with ``contract``):
    its task, robot and file, and for a policy of a reward-machine task (contract field
    ``reward_machine``) the machine's spec, checked first against this installation's files
    (:func:`~morl_robot.reward_machines.env.check_machine`, a ``ContractError`` naming the field).
    The robot node runs the machine, as in training: its ``task_step`` carries the product
    observation (task observation + machine one-hot, labelled) that the policy server checks
    against the contract's labels and feeds to the policy, and its episode returns include the
    machine's objectives; the safety monitor sees only commands and readings, as for any policy."""
    session: dict[str, Any] = {"task": contract.task, "robot": contract.robot, "policy": policy}
    if contract.reward_machine is not None:
        from morl_robot.reward_machines.env import check_machine

        check_machine(contract.reward_machine, contract.task)
        session["reward_machine"] = contract.reward_machine.spec
    return session


def robot_of(cfg: SessionConfig) -> str:
    """The session's robot name (from the task when not given)."""
    if cfg.robot:
        return cfg.robot
    from morl_robot.tasks.registry import load_task

    return load_task(cfg.task).robot_name


#: Seed offset per session of one run: a resumed run's actors must not replay the first session's
#: episode starts and exploration noise.
SESSION_SEED_STRIDE = 100_000


def demonstration_settings(cfg: SessionConfig, session_index: int) -> list[dict[str, Any]]:
    """Per actor, the policy server's or vector actor's ``demonstrations`` and
    ``demonstration_noise`` from the learner YAML's ``training.demonstrations`` (its N episodes
    shared among the actors); none for a resumed run (``session_index`` > 0: the learner clones
    what it has once actors act its policy) or without demonstrations."""
    from morl_robot.acting.demonstrator import demonstration_shares
    from morl_robot.learning.config import load_learner_config
    from morl_robot.resources import resolve_config

    path = resolve_config("learner", cfg.learner_node.config)
    demos = load_learner_config(path).training.demonstrations
    if not demos.episodes or session_index > 0:
        return [{} for _ in range(cfg.actors)]
    return [{"demonstrations": n, "demonstration_noise": demos.action_noise}
            for n in demonstration_shares(demos.episodes, cfg.actors)]


def per_step_reason(cfg: SessionConfig, record: bool = False, live_view: bool = False) -> str:
    """Why a training session must act per step (robot_node + safety_monitor + policy_server per
    actor) rather than with vector actors; "" when nothing needs it.  A hardware backend always
    does; otherwise what only the per-step graph has: ``/clock`` (use_sim_time), the robot node's
    topics for a recording or a live view, videos, a real-time loop, a robot other than the
    task's (demonstrations do not: vector actors act them too)."""
    if cfg.backend != "sim":
        return f"backend {cfg.backend}"
    if cfg.use_sim_time:
        return "use_sim_time (the simulated robot node publishes /clock)"
    if record:
        return "a recording (--record, record:=true: it holds the robot nodes' task_step and views)"
    if live_view:
        return "a live view (--foxglove, foxglove:=true: it shows the robot nodes' scene and views)"
    rn = cfg.robot_node
    for name, what in (("video_dir", "videos"), ("robot", "a robot other than the task's"),
                       ("scene", "a scene file"), ("control_mode", "a control mode")):
        if getattr(rn, name):
            return f"robot_node.{name} ({what}: the robot node's)"
    if rn.timing != "lockstep" or rn.model != "builtin":
        return f"robot_node.{'timing' if rn.timing != 'lockstep' else 'model'} (the robot node's)"
    return ""


def resolve_actors_kind(cfg: SessionConfig, record: bool = False, live_view: bool = False) -> str:
    """Make ``actors_kind: auto`` concrete in ``cfg``: ``vectorized`` unless :func:`per_step_reason`
    names a reason, then ``per-step``; returns that reason ("" for vectorized or a kind the
    session chose itself)."""
    if cfg.actors_kind != "auto":
        return ""
    why = per_step_reason(cfg, record, live_view)
    cfg.actors_kind = "per-step" if why else "vectorized"
    return why


def train_nodes(cfg: SessionConfig, out_dir: str | os.PathLike[str], session_index: int = 0) -> list[NodeSpec]:
    """The training graph; ``session_index`` (0 for a new run, k for its k-th resumption) shifts
    the actors' seeds by ``k · SESSION_SEED_STRIDE``.  ``actors_kind: auto`` is resolved here
    (:func:`resolve_actors_kind`) unless the caller did."""
    resolve_actors_kind(cfg)
    ns, robot = _ns(cfg), robot_of(cfg)
    base = cfg.seed + SESSION_SEED_STRIDE * int(session_index)
    demonstrations = demonstration_settings(cfg, session_index)
    nodes = [NodeSpec("learner_node", "learner_node", ns, node_parameters(cfg.learner_node, {
        "task": cfg.task, "reward_machine": cfg.reward_machine, "out_dir": str(out_dir), "seed": cfg.seed,
        "total_steps": cfg.total_steps,
    }))]
    for i in range(cfg.actors):
        actor_ns = f"{ns}/actor{i}"
        remap = {"policy_snapshot": f"{ns}/policy_snapshot", "experience": f"{ns}/experience",
                 "experience_allowance": f"{ns}/experience_allowance"}
        if cfg.actors_kind == "vectorized":
            params = {**node_parameters(cfg.vector_actor, {"task": cfg.task, "reward_machine": cfg.reward_machine,
                                                            "task_config": (cfg.robot_node.task_config
                                                                            or cfg.learner_node.task_config),
                                                            "safety": cfg.safety_monitor.config}),
                      **demonstrations[i], "actor_id": i, "seed": base + 1000 * (i + 1)}
            nodes.append(NodeSpec("vector_actor", "vector_actor", actor_ns, params, remap))
            continue
        nodes += [
            NodeSpec("robot_node", "robot_node", actor_ns, _robot_params(cfg, base + 1000 * (i + 1))),
            NodeSpec("safety_monitor", "safety_monitor", actor_ns, _safety_params(cfg, robot)),
            NodeSpec("policy_server", "policy_server", actor_ns,
                     {**node_parameters(cfg.policy_server, demonstrations[i]), "actor_id": i,
                      "seed": base + 1000 * (i + 1)}, remap),
        ]
    return with_clock(cfg, nodes)


def deploy_nodes(cfg: SessionConfig) -> list[NodeSpec]:
    ns, robot = _ns(cfg), robot_of(cfg)
    params = node_parameters(cfg.policy_server, {"policy": cfg.policy} if cfg.policy else None)
    return with_clock(cfg, [
        NodeSpec("robot_node", "robot_node", ns, _robot_params(cfg, cfg.seed)),
        NodeSpec("safety_monitor", "safety_monitor", ns, _safety_params(cfg, robot)),
        NodeSpec("policy_server", "policy_server", ns, params),
    ])


def safety_test_nodes(cfg: SessionConfig) -> list[NodeSpec]:
    """Per phase (control mode: the robot YAML's ``safety_test.phases``,
    :func:`~morl_robot.safety.testing.safety_test_plan`) a bare robot node and its safety monitor in
    ``/<ns>/<mode>``; the first phase's pair starts active, the later ones unconfigured
    (``autostart: false``) until the probe reaches them."""
    from morl_robot.safety.testing import safety_test_plan

    ns, plan = _ns(cfg), safety_test_plan(robot_of(cfg))
    robot = plan.config.name
    nodes = []
    for i, mode in enumerate(plan.modes):
        robot_params = {**_robot_params(cfg, cfg.seed), "control_mode": mode, "robot": plan.robot}
        if cfg.backend == "sim" and not robot_params["scene"]:
            robot_params["scene"] = plan.scene
        safety_params = {**_safety_params(cfg, robot), "control_mode": mode}
        if not safety_params.get("config"):
            safety_params["config"] = plan.safety
        if i > 0:
            robot_params["autostart"] = safety_params["autostart"] = False
        nodes += [NodeSpec("robot_node", "robot_node", f"{ns}/{mode}", robot_params),
                  NodeSpec("safety_monitor", "safety_monitor", f"{ns}/{mode}", safety_params)]
    return with_clock(cfg, nodes)


def session_nodes(kind: str, cfg: SessionConfig, out_dir: str | os.PathLike[str] = "runs/latest") -> list[NodeSpec]:
    if kind == "train":
        return train_nodes(cfg, out_dir)
    if kind == "deploy":
        return deploy_nodes(cfg)
    if kind == "safety_test":
        return safety_test_nodes(cfg)
    raise ValueError(f"unknown session kind '{kind}'; known: train, deploy, safety_test")


#: The recording of a session, in its run / report directory (``--record``, ``record:=true``).
RECORDING_NAME = "session.mcap"


def observer_specs(namespace: str, out_dir: str | os.PathLike[str], record: bool,
                   foxglove_port: int | None) -> list[NodeSpec]:
    """The observer nodes of a session (``--record``, ``--foxglove [PORT]``; launch ``record:=true``,
    ``foxglove:=true``): a ``recorder`` writing every topic under ``namespace`` (and
    ``/diagnostics``) to ``<out_dir>/session.mcap``, and a ``live_view`` Foxglove server on
    ``foxglove_port``.  They only subscribe; put them first so they start before the session's
    nodes and stop after them (docs/howto/record.md)."""
    import importlib.util

    from morl_robot.errors import UsageError

    ns = "/" + namespace.strip("/")
    specs = []
    if record:
        specs.append(NodeSpec("recorder", "recorder", ns, {
            "path": str(Path(out_dir) / RECORDING_NAME), "namespaces": [ns]}))
    if foxglove_port is not None:
        if importlib.util.find_spec("morl_robot.nodes.live_view") is None:
            raise UsageError("--foxglove: the live_view node (morl_robot.nodes.live_view) is not in this "
                             "installation")
        specs.append(NodeSpec("live_view", "live_view", ns, {"port": int(foxglove_port)}))
        import sys  # the one place a session's user learns the address (docs/howto/rviz_foxglove.md)
        print(f"live view: open ws://localhost:{int(foxglove_port)} in Foxglove (layout: "
              "config/foxglove/morl_robot_layout.json)", file=sys.stderr)
    return specs


def with_clock(cfg: SessionConfig, nodes: list[NodeSpec], session: str | None = None) -> list[NodeSpec]:
    """Every node's ``use_sim_time`` parameter set from the session (``--use-sim-time``,
    ``use_sim_time:=true``): all nodes of a graph follow one clock.  Every managed node also gets
    the graph's session id (``session``, a fresh one unless given) and start time: its commands
    carry the id, and a second session on the same names gives way (``nodes.base.SessionGuard``)."""
    from morl_robot.node_settings import (
        NODE_SETTINGS,
        ManagedNodeSettings,
        new_session_id,
    )

    session = session or new_session_id()
    started = time.time()
    for spec in nodes:
        spec.parameters["use_sim_time"] = bool(cfg.use_sim_time)
        if issubclass(NODE_SETTINGS.get(spec.executable, object), ManagedNodeSettings):
            spec.parameters["session"] = session
            spec.parameters["session_started"] = started
    return nodes


def session_of(nodes: list[NodeSpec]) -> str:
    """The session id the graph's nodes were given (:func:`with_clock`)."""
    return next(str(s.parameters["session"]) for s in nodes if s.parameters.get("session"))
