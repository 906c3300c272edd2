"""What every morl_robot node shares: the process entry point, lifecycle autostart, one teardown
(:meth:`ManagedNode.own`), diagnostics, one session per namespace.

Lifecycle, autostart and failed starts (exit status 2): docs/explanation/nodes.md.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.client import Client
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.service import Service
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription
from rclpy.timer import Timer
from std_msgs.msg import String

from morl_robot.configuration import from_mapping
from morl_robot.errors import ConfigError, MorlRobotError
from morl_robot.nodes.wire import EVENT_QOS, LATCHED_QOS

S = TypeVar("S")
E = TypeVar("E")
#: Parameters rclpy itself declares or reads on every node (not part of a node's settings).
ROS_OWN_PARAMETERS = ("use_sim_time", "start_type_description_service")

LEVELS = {"ok": DiagnosticStatus.OK, "warn": DiagnosticStatus.WARN, "error": DiagnosticStatus.ERROR,
          "stale": DiagnosticStatus.STALE}


def diagnostic_status(name: str, hardware_id: str, level: str, message: str,
                      values: Mapping[str, Any]) -> DiagnosticStatus:
    """A ``DiagnosticStatus`` with ``values`` as key/value strings (floats to 6 significant digits)."""
    def fmt(v: Any) -> str:
        return f"{v:.6g}" if isinstance(v, float) else str(v)

    return DiagnosticStatus(level=LEVELS[level], name=name, message=message, hardware_id=hardware_id,
                            values=[KeyValue(key=str(k), value=fmt(v)) for k, v in values.items()])


def steady_timer(node: Node, period: float, callback: Callable[[], None]) -> Any:
    """A timer that ticks in steady (monotonic wall) time whatever ``use_sim_time`` says.

    ``node.create_timer`` runs on the node's clock, which follows ``/clock`` once
    ``use_sim_time`` is true; the robot node is the one ``/clock`` source and publishes it from
    its control timer, so a sim-time control timer would wait for a clock that only it advances
    (the whole graph freezes).  Every timer that drives the simulation, paces a control loop or
    watches for a stalled stream is a steady timer; message stamps still come from the node's
    clock (sim time under ``use_sim_time``), as ROS convention has it.
    """
    return node.create_timer(period, callback, clock=Clock(clock_type=ClockType.STEADY_TIME))


def uses_sim_time(node: Node) -> bool:
    """The node's ``use_sim_time`` parameter (declared by rclpy for every node)."""
    return bool(node.get_parameter("use_sim_time").value)


#: s between attempts to send experience held while no learner subscription was matched yet.
EXPERIENCE_FLUSH_PERIOD = 0.1


class HeldUntilMatched:
    """A publisher of messages that must not be lost to DDS discovery (experience chunks): while
    no subscription is matched yet, messages are held (at most ``limit``, oldest dropped and
    counted) and sent, in order, once one is (on the next :meth:`publish` or :meth:`flush`; call
    :meth:`flush` from a timer).  A reliable publisher delivers only to subscriptions matched when
    it publishes: an actor that starts acting on the learner's first snapshot can otherwise send
    its first chunks before its ``experience`` publisher has matched the learner's subscription
    (seconds on a loaded machine), and the learner, which never received them, waits for
    experience while the actor waits for the learner's allowance.  Thread-safe."""

    def __init__(self, publisher: Any, limit: int = 4096) -> None:
        self.publisher = publisher
        self._held: deque[Any] = deque()
        self._limit = limit
        self._lock = threading.Lock()
        self.dropped = 0

    @property
    def held(self) -> int:
        return len(self._held)

    def publish(self, msg: Any) -> None:
        with self._lock:
            if not self._held and self.publisher.get_subscription_count() > 0:
                self.publisher.publish(msg)
                return
            if len(self._held) >= self._limit:
                self._held.popleft()
                self.dropped += 1
            self._held.append(msg)
        self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._held and self.publisher.get_subscription_count() > 0:
                while self._held:
                    self.publisher.publish(self._held.popleft())


class DiagnosticsPublisher:
    """Publishes one ``DiagnosticStatus`` on ``/diagnostics`` every ``period`` seconds."""

    def __init__(self, node: Node, name: str, status: Callable[[], tuple[str, str, Mapping[str, Any]]],
                 period: float = 1.0, hardware_id: str = "") -> None:
        self._node, self._name, self._status, self._hw = node, name, status, hardware_id
        self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", EVENT_QOS)
        self._timer = steady_timer(node, period, self.publish)

    def publish(self) -> None:
        level, message, values = self._status()
        msg = DiagnosticArray()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.status = [diagnostic_status(self._name, self._hw, level, message, values)]
        self._pub.publish(msg)

    def destroy(self) -> None:
        self._node.destroy_timer(self._timer)
        self._node.destroy_publisher(self._pub)


def log_at(logger: Any, level: str, message: str) -> None:
    """Log ``message`` at a severity chosen at run time.

    rclpy remembers the severity of every call site (file, function, line) and raises
    ``ValueError: Logger severity cannot be changed between calls`` when one site logs at a second
    severity, so ``(logger.warning if x else logger.error)(msg)`` kills the calling thread the first
    time both happen.  Here each severity has its own call site.
    """
    if level == "debug":
        logger.debug(message)
    elif level == "info":
        logger.info(message)
    elif level in ("warn", "warning"):
        logger.warning(message)
    elif level == "error":
        logger.error(message)
    else:
        logger.fatal(message)


def declare_settings(node: Node, cls: type[S]) -> S:
    """Declare one ROS parameter per field of the settings dataclass ``cls`` (its default, its
    type and comment in the description) and return the populated, validated settings.

    The values given to the node (``-p name:=value``, a params file, launch ``parameters``) are
    checked with :func:`morl_robot.configuration.from_mapping`, as a session YAML's node section is:
    a parameter the node does not have is an error listing the allowed names, a wrong type or a
    value its ``validate()`` refuses is an error naming the parameter
    (:class:`~morl_robot.errors.ConfigError`).  Parameters are declared with dynamic typing so
    that ``rate:=50`` fills a float field; the type check is ours.  Later changes
    (``ros2 param set``) are checked the same way (refused with the reason) and update the
    returned object in place, so ``settings.x`` is always the parameter's current value.
    """
    where = f"parameters of {node.get_fully_qualified_name()}"
    fields = [f for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    names = {f.name for f in fields}
    # every override the node was started with (rclpy keeps no public list of them)
    given = getattr(node, "_parameter_overrides", {})
    unknown = sorted(n for n in given if n not in names and n not in ROS_OWN_PARAMETERS
                     and not n.startswith("qos_overrides."))
    if unknown:
        raise ConfigError(f"{where}: unknown parameter '{unknown[0]}'; allowed: {', '.join(sorted(names))}")
    for f in fields:
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        node.declare_parameter(f.name, default, ParameterDescriptor(
            dynamic_typing=True, description=f"{getattr(f.type, '__name__', f.type)} (default {default!r})"))
    current = {n: node.get_parameter(n).value for n in names}
    settings = from_mapping(cls, _ros_values(current, fields), source=where)

    def check(params: list[Any]) -> SetParametersResult:
        changed = {p.name: p.value for p in params if p.name in names}
        if changed:
            try:
                from_mapping(cls, _ros_values({**current, **changed}, fields), source=where)
            except ConfigError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def update(params: list[Any]) -> None:
        changed = {p.name: p.value for p in params if p.name in names}
        if changed:
            current.update(changed)
            fresh = from_mapping(cls, _ros_values(current, fields), source=where)
            for name in names:
                setattr(settings, name, getattr(fresh, name))

    node.add_on_set_parameters_callback(check)
    node.add_post_set_parameters_callback(update)
    return settings


def _ros_values(values: Mapping[str, Any], fields: list[Any]) -> dict[str, Any]:
    """ROS parameter values as YAML would give them: arrays as lists; an unset (``None``) list
    parameter (``-p name:=[]`` has no type) as the empty list."""
    out = {}
    for f in fields:
        value = values[f.name]
        if value is None and isinstance(f.default_factory() if f.default_factory is not dataclasses.MISSING
                                        else f.default, list):
            value = []
        elif not isinstance(value, (str, bytes)) and hasattr(value, "__len__"):
            value = list(value)
        out[f.name] = value
    return out


#: s a session's node listens for an earlier session on its names before it configures (DDS
#: discovery of a latched announcement on one machine: ~0.15 s measured on a loaded 2-core host).
SESSION_SETTLE = 1.0
#: s at most a node waits for what discovery shows to announce itself (``SessionGuard.settled``).
SESSION_SETTLE_MAX = 3.0


class SessionGuard:
    """One session per namespace.  Every node of a session announces itself on the latched
    ``session`` topic of its namespace (id, start time, node, pid, host) and listens there: an
    announcement of another session that started earlier means this session's names are taken, so
    this node gives way (:attr:`refused`, the reason naming the first session; :func:`run_node`
    then exits with status 2).  A later one is logged once as an intruder that will give way.
    Commands are kept apart by the session id they carry in any case (``wire.split_command``);
    this keeps sensor streams and services apart too."""

    def __init__(self, node: Node, session: str, started: float) -> None:
        self.node, self.session, self.started = node, session, started or time.time()
        self.since = time.monotonic()
        self.refused = ""
        self.heard_self: float | None = None  # when this node's own announcement came back
        self._heard_nodes: set[tuple[str, str, str]] = set()  # (session, node, pid) of every announcement heard
        self._seen: set[str] = set()
        self.announcement = {"session": session, "started": self.started, "node": node.get_fully_qualified_name(),
                             "pid": os.getpid(), "host": socket.gethostname()}
        self._pub = node.create_publisher(String, "session", LATCHED_QOS)
        self._sub = node.create_subscription(String, "session", self._on_announcement, LATCHED_QOS)
        self._pub.publish(String(data=json.dumps(self.announcement)))

    @staticmethod
    def gives_way(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
        """Whether the session ``ours`` must give way to ``theirs`` (the earlier start keeps the
        names; the smaller id breaks a tie)."""
        return (float(theirs["started"]), str(theirs["session"])) < (float(ours["started"]), str(ours["session"]))

    def settled(self) -> bool:
        """Listened long enough and not refused: the names are this session's.  Long enough is
        :data:`SESSION_SETTLE` s, half of it after this node heard its own announcement back (a
        process starved of CPU at start-up has its DDS threads starved too: the wait stretches
        with it), and, up to :data:`SESSION_SETTLE_MAX` s, until what discovery already shows is
        accounted for: a node of the graph with this node's own name (another session's twin,
        whose announcement has not arrived yet), or a publisher on the ``session`` topic that has
        not been heard.  (A node killed moments ago stays in discovery for its lease but can deliver
        nothing: after that wait the node starts, saying so.)"""
        now = time.monotonic()
        if self.refused or self.heard_self is None or now - self.since < SESSION_SETTLE \
                or now - self.heard_self < SESSION_SETTLE / 2:
            return False
        pending = self._unaccounted()
        if not pending:
            return True
        if now - self.since >= SESSION_SETTLE_MAX:  # e.g. a process killed moments ago, still in discovery
            self.node.get_logger().warning(f"starting although {pending} without announcing a session for "
                                           f"{SESSION_SETTLE_MAX:g} s (a node that just died, or not of a session)")
            return True
        return False

    def _unaccounted(self) -> str:
        """What discovery shows that no announcement explains yet ("" = nothing)."""
        me = self.node.get_fully_qualified_name()
        names = [f"{ns.rstrip('/')}/{n}" for n, ns in self.node.get_node_names_and_namespaces()]
        if names.count(me) > 1 and not self._seen:
            return f"another node named {me} runs"
        topic = f"{self.node.get_namespace().rstrip('/')}/session"
        publishers = self.node.count_publishers(topic)
        if publishers > len(self._heard_nodes):
            return f"{publishers - len(self._heard_nodes)} unheard publisher(s) on {topic}"
        return ""

    def _on_announcement(self, msg: Any) -> None:
        try:
            theirs = json.loads(msg.data)
            other = str(theirs["session"])
            float(theirs["started"])
        except (ValueError, KeyError, TypeError):
            return
        self._heard_nodes.add((other, str(theirs.get("node", "")), str(theirs.get("pid", ""))))
        if other == self.session:
            if self.heard_self is None and theirs.get("node") == self.announcement["node"]:
                self.heard_self = time.monotonic()
            if theirs.get("gives_way") and not self.refused:  # a node of this session found the names taken
                self.refused = str(theirs.get("reason") or f"this session gives way to session {theirs['gives_way']}")
                self.node.get_logger().error(self.refused)
            return
        if other in self._seen or self.refused:
            return
        self._seen.add(other)
        ns = self.node.get_namespace()
        when = time.strftime("%H:%M:%S", time.localtime(float(theirs["started"])))
        first = (f"session {other} (started {when}, {theirs.get('node', '?')} pid {theirs.get('pid', '?')} on "
                 f"{theirs.get('host', '?')})")
        domain = os.environ.get("ROS_DOMAIN_ID", "0") or "0"
        if self.gives_way(self.announcement, theirs):
            self.refused = (f"namespace {ns} on ROS_DOMAIN_ID={domain} is already used by {first}; this session "
                            f"({self.session}) does not start: give it another --namespace (namespace:=) or "
                            "--domain-id")
            self.node.get_logger().error(self.refused)
            # the session's other nodes here may not have heard the first session yet: they give way too
            self._pub.publish(String(data=json.dumps({**self.announcement, "gives_way": other,
                                                      "reason": self.refused})))
        else:
            self.node.get_logger().error(f"{first} started on this session's names ({ns}); it gives way, "
                                         f"this session ({self.session}) goes on")
            on_intruder = getattr(self.node, "on_intruder", None)
            if callable(on_intruder):
                on_intruder()


class ManagedNode(LifecycleNode):
    """A lifecycle node with ``autostart``, errors reported by name instead of tracebacks, and one
    teardown for every node.

    Subclasses declare their parameters with :meth:`declare_settings` (a dataclass deriving from
    :class:`~morl_robot.node_settings.ManagedNodeSettings`, which has ``autostart``) in their
    constructor and implement :meth:`configure`, :meth:`activate`, :meth:`deactivate` and
    :meth:`cleanup`; raising :class:`~morl_robot.errors.MorlRobotError` there fails the
    transition with the message logged.  Every publisher, subscription, timer, service, client or
    :class:`DiagnosticsPublisher` a node creates goes through :meth:`own`: the base destroys it at
    deactivate or cleanup (after the node's own hook), when a transition fails halfway, at
    shutdown and in :meth:`close`; the hooks release only what is not a ROS entity.
    """

    settings: Any
    session_guard: SessionGuard | None = None

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self._owned: dict[str, list[Any]] = {"deactivate": [], "cleanup": []}
        self._is_active = False

    def declare_settings(self, cls: type[S]) -> S:
        """:func:`declare_settings` for this node; the result is also kept as ``self.settings``."""
        self.settings = declare_settings(self, cls)
        return self.settings

    @functools.cached_property
    def session_token(self) -> float | None:
        """The wire value of this node's session id (None: not started by a session); read once,
        it goes out with every command."""
        from morl_robot.nodes.wire import session_token

        session = getattr(getattr(self, "settings", None), "session", "")
        return session_token(session) if session else None

    @property
    def refused(self) -> str:
        """Why this node gives way to an earlier session on its names ("" = it does not)."""
        return self.session_guard.refused if self.session_guard is not None else ""

    @property
    def is_active(self) -> bool:
        """Activated and not deactivated since (:meth:`close` deactivates first when it is)."""
        return self._is_active

    # --- what the node owns --------------------------------------------------------------------
    def own(self, entity: E, until: str = "cleanup") -> E:
        """Destroy ``entity`` at ``until``: ``"cleanup"`` (what :meth:`configure` creates) or
        ``"deactivate"`` (what :meth:`activate` starts).  A publisher, subscription, timer, service
        or client of this node, or anything with ``destroy()``; returns it."""
        if until not in self._owned:
            raise ValueError(f"own(until={until!r}): 'cleanup' or 'deactivate'")
        self._owned[until].append(entity)
        return entity

    def disown(self, entity: Any) -> bool:
        """Destroy one owned entity now (False: not owned, e.g. already released by cleanup)."""
        for owned in self._owned.values():
            if any(e is entity for e in owned):
                owned[:] = [e for e in owned if e is not entity]
                self._destroy(entity)
                return True
        return False

    def _destroy(self, entity: Any) -> None:
        if isinstance(entity, Publisher):
            self.destroy_publisher(entity)
        elif isinstance(entity, Subscription):
            self.destroy_subscription(entity)
        elif isinstance(entity, Timer):
            self.destroy_timer(entity)
        elif isinstance(entity, Service):
            self.destroy_service(entity)
        elif isinstance(entity, Client):
            self.destroy_client(entity)
        else:
            entity.destroy()

    def _release(self, until: str) -> None:
        """Destroy what is owned until ``until``, newest first; every one even if one fails."""
        owned, self._owned[until] = self._owned[until], []
        failure: BaseException | None = None
        for entity in reversed(owned):
            try:
                self._destroy(entity)
            except Exception as exc:  # noqa: BLE001 - the rest still goes; the first failure is raised
                failure = failure or exc
        if failure is not None:
            raise failure

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Walk to *active* if ``autostart`` (call once after construction; :func:`run_node` first
        listens for another session on the node's names, :class:`SessionGuard`)."""
        if not hasattr(self, "settings"):
            raise TypeError(f"{type(self).__name__} declares no settings: call self.declare_settings(<its settings "
                            "dataclass>) in its constructor")
        if self.settings.autostart:
            if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                raise SystemExit(2)
            if self.trigger_activate() != TransitionCallbackReturn.SUCCESS:
                raise SystemExit(2)

    def _guard(self, what: str, fn: Callable[[], None]) -> TransitionCallbackReturn:
        try:
            fn()
        except MorlRobotError as exc:
            self.get_logger().error(f"{what} failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def _deactivate(self) -> None:
        try:
            self.deactivate()
        finally:
            self._is_active = False
            self._release("deactivate")

    def _cleanup(self) -> None:
        try:
            self.cleanup()
        finally:
            try:
                self._release("deactivate")
            finally:
                self._release("cleanup")

    def teardown(self) -> None:
        """Deactivate if active, then clean up: the node's hooks, each followed by destroying what
        it owns until then."""
        if self._is_active:
            self._deactivate()
        self._cleanup()

    def on_configure(self, state: Any) -> TransitionCallbackReturn:
        result = self._guard("configure", self.configure)
        if result != TransitionCallbackReturn.SUCCESS:
            self._release("cleanup")  # a failed configure leaves no entities behind
        return result

    def on_activate(self, state: Any) -> TransitionCallbackReturn:
        result = self._guard("activate", self.activate)
        if result != TransitionCallbackReturn.SUCCESS:
            self._release("deactivate")
            return result
        self._is_active = True
        return super().on_activate(state)  # activates the lifecycle publishers

    def on_deactivate(self, state: Any) -> TransitionCallbackReturn:
        result = self._guard("deactivate", self._deactivate)
        if result == TransitionCallbackReturn.SUCCESS:
            return super().on_deactivate(state)
        return result

    def on_cleanup(self, state: Any) -> TransitionCallbackReturn:
        return self._guard("cleanup", self._cleanup)

    def on_shutdown(self, state: Any) -> TransitionCallbackReturn:
        try:
            self.teardown()
        except Exception as exc:  # noqa: BLE001 - shutting down anyway
            self.get_logger().warning(f"cleanup at shutdown: {exc}")
        return TransitionCallbackReturn.SUCCESS

    def close(self) -> None:
        """Process exit (:func:`run_node`): :meth:`teardown`."""
        self.teardown()

    def configure(self) -> None:
        """Load configuration and allocate resources."""

    def activate(self) -> None:
        """Start timers / commanding."""

    def deactivate(self) -> None:
        """Stop commanding; the robot holds."""

    def cleanup(self) -> None:
        """Release resources."""


def make_executor(context: Any = None) -> Any:
    """rclpy's events executor (callbacks dispatched from middleware events, no wait-set rebuild
    per callback: about 2x less overhead per message in our lockstep loop), or the classic
    single-threaded executor with ``MORL_ROBOT_EXECUTOR=single``."""
    if os.environ.get("MORL_ROBOT_EXECUTOR", "events") == "events":
        try:
            from rclpy.experimental import EventsExecutor

            return EventsExecutor(context=context)
        except ImportError:  # older rclpy
            pass
    return SingleThreadedExecutor(context=context)


def stop_with_parent() -> None:
    """A node started by a morl_robot session gets SIGINT when the process that started it ends,
    however it ends (SIGKILL included), and runs its own clean shutdown (Linux
    ``PR_SET_PDEATHSIG``; the nodes run in their own session, so no terminal signal reaches them)."""
    parent = os.environ.get("MORL_ROBOT_PARENT_PID", "")
    if not parent.isdigit():
        return  # started by someone else (ros2 launch, ros2 run): their own supervision applies
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGINT), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent ended before the line above
        os.kill(os.getpid(), signal.SIGINT)


#: Environment variable: SCHED_FIFO priority (1-99) for a node process; unset or 0 = normal.
RT_PRIORITY_ENV = "MORL_ROBOT_RT_PRIORITY"


def apply_realtime_priority() -> str:
    """``$MORL_ROBOT_RT_PRIORITY=N``: run this process ``SCHED_FIFO`` at priority N, as a
    ros2_control real-time loop runs, so a busy host cannot starve the robot's control, safety and
    policy loops.  Called before ``rclpy.init`` starts the DDS threads, so every thread inherits
    it.  Returns what happened (for the node's log); refused (no ``CAP_SYS_NICE``, no ``rtprio``
    limit), the node runs at normal priority and says how to allow it."""
    text = os.environ.get(RT_PRIORITY_ENV, "").strip()
    if not text or text == "0":
        return ""
    if not text.isdigit() or not 1 <= int(text) <= 99:
        raise ConfigError(f"${RT_PRIORITY_ENV}: expected a SCHED_FIFO priority 1-99 (or 0: off), got {text!r}")
    try:  # the threads there already (numpy's BLAS pool), by thread id; the ones to come inherit it
        for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(int(text)))
    except PermissionError:
        return (f"warning: real-time priority {text} refused (SCHED_FIFO needs CAP_SYS_NICE or an 'rtprio' "
                "limit in /etc/security/limits.conf for this user): running at normal priority")
    return f"real-time scheduling: SCHED_FIFO priority {text}"


def node_help(make: Callable[[], Node], program: str) -> str:
    """``<node> --help``: how to run it, the node module's docstring and its parameters with their
    defaults (the settings dataclass in the module; meanings: docs/reference/topics.md)."""
    module = sys.modules.get(getattr(make, "__module__", "") or "")
    name = os.path.basename(program).removesuffix(".py")
    if name in ("__main__", "-c", "") and module is not None:
        name = module.__name__.rsplit(".", 1)[-1]
    doc = (module.__doc__ or "").strip() if module is not None else ""
    settings = [v for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v)
                and v.__name__.endswith("Settings")] if module is not None else []
    params = ""
    if settings:
        fields = [f for f in dataclasses.fields(settings[0]) if f.init]
        defaults = [f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
                    for f in fields]
        params = ("\n\nparameters (default): " + ", ".join(f"{f.name} ({d!r})" for f, d in zip(fields, defaults))
                  + "\nwhat each one means, and the topics and services: docs/reference/topics.md")
    return (f"usage: ros2 run morl_robot {name} [--ros-args [-p NAME:=VALUE]... [-r FROM:=TO]... "
            f"[--params-file FILE]]\n\n{doc}{params}\n")


def run_node(make: Callable[[], Node], args: list[str] | None = None) -> int:
    """Process entry point: init rclpy, build the node, spin until SIGINT/SIGTERM, shut down cleanly.

    SIGTERM is treated like Ctrl-C so a launcher's ``terminate()`` runs the same shutdown
    path (checkpoints are written by the nodes' ``close``/``cleanup``).
    """
    argv = list(args if args is not None else sys.argv)
    user_args = argv[1:argv.index("--ros-args")] if "--ros-args" in argv else argv[1:]
    if "-h" in user_args or "--help" in user_args:
        print(node_help(make, argv[0] if argv else "node"))
        return 0
    # We handle SIGINT/SIGTERM ourselves (rclpy's handler would shut the context down first, and
    # then close() could no longer publish the robot's hold command or log).
    try:
        said = apply_realtime_priority()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if said:
        print(said, file=sys.stderr, flush=True)
    rclpy.init(args=args if args is not None else sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    node: Node | None = None
    stop = {"flag": False}

    def on_signal(signum: int, frame: Any) -> None:  # pragma: no cover - exercised via processes
        stop["flag"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stop_with_parent()
    rc = 0
    try:
        node = make()
        executor = make_executor()
        executor.add_node(node)
        if isinstance(node, ManagedNode):
            if getattr(node.settings, "session", ""):
                # listen for an earlier session on these names before configuring: a node that gives
                # way has published nothing but its announcement (SessionGuard)
                node.session_guard = SessionGuard(node, node.settings.session, node.settings.session_started)
                while rclpy.ok() and not stop["flag"] and not node.session_guard.settled() and not node.refused:
                    executor.spin_once(timeout_sec=0.05)
            if node.refused:  # gave way before starting: nothing of this node's to close or write
                print(f"error: {node.refused}", file=sys.stderr)
                node.destroy_node()
                node, rc = None, 2
                return rc
            if stop["flag"]:  # stopped while starting up (e.g. its session gave way): never configured
                return rc
            node.start()
        while rclpy.ok() and not stop["flag"] and not getattr(node, "finished", False):
            executor.spin_once(timeout_sec=0.1)
            if getattr(node, "refused", ""):
                print(f"error: {node.refused}", file=sys.stderr)  # type: ignore[union-attr]
                rc = 2
                break
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except MorlRobotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        rc = 2
    except SystemExit as exc:
        rc = int(exc.code or 0)
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # noqa: BLE001
                    print(f"error while closing: {exc}", file=sys.stderr)
                    rc = rc or 1
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return rc
