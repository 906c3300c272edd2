"""``vector_actor``: a vectorized simulated actor on the ROS graph (training only).

A thin shell around :class:`~morl_robot.acting.vector.VectorActor` (B environments, one batched
policy forward per step, the robot's safety rules in the loop); its loop runs on its own thread
while the node is active, the executor thread handles the topics.  Docs: docs/explanation/nodes.md.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from std_msgs.msg import Float64MultiArray, UInt8MultiArray

from morl_robot.acting.policy import ModelLoader, is_serving
from morl_robot.acting.vector import VectorActor, VectorActorConfig
from morl_robot.node_settings import VectorActorSettings
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    EXPERIENCE_FLUSH_PERIOD,
    DiagnosticsPublisher,
    HeldUntilMatched,
    ManagedNode,
    run_node,
    steady_timer,
)
from morl_robot.serving.runtime import OnnxPolicy

#: s the loop sleeps while it has no model or the learner's allowance is used up.
IDLE_PERIOD = 0.005


class VectorActorNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("vector_actor", **kwargs)
        self.declare_settings(VectorActorSettings)  # the node's parameters (session/config.py)
        self.core: VectorActor | None = None
        self._loader = ModelLoader(lambda: self.core.policy if self.core is not None else None)
        self._lock = threading.Lock()  # the core: loop thread vs executor (allowance, diagnostics)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._counters = {"reloads": 0, "rejected_models": 0, "back_pressure_waits": 0, "chunks": 0}
        self._last_error = ""

    def configure(self) -> None:
        cfg = VectorActorConfig(task=self.settings.task, envs=self.settings.envs,
                                actor_index=self.settings.actor_id, seed=self.settings.seed,
                                chunk_size=self.settings.chunk_size, safety=self.settings.safety,
                                task_config=self.settings.task_config, reward_machine=self.settings.reward_machine,
                                demonstrations=self.settings.demonstrations,
                                demonstration_noise=self.settings.demonstration_noise)
        experience = HeldUntilMatched(self.own(self.create_publisher(Float64MultiArray, "experience",
                                                                     wire.EXPERIENCE_QOS)))
        self._pub_events = self.own(self.create_publisher(DiagnosticStatus, "safety/violations", wire.EVENT_QOS))
        self.core = VectorActor(cfg, lambda table, columns: self._emit(experience, table, columns))
        if self.settings.policy:
            self._install(OnnxPolicy.from_file(self.settings.policy), f"file {self.settings.policy}")
        self.own(steady_timer(self, EXPERIENCE_FLUSH_PERIOD, experience.flush))
        self.own(self.create_subscription(UInt8MultiArray, "policy_snapshot", self._on_snapshot, wire.LATCHED_QOS))
        self.own(self.create_subscription(Float64MultiArray, "experience_allowance", self._on_allowance,
                                          wire.LATCHED_QOS))
        self.own(DiagnosticsPublisher(self, f"{self.get_name()}: vector actor", self._status,
                                      period=self.settings.diagnostics_period))
        self.get_logger().info(f"{cfg.envs} {cfg.task} environments, actor ids {cfg.actor_index * cfg.envs}.."
                               f"{cfg.actor_index * cfg.envs + cfg.envs - 1}")

    def activate(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="vector_actor_loop", daemon=True)
        self._thread.start()

    def deactivate(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            self._thread = None
        if self.core is not None:
            with self._lock:
                self.core.flush()

    def cleanup(self) -> None:  # (its entities: ManagedNode)
        if self.core is not None:
            self.core.close()
            self.core = None

    def close(self) -> None:
        super().close()
        self._loader.close()

    # --- loop --------------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            self._run_loop()
        except Exception as exc:  # noqa: BLE001 - a dead loop thread in a live process would look like a slow actor
            print(f"[FATAL] [{self.get_name()}]: actor loop failed: {type(exc).__name__}: {exc}", file=sys.stderr,
                  flush=True)
            os._exit(70)

    def _run_loop(self) -> None:
        core, waiting, cloning = self.core, False, False
        assert core is not None
        back_pressure = self.settings.back_pressure
        while not self._stop.is_set():
            for loaded in (self._loader.take() if self._loader.ready() else ()):
                if loaded.policy is None:
                    self._reject(loaded.source, loaded.error)
                else:
                    with self._lock:
                        self._install(loaded.policy, loaded.source)
            with self._lock:
                if core.awaiting_clone() != cloning:
                    cloning = not cloning
                    if cloning:
                        self.get_logger().info(f"{core.counters['demonstration_episodes']} demonstration episodes "
                                               "acted; waiting for the learner's cloned policy (newer than version "
                                               f"{core.clone_after})")
                idle = core.policy is None or cloning or (back_pressure and core.must_wait())
                if idle and core.policy is not None and not cloning and not waiting:
                    self._counters["back_pressure_waits"] += 1
                waiting = idle and not cloning
                if not idle:
                    core.step()
                    self._publish_violations(core)
            if idle:
                time.sleep(IDLE_PERIOD)

    def _emit(self, pub: Any, table: Any, columns: tuple[str, ...]) -> None:
        pub.publish(wire.labelled_table(table, columns))
        self._counters["chunks"] += 1

    def _publish_violations(self, core: VectorActor) -> None:
        for i, shield in enumerate(core.shields):
            while shield.recent:
                v = shield.recent.popleft()
                self._pub_events.publish(DiagnosticStatus(name=v.rule, message=v.describe(), values=[
                    KeyValue(key="rule", value=v.rule), KeyValue(key="level", value=v.level),
                    KeyValue(key="key", value=v.key), KeyValue(key="env", value=str(i))]))

    # --- models and back-pressure ------------------------------------------------------------
    def _on_snapshot(self, msg: UInt8MultiArray) -> None:
        data = bytes(msg.data)
        if not is_serving(self.core.policy if self.core is not None else None, data):
            label = msg.layout.dim[0].label if msg.layout.dim else ""
            self._loader.request(data, f"policy_snapshot ({label or 'no version label'})")

    def _install(self, candidate: OnnxPolicy, source: str) -> None:
        assert self.core is not None
        old = self.core.policy.version if self.core.policy is not None else None
        why = self.core.install(candidate)
        if why:
            self._reject(source, why)
            return
        self._counters["reloads"] += 1
        self.get_logger().info(f"policy version {candidate.version} from {source} now acting (was {old})")

    def _reject(self, source: str, why: str) -> None:
        self._counters["rejected_models"] += 1
        self._last_error = f"rejected model from {source}: {why}"
        self.get_logger().error(self._last_error)

    def _on_allowance(self, msg: Float64MultiArray) -> None:
        allowance = wire.read_allowance(msg)
        if allowance is not None and self.core is not None:
            received, allowed, acks = allowance
            with self._lock:
                self.core.allowance.update(received, allowed, self.core.sent, self.core.acknowledged(acks))

    def _status(self) -> tuple[str, str, dict[str, Any]]:
        core = self.core
        if core is None:
            return "warn", "not configured", {}
        values: dict[str, Any] = {**core.counters, **self._counters, "envs": len(core.runners),
                                  "transitions": core.sent,
                                  "policy_version": core.policy.version if core.policy is not None else -1,
                                  "last_error": self._last_error}
        if core.policy is None:
            return "warn", "no policy yet (waiting for policy_snapshot)", values
        return "ok", f"acting with policy version {core.policy.version} in {len(core.runners)} environments", values


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: VectorActorNode(), args)


if __name__ == "__main__":
    sys.exit(main())
