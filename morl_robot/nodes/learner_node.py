"""``learner_node``: the MO-MPO learner on the ROS graph (distributed actors, versioned snapshots).

Everything of the run (restore, learning, updates owed, checkpoints, policy versions, metrics,
end-of-run artefacts) is the pure learner session of :mod:`morl_robot.training`; this node only
translates.  Its topics, checkpoints, exit and error behaviour: docs/explanation/nodes.md.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import rclpy
from std_msgs.msg import (
    Float64MultiArray,
    MultiArrayDimension,
    MultiArrayLayout,
    UInt8MultiArray,
)

from morl_robot.errors import ConfigError, MorlRobotError
from morl_robot.node_settings import LearnerNodeSettings
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    ManagedNode,
    log_at,
    run_node,
    steady_timer,
)


class LearnerNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("learner_node", **kwargs)
        self.declare_settings(LearnerNodeSettings)  # the node's parameters (session/config.py)
        self.session: Any = None
        self.finished = self._active = False
        self._pub_snapshot = self._pub_allowance = self._run_lock = None
        self.failure: Exception | None = None  # what ended the run early (raised again by close: exit status)

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        import torch

        from morl_robot.learning.run_lock import RunLock
        from morl_robot.training.session import session_for_task

        torch.set_num_threads(1)
        task, out = self.settings.task, self.settings.out_dir
        if not task:
            raise ConfigError("parameter task: a task name is needed (e.g. sawyer_peg_in_hole)")
        if not out:
            raise ConfigError("parameter out_dir: a run directory is needed (checkpoints, metrics, policy.onnx)")
        out_dir = Path(out).expanduser().resolve()
        self._run_lock = RunLock.acquire(out_dir, "learner_node", allow_parent=True)  # one writer per run
        if self._run_lock.stale:
            self.get_logger().warning(f"took over the stale lock of {self._run_lock.stale} on {out_dir}")
        s = self.session = session_for_task(
            task, self.settings.task_config, self.settings.config, seed=self.settings.seed, run_dir=out_dir,
            reward_machine=self.settings.reward_machine,
            normalize_observations=self.settings.observation_normalization,
            normalization_setting="parameter observation_normalization", snapshot_every=self.settings.snapshot_every,
            log=self._log, on_snapshot=self._publish_snapshot, on_allowance=self._publish_allowance,
            end_of_run_plots=True, total_steps=self.settings.total_steps)
        c = s.contract
        s.accept_experience(wire.experience_columns(c.input_labels, c.action_labels, c.objective_names,
                                                    wire.machine_columns(s.propositions)))
        self._pub_snapshot = self.own(self.create_publisher(UInt8MultiArray, "policy_snapshot", wire.LATCHED_QOS))
        self._pub_allowance = self.own(self.create_publisher(Float64MultiArray, "experience_allowance",
                                                             wire.LATCHED_QOS))
        s.start()
        if self.settings.recordings and s.resumed_from is None:  # train --from-recording … --online
            from morl_robot.training.offline import seed_replay

            seed_replay(s, task, self.settings.task_config or None, self.settings.recordings.split(","),
                        report=self.get_logger().info)
        self.get_logger().info(s.describe(config_source=self.settings.config))

    def activate(self) -> None:
        self._active = True
        self.session.begin_serving()
        self.own(self.create_subscription(Float64MultiArray, "experience", self._on_experience, wire.EXPERIENCE_QOS),
                 "deactivate")
        self.own(steady_timer(self, self.settings.update_period, self._on_tick), "deactivate")
        self.own(DiagnosticsPublisher(self, f"{self.get_fully_qualified_name()}: learner", self.session.diagnostics,
                                      hardware_id="cpu"), "deactivate")

    def deactivate(self) -> None:  # (its subscription and timers: ManagedNode)
        self._active = False

    def cleanup(self) -> None:
        """Write the final artefacts (checkpoint, policy.onnx, plots; the last snapshot while its
        publisher lives: ManagedNode destroys it after this) and release the learner and the run
        directory; raises the first artefact that could not be written (nothing is written if the
        session never started: a refused resume)."""
        try:
            if self.session is not None:
                self.session.finish("shutdown", publish=rclpy.ok(context=self.context))
        finally:
            if self.session is not None:
                self.session.close()
            self._pub_snapshot = self._pub_allowance = None
            if self._run_lock is not None:
                self._run_lock.release()
            self.session = self._run_lock = None

    def close(self) -> None:
        """Process exit (SIGINT/SIGTERM, or ``total_steps`` reached): final checkpoint and artefacts.
        Raises the failure that ended the run, or else the first artefact that could not be
        written: the process exits non-zero."""
        try:
            super().close()
        except MorlRobotError as exc:
            self.failure = self.failure or exc
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    # --- messages ------------------------------------------------------------------------------
    def _on_experience(self, msg: Float64MultiArray) -> None:
        if self._active and not self.finished:
            try:
                self.session.receive(lambda: wire.read_table(msg), wire.split_experience)
            except MorlRobotError as exc:  # e.g. episodes.csv or a checkpoint cannot be written
                self._fail(exc)

    def _on_tick(self) -> None:
        if self._active and not self.finished:
            # finished: run_node stops spinning and calls close()
            try:
                self.finished = self.session.tick(deadline=time.monotonic() + self.settings.update_budget)
            except MorlRobotError as exc:  # e.g. metrics.csv or policy.onnx cannot be written
                self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        """End the run: log ``exc`` as one error line, stop spinning; :meth:`close` raises it again
        (after writing what can still be written) so the process exits non-zero."""
        self.failure = exc
        self.finished = True
        self._log("error", str(exc))

    def _publish_allowance(self, allowance: tuple[int, int, dict[int, int]]) -> None:
        if self._pub_allowance is not None:
            self._pub_allowance.publish(wire.allowance_message(*allowance))

    def _publish_snapshot(self, version: int, data: bytes) -> None:
        msg = UInt8MultiArray()
        msg.layout = MultiArrayLayout(dim=[MultiArrayDimension(label=f"policy_version={version}", size=len(data),
                                                               stride=len(data))], data_offset=0)
        msg.data = data
        if self._pub_snapshot is not None and rclpy.ok(context=self.context):
            self._pub_snapshot.publish(msg)

    def _log(self, level: str, message: str) -> None:
        """Log through ROS while the context lives; at process exit (after SIGINT) to stderr."""
        if rclpy.ok(context=self.context):
            log_at(self.get_logger(), level, message)
        else:
            print(f"[{level.upper()}] [{self.get_fully_qualified_name()}]: {message}", file=sys.stderr, flush=True)


def main(args: list[str] | None = None) -> int:
    return run_node(LearnerNode, args)


if __name__ == "__main__":
    sys.exit(main())
