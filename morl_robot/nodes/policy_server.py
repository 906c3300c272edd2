"""``policy_server``: an ONNX policy on the ROS graph, deterministic (deploy) or exploring (train).

Translation only: :class:`~morl_robot.acting.server.PolicyServerCore` decides (acting, holds, timing,
models, preference, counters); this node decodes ``task_step``, publishes ``command`` and runs the
realtime loop thread.  What each mode, timing and parameter does: docs/explanation/nodes.md
(topics and defaults: docs/reference/topics.md).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, Header, UInt8MultiArray
from std_srvs.srv import Trigger

from morl_robot.acting.policy import ModelLoader, is_serving
from morl_robot.acting.server import PolicyServerCore, use_fifo_scheduling
from morl_robot.node_settings import PolicyServerSettings
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    EXPERIENCE_FLUSH_PERIOD,
    DiagnosticsPublisher,
    HeldUntilMatched,
    ManagedNode,
    log_at,
    run_node,
    steady_timer,
)
from morl_robot.serving.contract import PolicyContract

#: Parameters fixed once the node is configured (``policy``, ``observation_timeout``, ``preference`` may change).
FIXED_WHILE_CONFIGURED = ("mode", "timing", "actor_id", "chunk_size", "seed", "rate", "diagnostics_period",
                          "realtime_priority", "demonstrations", "demonstration_noise")
#: s between checks for a model loaded on the worker thread (also checked on every tick / task_step).
RELOAD_POLL_PERIOD = 0.05


class PolicyServer(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("policy_server", **kwargs)
        self.declare_settings(PolicyServerSettings)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.core: PolicyServerCore | None = None
        self._lock = threading.RLock()  # the core: executor thread vs the realtime loop thread
        self._loader = ModelLoader(lambda: self.core.policy if self.core is not None else None)
        self._loop_thread: threading.Thread | None = None
        self._stop_loop = threading.Event()
        self._decode = wire.TaskStepDecoder()
        self._command_layout: tuple[PolicyContract, bool, Any] | None = None  # (contract, keyed, layout)
        self._preference_source = "parameter"  # who is setting the preference parameter (for the log)

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        core = PolicyServerCore(self.settings, self._send_command, self._send_heartbeat, self._send_experience,
                                lambda level, message: log_at(self.get_logger(), level, message),
                                show_preference=lambda v: self.set_parameters([Parameter("preference", value=v)]))
        core.open_model()
        own = self.own
        self._pub_command = own(self.create_publisher(Float64MultiArray, "command", wire.COMMAND_QOS))
        self._pub_heartbeat = own(self.create_publisher(Header, "heartbeat", wire.COMMAND_QOS))
        own(self.create_subscription(Float64MultiArray, "task_step", self._on_task_step, wire.SENSOR_QOS))
        own(self.create_subscription(UInt8MultiArray, "policy_snapshot", self._on_snapshot, wire.LATCHED_QOS))
        own(self.create_service(Trigger, "~/reload", self._srv_reload))
        own(self.create_subscription(Float64MultiArray, "preference", self._on_preference, wire.COMMAND_QOS))
        if core.train:
            self._experience = HeldUntilMatched(own(self.create_publisher(Float64MultiArray, "experience",
                                                                          wire.EXPERIENCE_QOS)))
            own(steady_timer(self, EXPERIENCE_FLUSH_PERIOD, self._experience.flush))
            if self.settings.timing == "lockstep" and self.settings.back_pressure:
                own(self.create_subscription(Float64MultiArray, "experience_allowance", self._on_allowance,
                                             wire.LATCHED_QOS))
        # rclpy's executor here has no guard conditions: a cheap poll picks up models loaded on the worker
        own(steady_timer(self, RELOAD_POLL_PERIOD, self._on_models_loaded))
        own(DiagnosticsPublisher(self, f"{self.get_name()}: policy", core.status,
                                 period=self.settings.diagnostics_period))
        self.core = core

    def activate(self) -> None:
        assert self.core is not None
        if self.settings.timing == "realtime":
            self.core.start_realtime()  # the period (ConfigError without a rate)
            self._stop_loop.clear()
            self._loop_thread = threading.Thread(target=self._realtime_loop, name="policy_loop", daemon=True)
        with self._lock:
            self.core.active = True
        if self._loop_thread is not None:
            self._loop_thread.start()
            self.get_logger().info(f"realtime loop at {1.0 / self.core.period:g} Hz")

    def deactivate(self) -> None:
        assert self.core is not None
        self.core.active = False
        if self._loop_thread is not None:
            self._stop_loop.set()
            self._loop_thread.join(timeout=5.0)
            self._loop_thread = None
        with self._lock:
            self.core.stop()

    def cleanup(self) -> None:  # (its entities: ManagedNode)
        if self.core is not None:
            self.core, self._decode, self._command_layout = None, wire.TaskStepDecoder(), None

    def close(self) -> None:
        super().close()
        self._loader.close()

    # --- task steps and the realtime loop ------------------------------------------------------
    def _on_task_step(self, msg: Float64MultiArray) -> None:
        received = time.monotonic()
        try:
            ts: wire.TaskStep | str = self._decode(msg)  # outside the lock: the loop never waits for it
        except (wire.WireError, IndexError, ValueError) as exc:
            ts = f"malformed task_step: {exc}"
        with self._lock:
            if self.core is None:
                return
            if isinstance(ts, str):
                self.core.hold("bad_layout", ts)
            else:
                self.core.on_step(ts, received)

    def _realtime_loop(self) -> None:
        """The realtime loop (its own thread, not an rclpy timer: the Python executor adds ~0.2 ms of
        dispatch and jitter per timer callback at 500 Hz), paced by the core's :class:`TickSchedule`."""
        core = self.core
        assert core is not None and core.schedule is not None
        schedule = core.schedule
        warning = use_fifo_scheduling(self.settings.realtime_priority)
        if warning:
            self.get_logger().warning(warning)
        while not self._stop_loop.is_set():
            now = schedule.wait()
            with self._lock:
                if not core.active:
                    break
                try:
                    core.tick(now)
                except Exception as exc:  # noqa: BLE001 - a dead loop thread in a live process is the worst case
                    # no more commands or heartbeats: end the process (a dead commander, not a silent one)
                    print(f"[FATAL] [{self.get_name()}]: realtime loop failed: {type(exc).__name__}: {exc}",
                          file=sys.stderr, flush=True)
                    os._exit(70)
            schedule.done()

    # --- what the core sends -------------------------------------------------------------------
    def _send_command(self, command: np.ndarray, contract: PolicyContract, key: tuple[int, int] | None) -> None:
        """``wire.command_message(command, action_labels, key, session)`` with the layout built once
        per contract: in lockstep the key of the answered task_step is appended
        (``wire.STEP_KEY_LABEL``), in a session its id last (``wire.SESSION_LABEL``)."""
        layout, session = self._command_layout, self.session_token
        if layout is None or layout[0] is not contract or layout[1] != (key is not None):
            labels = wire.command_labels(contract.action_labels, key is not None, session)
            layout = self._command_layout = (contract, key is not None,
                                             wire.labelled_array(np.zeros(len(labels)), labels).layout)
        data = (command.tolist() + ([wire.step_key(*key)] if key is not None else [])
                + ([session] if session is not None else []))
        self._pub_command.publish(Float64MultiArray(layout=layout[2], data=data))

    def _send_heartbeat(self, version: int) -> None:
        self._pub_heartbeat.publish(Header(stamp=self.get_clock().now().to_msg(), frame_id=str(version)))

    def _send_experience(self, table: np.ndarray, columns: tuple[str, ...]) -> None:
        self._experience.publish(wire.labelled_table(table, columns))

    # --- learner: snapshots and back-pressure --------------------------------------------------
    def _on_snapshot(self, msg: UInt8MultiArray) -> None:
        label, data = (msg.layout.dim[0].label if msg.layout.dim else "") or "no version label", bytes(msg.data)
        if not is_serving(self.core.policy if self.core is not None else None, data):
            self._loader.request(data, f"policy_snapshot ({label})")

    def _on_models_loaded(self) -> None:
        if self._loader.ready():
            with self._lock:
                if self.core is not None:
                    self.core.install_loaded(self._loader.take())

    def _on_allowance(self, msg: Float64MultiArray) -> None:
        allowance = wire.read_allowance(msg)
        if allowance is not None:
            with self._lock:
                if self.core is not None:
                    self.core.on_allowance(*allowance)

    # --- parameters, preference, reload --------------------------------------------------------
    def _on_set_parameters(self, params: list[Any]) -> SetParametersResult:
        core = self.core
        if core is None:
            return SetParametersResult(successful=True)
        for p in params:
            ok, message = True, ""
            if p.name in FIXED_WHILE_CONFIGURED:
                ok, message = False, f"parameter '{p.name}' can only change while unconfigured"
            elif p.name == "policy":
                with self._lock:
                    ok, message = core.load_file(str(p.value))
            elif p.name == "observation_timeout" and not float(p.value) > 0:
                ok, message = False, "observation_timeout must be > 0 s"
            elif p.name == "preference":
                with self._lock:
                    ok, message = core.set_preference(p.value, self._preference_source)
            if not ok:
                return SetParametersResult(successful=False, reason=message)
        return SetParametersResult(successful=True)

    def _on_preference(self, msg: Float64MultiArray) -> None:
        """``preference`` topic: becomes a ``preference`` parameter set (the same checks; the
        parameter shows the newest preference); an invalid message is logged and ignored."""
        core = self.core
        if core is None:
            return
        try:
            labelled = bool(msg.layout.dim) and bool(msg.layout.dim[0].label)
            values, labels = wire.read_labelled(msg) if labelled else (np.asarray(msg.data, np.float64), ())
        except (wire.WireError, ValueError) as exc:
            with self._lock:
                core.ignore_preference(str(exc))
            return
        with self._lock:
            eps = core.preference_message(values, labels)
        if eps is None:
            return
        self._preference_source = "topic"
        try:
            self.set_parameters([Parameter("preference", value=[float(x) for x in eps])])
        finally:
            self._preference_source = "parameter"
        # a refusal was counted and logged (rate-limited) by the core's parameter check

    def _srv_reload(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            response.success, response.message = (self.core.load_file(self.settings.policy) if self.core is not None
                                                  else (False, "not configured"))
        return response


def main(args: list[str] | None = None) -> int:
    # The realtime loop thread shares the GIL with the executor thread: bound how long it can wait
    # for it (CPython's default switch interval is 5 ms, longer than a 500 Hz period).
    sys.setswitchinterval(0.0005)
    return run_node(lambda: PolicyServer(), args)


if __name__ == "__main__":
    sys.exit(main())
