"""An in-process window onto a ROS graph: subscribe, publish and call services from Python.

Used by the CLI sessions (progress, safety probes), the benchmarks and the end-to-end tests.  It
owns its own rclpy context on the given domain and spins it in a background thread, so it never
interferes with a node in the same process.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Self

import rclpy
from rclpy.context import Context
from rclpy.qos import QoSProfile

from morl_robot.nodes.base import make_executor


class GraphProbe:
    def __init__(self, domain_id: int, name: str = "probe") -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = make_executor(context=self.context)
        self.executor.add_node(self.node)
        self._lock = threading.Lock()
        self.received: dict[str, list[tuple[float, Any]]] = {}
        self._clients: dict[tuple[str, Any], Any] = {}
        self._subscriptions: dict[str, Any] = {}
        #: Called on every poll of a wait (:meth:`wait_for`, and so every wait and call here); it
        #: raises to end the wait at once (the CLI's session runner: a node of the session failed).
        self.check: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._running = True
        self._thread.start()

    def _spin(self) -> None:
        while self._running and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:
                if self._running:
                    raise

    def subscribe(self, topic: str, msg_type: Any, qos: QoSProfile,
                  callback: Callable[[Any], None] | None = None) -> list[tuple[float, Any]]:
        """Record every message on ``topic`` as ``(receive monotonic time, msg)``; returns the list."""
        store = self.received.setdefault(topic, [])

        def on_msg(msg: Any) -> None:
            with self._lock:
                store.append((time.monotonic(), msg))
            if callback is not None:
                callback(msg)

        self._subscriptions[topic] = self.node.create_subscription(msg_type, topic, on_msg, qos)
        return store

    def wait_for_publishers(self, topic: str, count: int = 1, timeout: float = 30.0) -> None:
        """Until ``count`` publishers are matched with this probe's subscription to ``topic``
        (:meth:`subscribe` first).  Creating a subscription does not match it: DDS discovery does,
        a moment later (seconds on a loaded machine), and a volatile message published before then
        is never delivered to it."""
        sub = self._subscriptions[topic]
        self.wait_for(lambda: sub.get_publisher_count() >= count, timeout, f"{count} publisher(s) on {topic}")

    def publisher(self, topic: str, msg_type: Any, qos: QoSProfile) -> Any:
        return self.node.create_publisher(msg_type, topic, qos)

    def wait_for(self, predicate: Callable[[], bool], timeout: float, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.check is not None:
                self.check()
            time.sleep(0.02)
        raise TimeoutError(f"timed out after {timeout:.1f} s waiting for {what}")

    def wait_for_subscribers(self, publisher: Any, count: int = 1, timeout: float = 20.0) -> None:
        self.wait_for(lambda: publisher.get_subscription_count() >= count, timeout,
                      f"{count} subscriber(s) on {publisher.topic_name}")

    def call(self, service: str, srv_type: Any, request: Any | None = None, timeout: float = 20.0,
             idempotent: bool = False) -> Any:
        """Call ``service`` and wait for the response.  Clients are kept per (service, type): a
        freshly created client can send its request before the server has matched the client's
        response reader (``wait_for_service`` only sees the server's request side), and under load
        the response is then lost; a reused client is matched after its first call.  An
        ``idempotent`` request (a query) is sent again every 5 s until answered."""
        key = (service, srv_type)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = self.node.create_client(srv_type, service)
        try:  # (polled, not client.wait_for_service: every poll runs self.check)
            self.wait_for(client.service_is_ready, timeout, f"service {service}")
        except TimeoutError:
            raise TimeoutError(f"service {service} not available after {timeout:.0f} s") from None
        request = request if request is not None else srv_type.Request()
        deadline = time.monotonic() + timeout
        while True:
            future = client.call_async(request)
            wait = min(5.0, deadline - time.monotonic()) if idempotent else deadline - time.monotonic()
            try:
                self.wait_for(future.done, max(wait, 0.0), f"a response from {service}")
                return future.result()
            except TimeoutError:
                if not idempotent or time.monotonic() >= deadline:
                    raise TimeoutError(f"timed out after {timeout:.1f} s waiting for a response from {service}") \
                        from None
                client.remove_pending_request(future)

    def lifecycle(self, node: str, goal: str, timeout: float = 60.0) -> None:
        """Walk the managed node ``node`` (full name) to ``goal`` (``active`` or ``unconfigured``)
        through its ``get_state`` / ``change_state`` services, as a lifecycle manager does."""
        from lifecycle_msgs.msg import State, Transition
        from lifecycle_msgs.srv import ChangeState, GetState

        steps = {  # (current state, goal) -> transition
            (State.PRIMARY_STATE_UNCONFIGURED, "active"): Transition.TRANSITION_CONFIGURE,
            (State.PRIMARY_STATE_INACTIVE, "active"): Transition.TRANSITION_ACTIVATE,
            (State.PRIMARY_STATE_ACTIVE, "unconfigured"): Transition.TRANSITION_DEACTIVATE,
            (State.PRIMARY_STATE_INACTIVE, "unconfigured"): Transition.TRANSITION_CLEANUP,
        }
        goal_id = {"active": State.PRIMARY_STATE_ACTIVE, "unconfigured": State.PRIMARY_STATE_UNCONFIGURED}[goal]
        for _ in range(3):
            state = self.call(f"{node}/get_state", GetState, timeout=timeout, idempotent=True).current_state
            if state.id == goal_id:
                return
            transition = steps.get((state.id, goal))
            if transition is None:
                raise RuntimeError(f"{node} is {state.label}: cannot reach '{goal}'")
            reply = self.call(f"{node}/change_state", ChangeState,
                              ChangeState.Request(transition=Transition(id=transition)), timeout=timeout)
            if not reply.success:
                raise RuntimeError(f"{node} refused the lifecycle transition {transition} (from {state.label}); "
                                   "see its log")
        raise RuntimeError(f"{node} did not reach '{goal}'")

    def diagnostics(self, *name_parts: str) -> dict[str, str]:
        """Key/values of the newest ``/diagnostics`` status whose name contains every one of
        ``name_parts`` (subscribes on the first call; empty until a matching status arrives)."""
        store = self._diagnostics_store()
        with self._lock:
            recent = list(store[-50:])
        for _, msg in reversed(recent):
            found = _matching_status(msg, name_parts)
            if found is not None:
                return found
        return {}

    def next_diagnostics(self, *name_parts: str, timeout: float = 5.0) -> dict[str, str]:
        """Like :meth:`diagnostics`, but from a status published after this call: a node reports
        once a period, so the newest status may predate what the caller just did."""
        store = self._diagnostics_store()
        with self._lock:
            seen = len(store)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                fresh = list(store[seen:])
            for _, msg in fresh:
                found = _matching_status(msg, name_parts)
                if found is not None:
                    return found
            time.sleep(0.05)
        raise TimeoutError(f"no /diagnostics status named {' '.join(name_parts)!r} within {timeout:.0f} s")

    def _diagnostics_store(self) -> list[tuple[float, Any]]:
        from diagnostic_msgs.msg import DiagnosticArray

        from morl_robot.nodes.wire import EVENT_QOS

        store = self.received.get("/diagnostics")
        return store if store is not None else self.subscribe("/diagnostics", DiagnosticArray, EVENT_QOS)

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=2)
        self.executor.shutdown()
        self.node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _matching_status(msg: Any, name_parts: tuple[str, ...]) -> dict[str, str] | None:
    """Key/values of the first status of a ``DiagnosticArray`` whose name contains every part."""
    for status in msg.status:
        if all(part in status.name for part in name_parts):
            return {kv.key: kv.value for kv in status.values}
    return None
