"""``learner_node``: the MO-MPO learner on the ROS graph (distributed actors, versioned snapshots).

MO-MPO (Abdolmaleki et al. 2020) in the distributed actor–learner arrangement of Acme (Hoffman et
al. 2020) and Reverb (Cassirer et al. 2021).  Everything of the run — restore, learning, updates
owed, checkpoints, policy versions, metrics, end-of-run artefacts — is the pure
:class:`~morl_robot.learning.session.LearnerSession` (its docstring describes the run directory);
this node only translates:

* ``experience`` (``wire.EXPERIENCE_QOS``) — chunks from any number of actors, decoded with
  ``wire.read_table`` / ``wire.split_experience`` → :meth:`LearnerSession.add_chunk`; a chunk that
  does not fit is rejected, counted and logged, never fatal.
* an update timer (every ``update_period`` s) → :meth:`LearnerSession.learn` for at most
  ``update_budget`` s, so ingestion keeps flowing between ticks.
* ``policy_snapshot`` (``std_msgs/UInt8MultiArray``, ``wire.LATCHED_QOS``, ``dim[0].label =
  "policy_version=<n>"``) — the ONNX bytes of every new policy version (at activation and every
  ``snapshot_every`` updates); late-joining actors get the newest one.
* ``experience_allowance`` (``wire.LATCHED_QOS``, labels ``env_steps,allowed_env_steps``) —
  :meth:`LearnerSession.allowance`; lockstep actors wait past it (back-pressure).
* ``/diagnostics`` at 1 Hz — :meth:`LearnerSession.statistics` plus rates.

Checkpoints every ``training.checkpoint_every`` env steps of the learner YAML (the one cadence
key) and at shutdown (SIGINT/SIGTERM → :meth:`LearnerNode.close`); at ``total_steps`` the node
finishes the updates owed, writes its final artefacts and exits.
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
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    ManagedNode,
    log_at,
    run_node,
    steady_timer,
)
from morl_robot.session.config import LearnerNodeSettings


class LearnerNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("learner_node", **kwargs)
        self.declare_settings(LearnerNodeSettings)  # the node's parameters (session/config.py)
        self.session: Any = None
        self.finished = self._active = False
        self._timers: list[Any] = []
        self._sub = self._pub_snapshot = self._pub_allowance = self._run_lock = self._diagnostics = None
        self._allowance_sent: tuple[Any, ...] | None = None
        self._rate_mark, self._rates = (time.monotonic(), 0, 0), (0.0, 0.0)
        self._last_rejection_time = -1e9

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        import torch

        from morl_robot.learning.run_lock import RunLock
        from morl_robot.learning.session import session_for_task

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
            normalize_observations=self.settings.observation_normalization,
            normalization_setting="parameter observation_normalization", snapshot_every=self.settings.snapshot_every,
            log=self._log, on_snapshot=self._publish_snapshot, end_of_run_plots=True,
            total_steps=self.settings.total_steps)
        c = s.contract
        s.accept_experience(wire.experience_columns(c.input_labels, c.action_labels, c.objective_names))
        self._pub_snapshot = self.create_publisher(UInt8MultiArray, "policy_snapshot", wire.LATCHED_QOS)
        self._pub_allowance = self.create_publisher(Float64MultiArray, "experience_allowance", wire.LATCHED_QOS)
        s.start()
        r = s.config.replay
        self.get_logger().info(
            f"{c.task} on {c.robot}: {len(c.observation_labels)} observations, {len(c.action_labels)} actions, "
            f"objectives {c.objective_names}; {s.config.algorithm} ({self.settings.config}), batch "
            f"{s.config.batch_size}×{s.config.sequence_length}, updates after {r.min_size_to_sample} transitions at "
            f"{r.samples_per_insert:g} samples/insert; run directory {out_dir}")

    def activate(self) -> None:
        s, self._active = self.session, True
        s.publish_policy()
        self._sub = self.create_subscription(Float64MultiArray, "experience", self._on_experience, wire.EXPERIENCE_QOS)
        self._timers.append(steady_timer(self, self.settings.update_period, self._on_tick))
        self._rate_mark = (time.monotonic(), s.counters["env_steps"], s.learner.num_updates)
        if s.draining:  # a finished run started again
            self.get_logger().info(f"the run already has {s.counters['env_steps']} of total_steps={s.total_steps} "
                                   "env steps: finishing")
        self._diagnostics = DiagnosticsPublisher(self, f"{self.get_fully_qualified_name()}: learner", self._status,
                                                 hardware_id="cpu")

    def deactivate(self) -> None:
        self._active = False
        for t in self._timers:
            self.destroy_timer(t)
        self._timers = []
        if self._sub is not None:
            self.destroy_subscription(self._sub)
        if self._diagnostics is not None:
            self._diagnostics.destroy()
        self._sub = self._diagnostics = None

    def cleanup(self) -> None:
        """Write the final artefacts (checkpoint, policy.onnx, plots) and release the learner."""
        if self.session is None:
            return
        self.session.finish("shutdown", publish=rclpy.ok(context=self.context))
        self.session.close()
        for pub in (self._pub_snapshot, self._pub_allowance):
            if pub is not None:
                self.destroy_publisher(pub)
        self._pub_snapshot = self._pub_allowance = None
        if self._run_lock is not None:
            self._run_lock.release()
        self.session = self._run_lock = None

    def close(self) -> None:
        """Process exit (SIGINT/SIGTERM, or ``total_steps`` reached): final checkpoint and artefacts."""
        if self._active:
            self.deactivate()
        self.cleanup()

    # --- messages ------------------------------------------------------------------------------
    def _on_experience(self, msg: Float64MultiArray) -> None:
        from morl_robot.learning.ingest import ExperienceError

        s = self.session
        if not self._active or self.finished or s.draining:
            return
        try:
            try:
                table, columns = wire.read_table(msg)
                s.ingest.check_columns(columns)
                chunk = wire.split_experience(table, columns)
            except (wire.WireError, ExperienceError) as exc:
                s.ingest.reject(f"malformed experience chunk: {exc}")
                raise
            s.add_chunk(chunk)  # the ingest counts its own rejections
        except MorlRobotError as exc:
            self._last_rejection_time = time.monotonic()
            self.get_logger().warning(f"rejected experience chunk #{s.ingest.rejected}: {exc}",
                                      throttle_duration_sec=5.0)
            return
        except Exception as exc:  # noqa: BLE001 - a bad chunk must never stop the learner
            s.ingest.reject(f"{type(exc).__name__}: {exc}")
            self._last_rejection_time = time.monotonic()
            self.get_logger().error(f"experience chunk failed ({type(exc).__name__}: {exc}); chunk dropped")
            return
        if s.checkpoint_due():
            s.checkpoint()
        if s.draining:
            self.get_logger().info(f"reached total_steps={s.total_steps} ({s.counters['env_steps']} env steps): "
                                   f"finishing the {s.updates_owed()} updates the samples-per-insert ratio still "
                                   "allows, then writing the final artefacts")

    def _on_tick(self) -> None:
        if not self._active or self.finished:
            return
        s = self.session
        s.learn(deadline=time.monotonic() + self.settings.update_budget)
        now = (*s.allowance(), tuple(sorted(s.acknowledged.items())))
        if now != self._allowance_sent and self._pub_allowance is not None:
            self._pub_allowance.publish(wire.allowance_message(now[0], now[1], s.acknowledged))
            self._allowance_sent = now
        if s.draining and not s.can_learn():
            s.finish("total_steps reached", publish=True)
            self.finished = True  # run_node stops spinning and calls close()

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

    def _status(self) -> tuple[str, str, dict[str, Any]]:
        s, now = self.session, time.monotonic()
        t0, s0, u0 = self._rate_mark
        if now - t0 >= 0.5:
            steps, updates = s.counters["env_steps"], s.learner.num_updates
            self._rates = ((steps - s0) / (now - t0), (updates - u0) / (now - t0))
            self._rate_mark = (now, steps, updates)
        values = {**s.statistics(), "transitions_per_s": self._rates[0], "updates_per_s": self._rates[1]}
        level, message = s.status()
        if level == "ok" and not s.draining and now - self._last_rejection_time < 10.0:
            return "warn", f"rejected experience: {s.ingest.last_rejection[:200]}", values
        return level, message, values


def main(args: list[str] | None = None) -> int:
    return run_node(LearnerNode, args)


if __name__ == "__main__":
    sys.exit(main())
