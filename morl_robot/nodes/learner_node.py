"""``learner_node``: the MO-MPO learner on the ROS graph (distributed actors, versioned snapshots).

MO-MPO (Abdolmaleki et al. 2020, "A Distributional View on Multi-Objective Policy Optimization")
in the distributed actor–learner arrangement of Acme (Hoffman et al. 2020) and Reverb (Cassirer et
al. 2021): actors send experience to a replay, the learner samples Retrace sequences from it and
broadcasts its policy.  This node is a thin wrapper around the pure pieces of
:mod:`morl_robot.learning`:

* ``experience`` (``wire.EXPERIENCE_QOS``) — chunks from any number of actors (``policy_server``
  in mode ``train``, on this machine or others on the same ``ROS_DOMAIN_ID``) go through
  :class:`~morl_robot.learning.ingest.ExperienceIngest` into a
  :class:`~morl_robot.learning.replay.SequenceReplay`; a chunk that does not fit the task is
  rejected, counted and logged, never fatal.
* an update timer runs :meth:`~morl_robot.learning.learner.MOMPOLearner.update` while the
  :class:`~morl_robot.learning.replay.SampleToInsertRatio` allows, for at most ``update_budget``
  seconds per tick, so ingestion keeps flowing between ticks.  With ``observation_normalization``
  the sampled observations are normalised with the current
  :class:`~morl_robot.learning.normalization.RunningNormalizer` statistics (the replay keeps raw
  observations; the same statistics are baked into every exported policy).  ε-conditioned MO-MPO
  (``preferences:`` in the learner config): the actors' ``obs/…`` columns carry the K preference
  features after the O observations (``PolicyContract.input_labels``), the replay holds O + K, only
  the O observations are normalised, and snapshots export with a ``preference`` input.
* ``policy_snapshot`` (``std_msgs/UInt8MultiArray``, ``wire.LATCHED_QOS``, ``dim[0].label =
  "policy_version=<n>"``) — ONNX bytes from :func:`~morl_robot.serving.export.export_policy` at
  activation and every ``snapshot_every`` updates; late-joining actors get the newest one.
* ``experience_allowance`` (``wire.LATCHED_QOS``, labels ``env_steps,allowed_env_steps``): the
  transitions received and the number the samples-per-insert ratio accepts now
  (:meth:`~morl_robot.learning.replay.SampleToInsertRatio.max_inserts`, capped at ``total_steps``);
  lockstep actors wait past it (back-pressure), so acting keeps pace with learning.
* ``/diagnostics`` at 1 Hz: ``env_steps``, ``updates``, ``policy_version``, ``episodes``,
  ``transitions_per_s``, ``updates_per_s``, ``replay_size``, ``rejected_chunks``,
  ``actor/<id>/transitions`` (and ``…/episodes``, ``…/policy_version``), ``return/<objective>``
  of the newest finished episode.

Run directory (``out_dir``): ``checkpoints/ckpt-<env_steps>.pt`` every ``checkpoint_every`` env
steps and at shutdown (SIGINT/SIGTERM → :meth:`LearnerNode.close`), ``metrics.csv`` (learner
statistics every ``training.log_every`` updates), ``episodes.csv`` (one row per finished actor
episode), ``tb/``, ``snapshots/policy_<env_steps>.onnx`` (the initial policy and the policy of
every checkpoint, for learning curves of deterministic evaluations); when ``total_steps`` is reached (the node then exits) or at a clean shutdown
also ``policy.onnx`` and ``plots/``.  On start the newest readable checkpoint is resumed (an
unreadable newer one is logged and moved aside to ``*.corrupt``).  Policy versions: a checkpoint
always holds the weights of its ``policy_version`` (the version is bumped first if the policy
changed since the last snapshot), so a resumed learner re-publishes exactly that model.
"""
from __future__ import annotations

import copy
import dataclasses
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
import torch
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

#: the end-of-run Pareto plot shows the returns of this many newest finished episodes.
RECENT_EPISODES = 200


def _to_numpy(obj: Any) -> Any:
    """Tensors (as checkpoints store numpy arrays) back to numpy, recursively."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    return obj


class LearnerNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("learner_node", **kwargs)
        self.declare_settings(LearnerNodeSettings)
        self.finished = False
        self._configured = False
        self._active = False
        self._finalized = False
        self._loop_timers: list[Any] = []
        self._sub: Any = None
        self._pub_snapshot: Any = None
        self._pub_allowance: Any = None
        self._run_lock: Any = None
        self._diagnostics: DiagnosticsPublisher | None = None
        self._last_returns: np.ndarray | None = None
        self._rate_mark = (time.monotonic(), 0, 0)
        self._rates = (0.0, 0.0)
        self._last_rejection_time = -1e9
        self._diverged = ""
        self._good_state: dict[str, Any] | None = None  # learner state of the newest snapshot
        self._draining = False  # total_steps reached: no more experience, finishing the owed updates
        self._incomplete_episodes = 0

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        from morl_robot.envs.mo_env import make_sim_robot
        from morl_robot.learning.config import load_learner_config
        from morl_robot.learning.ingest import ExperienceIngest
        from morl_robot.learning.learner import MOMPOLearner
        from morl_robot.learning.metrics import MetricsLogger
        from morl_robot.learning.networks import ActionSpec
        from morl_robot.learning.normalization import RunningNormalizer
        from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
        from morl_robot.resources import resolve_config
        from morl_robot.serving.contract import contract_for_task
        from morl_robot.tasks.registry import load_task

        torch.set_num_threads(1)
        task_name, out = self.settings.task, self.settings.out_dir
        if not task_name:
            raise ConfigError("parameter task: a task name is needed (e.g. sawyer_peg_in_hole)")
        if not out:
            raise ConfigError("parameter out_dir: a run directory is needed (checkpoints, metrics, policy.onnx)")
        self.out_dir = Path(out).expanduser().resolve()
        self.checkpoint_dir = self.out_dir / "checkpoints"
        seed = self.settings.seed
        from morl_robot.learning.run_lock import RunLock

        self._run_lock = RunLock.acquire(self.out_dir, "learner_node", allow_parent=True)  # one writer per run
        if self._run_lock.stale:
            self.get_logger().warning(f"took over the stale lock of {self._run_lock.stale} on {self.out_dir}")

        config_file = resolve_config("learner", self.settings.config)
        config = load_learner_config(config_file)
        task = load_task(task_name, self.settings.task_config or None)
        objectives = list(task.objective_names)
        if config.objective_names and list(config.objective_names) != objectives:
            raise ConfigError(f"{config_file}: key 'objective_names': {config.objective_names} differ from the "
                              f"objectives of task '{task_name}' {objectives} (leave it empty to use the task's)")
        config.check_objectives(len(objectives), str(config_file))
        self.config = dataclasses.replace(config, objective_names=objectives)
        robot = make_sim_robot(task)  # only for the spec: labels, units, action bounds
        try:
            self.contract = contract_for_task(task, robot, self.config, policy_version=0, run_id=uuid.uuid4().hex[:12])
        finally:
            robot.close()
        c = self.contract
        obs_dim, act_dim, k = len(c.observation_labels), len(c.action_labels), len(c.objective_names)
        rcfg = self.config.replay
        self.learner = MOMPOLearner(obs_dim, ActionSpec.box(act_dim), k, self.config, seed=seed)
        # ε-conditioned: the actors' experience carries the preference features after the observation
        self.replay = SequenceReplay(rcfg.capacity, self.learner.input_dim, act_dim, k, seed=seed + 3)
        self.limiter = SampleToInsertRatio(rcfg.samples_per_insert, rcfg.min_size_to_sample, rcfg.error_buffer)
        self.normalizer = RunningNormalizer(obs_dim) if self.settings.observation_normalization else None
        self.columns = wire.experience_columns(c.input_labels, c.action_labels, c.objective_names)
        self.ingest = ExperienceIngest(self.replay, self.columns, c.objective_names, self.normalizer)
        self.counters = {"env_steps": 0, "updates": 0, "episodes": 0, "policy_version": 0, "chunks": 0}
        self._resume()
        self._snapshot_updates = self.learner.num_updates  # the checkpoint holds the weights of its version
        self._last_checkpoint_steps = self.counters["env_steps"]
        self.logger = MetricsLogger(self.out_dir, self.config.training.tensorboard,
                                    resume_step=self.counters["env_steps"])
        self._pub_snapshot = self.create_publisher(UInt8MultiArray, "policy_snapshot", wire.LATCHED_QOS)
        self._pub_allowance = self.create_publisher(Float64MultiArray, "experience_allowance", wire.LATCHED_QOS)
        self._allowance_sent: tuple[int, int] | None = None
        self._configured, self._finalized = True, False
        self.get_logger().info(
            f"{c.task} on {c.robot}: {obs_dim} observations, {act_dim} actions, objectives {c.objective_names}; "
            f"{self.config.algorithm} ({config_file.name}), batch {self.config.batch_size}×{self.config.sequence_length}, "
            f"updates after {rcfg.min_size_to_sample} transitions at {rcfg.samples_per_insert:g} samples/insert; "
            f"run directory {self.out_dir}")

    def _resume(self) -> None:
        """Load the newest readable checkpoint of ``out_dir/checkpoints`` (unreadable newer ones are
        logged and renamed ``*.corrupt`` so they cannot shadow later checkpoints)."""
        from morl_robot.learning.checkpoint import (
            CheckpointError,
            list_checkpoints,
            load_checkpoint,
        )
        from morl_robot.serving.contract import ContractError, PolicyContract
        from morl_robot.serving.contract import replace as replace_contract

        found, skipped = None, 0
        for path in reversed(list_checkpoints(self.checkpoint_dir)):
            try:
                found = path, load_checkpoint(path)
                break
            except CheckpointError as exc:
                aside = path.with_name(path.name + ".corrupt")
                try:
                    os.replace(path, aside)
                    moved = f"; moved aside to {aside.name}"
                except OSError as move_exc:
                    moved = f"; could not move it aside ({move_exc})"
                self.get_logger().warning(f"skipping unreadable checkpoint: {exc}{moved}")
                skipped += 1
        if found is None:
            if skipped:
                self.get_logger().warning(f"no readable checkpoint in {self.checkpoint_dir}: starting a new run")
            return
        path, payload = found
        try:
            saved = PolicyContract.from_metadata(dict(payload["contract"]))
            saved.check_compatible(self.contract)
        except (KeyError, ContractError) as exc:
            raise ContractError(f"{path} cannot be resumed for task '{self.contract.task}': {exc}") from None
        had_normalizer = payload.get("normalizer") is not None
        if had_normalizer != (self.normalizer is not None):
            raise ConfigError(f"parameter observation_normalization: {path} was trained with it "
                              f"{'on' if had_normalizer else 'off'}; resume with the same setting")
        try:
            self.learner.load_state_dict(payload["learner"])
            if self.normalizer is not None:
                self.normalizer.load_state_dict(_to_numpy(payload["normalizer"]))
            if payload.get("replay") is not None:
                self.replay.load_state_dict(payload["replay"])
                self.limiter.load_state_dict(payload["limiter"])
            if payload.get("ingest") is not None:
                self.ingest.load_state_dict(payload["ingest"])
            torch.set_rng_state(payload["rng"]["torch"])
        except (KeyError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{path} does not fit this learner (config {self.settings.config}): {exc}") from None
        self.counters = {key: int(payload["counters"].get(key, 0)) for key in self.counters}
        self.contract = replace_contract(self.contract, run_id=saved.run_id or self.contract.run_id)
        replay_note = (f", replay of {len(self.replay)} transitions restored" if payload.get("replay") is not None
                       else ", replay empty (learning resumes after min_size_to_sample new transitions)")
        self.get_logger().info(
            f"resumed from {path} at {self.counters['env_steps']} env steps (update {self.learner.num_updates}, "
            f"policy version {self.counters['policy_version']}, run {self.contract.run_id}){replay_note}")

    def activate(self) -> None:
        self._active = True
        if self.counters["policy_version"] == 0:
            self.counters["policy_version"] = 1
        # re-activation after updates: the weights changed since the last snapshot, so a new version
        self._publish_snapshot(bump=self.learner.num_updates != self._snapshot_updates)
        if self.learner.num_updates == 0 and self.counters["env_steps"] == 0:
            self._keep_snapshot()  # the initial policy: the "before" of every learning curve
        self._sub = self.create_subscription(Float64MultiArray, "experience", self._on_experience,
                                             wire.EXPERIENCE_QOS)
        self._loop_timers.append(steady_timer(self, self.settings.update_period, self._on_tick))
        self._rate_mark = (time.monotonic(), self.counters["env_steps"], self.learner.num_updates)
        total = self.settings.total_steps
        if total and self.counters["env_steps"] >= total:  # a finished run started again
            self._draining = True
            self.get_logger().info(f"the run already has {self.counters['env_steps']} of total_steps={total} "
                                   "env steps: finishing")
        self._diagnostics = DiagnosticsPublisher(self, f"{self.get_fully_qualified_name()}: learner", self._status,
                                                 hardware_id="cpu")

    def deactivate(self) -> None:
        self._active = False
        for t in self._loop_timers:
            self.destroy_timer(t)
        self._loop_timers = []
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        if self._diagnostics is not None:
            self._diagnostics.destroy()
            self._diagnostics = None

    def cleanup(self) -> None:
        """Write the final artefacts (checkpoint, policy.onnx, plots) and release the learner."""
        if not self._configured:
            return
        self._finalize("shutdown")
        self.logger.close()
        if self._pub_snapshot is not None:
            self.destroy_publisher(self._pub_snapshot)
            self._pub_snapshot = None
        if self._pub_allowance is not None:
            self.destroy_publisher(self._pub_allowance)
            self._pub_allowance = None
        if self._run_lock is not None:
            self._run_lock.release()
            self._run_lock = None
        self._configured = False

    def close(self) -> None:
        """Process exit (SIGINT/SIGTERM, or ``total_steps`` reached): final checkpoint and artefacts."""
        if self._active:
            self.deactivate()
        self.cleanup()

    # --- experience ----------------------------------------------------------------------------
    def _on_experience(self, msg: Float64MultiArray) -> None:
        from morl_robot.learning.ingest import ExperienceError

        if not self._active or self.finished or self._draining:
            return
        try:
            try:
                table, columns = wire.read_table(msg)
                self.ingest.check_columns(columns)
                chunk = wire.split_experience(table, columns)
            except (wire.WireError, ExperienceError) as exc:
                self.ingest.reject(f"malformed experience chunk: {exc}")
                raise
            result = self.ingest.add(chunk)  # counts its own rejections
        except MorlRobotError as exc:
            self._last_rejection_time = time.monotonic()
            self.get_logger().warning(f"rejected experience chunk #{self.ingest.rejected}: {exc}",
                                      throttle_duration_sec=5.0)
            return
        except Exception as exc:  # noqa: BLE001 - a bad chunk must never stop the learner
            self.ingest.reject(f"{type(exc).__name__}: {exc}")
            self._last_rejection_time = time.monotonic()
            self.get_logger().error(f"experience chunk failed ({type(exc).__name__}: {exc}); chunk dropped")
            return
        self.limiter.insert(result.transitions)
        self.counters["env_steps"] += result.transitions
        self.counters["chunks"] += 1
        names = self.contract.objective_names
        for rec in result.episodes:
            self.counters["episodes"] += 1
            if not rec.complete:
                self._incomplete_episodes += 1
                continue  # its beginning was not seen: its return would be wrong
            self._last_returns = rec.returns
            self.logger.log_episode(
                self.counters["env_steps"],
                {f"return/{n}": float(v) for n, v in zip(names, rec.returns)},
                "terminated" if rec.terminated else "truncated",
                {"length": rec.length, "actor": rec.actor, "policy_version": rec.policy_version})
        every = self.settings.checkpoint_every
        steps = self.counters["env_steps"]
        if every and steps // every > self._last_checkpoint_steps // every:
            self._checkpoint()
        total = self.settings.total_steps
        if total and steps >= total:
            self._draining = True
            self.get_logger().info(f"reached total_steps={total} ({steps} env steps): finishing the "
                                   f"{self._updates_owed()} updates the samples-per-insert ratio still allows, "
                                   "then writing the final artefacts")

    # --- learning ------------------------------------------------------------------------------
    def _updates_owed(self) -> int:
        """Updates the :class:`SampleToInsertRatio` allows now (the learner's backlog)."""
        lim = self.limiter
        if lim.inserts < lim.min_size_to_sample:
            return 0
        room = lim.inserts * lim.samples_per_insert - lim.samples - lim.min_diff
        return max(0, int(room // self.config.batch_size))

    def _publish_allowance(self) -> None:
        """Tell the actors how many transitions the samples-per-insert ratio accepts now
        (``experience_allowance``); actors in lockstep wait past it, so acting keeps pace with
        learning instead of running ahead (Reverb's rate limiter blocks inserts the same way)."""
        total = self.settings.total_steps
        received = self.counters["env_steps"]  # the limiter counts only this process's inserts (resumes)
        allowed = received + self.limiter.max_inserts() - self.limiter.inserts  # may be < received
        if total:
            allowed = min(allowed, total)
        now = (received, allowed)
        if now != self._allowance_sent and self._pub_allowance is not None:
            self._pub_allowance.publish(wire.labelled_array(now, wire.ALLOWANCE_LABELS))
            self._allowance_sent = now

    def _on_tick(self) -> None:
        if not self._active or self.finished:
            return
        if not self._diverged:
            self._learn()
        self._publish_allowance()
        if self._draining and (self._diverged or not self.limiter.can_sample(self.config.batch_size)):
            self._finalize("total_steps reached")
            self.finished = True  # run_node stops spinning and calls close()

    def _learn(self) -> None:
        """Learner updates while the ratio allows, for at most ``update_budget`` seconds."""
        cfg = self.config
        obs_dim = len(self.contract.observation_labels)
        deadline = time.monotonic() + self.settings.update_budget
        while self.limiter.can_sample(cfg.batch_size) and time.monotonic() < deadline:
            batch = self.replay.sample(cfg.batch_size, cfg.sequence_length)
            self.limiter.sample(cfg.batch_size)
            if self.normalizer is not None:  # [T+1, B, O] raw → normalised with the current statistics
                obs = batch.observations.astype(np.float32)  # ε-conditioned: [.., O + K], features kept
                obs[..., :obs_dim] = self.normalizer.normalize(batch.observations[..., :obs_dim])
                batch = dataclasses.replace(batch, observations=obs)
            stats = self.learner.update(batch)
            self.counters["updates"] = self.learner.num_updates
            bad = [key for key, v in stats.items() if not np.isfinite(v)]
            if bad:
                self._diverged = f"non-finite learner statistics at update {self.learner.num_updates}: {bad[:4]}"
                self.learner.load_state_dict(self._good_state)  # roll back to the published snapshot
                self.counters["updates"] = self._snapshot_updates = self.learner.num_updates
                self.get_logger().error(f"{self._diverged}; rolled back to the state of policy version "
                                        f"{self.counters['policy_version']} (update {self.learner.num_updates}) "
                                        "and stopped updating")
                return
            if self.learner.num_updates % cfg.training.log_every == 0:
                extra = {"policy_version": float(self.counters["policy_version"]), "replay_size": float(len(self.replay))}
                extra.update({f"actor/{a}/transitions": float(n["transitions"])
                              for a, n in self.ingest.actor_counts().items()})
                self.logger.log_update(self.learner.num_updates, self.counters["env_steps"], {**stats, **extra})
            if self.learner.num_updates - self._snapshot_updates >= self.settings.snapshot_every:
                self._publish_snapshot(bump=True)

    def _publish_snapshot(self, bump: bool, publish: bool = True) -> bytes | None:
        """Export the current policy as the next (``bump``) or current version and publish it."""
        from morl_robot.serving.contract import replace as replace_contract
        from morl_robot.serving.export import export_policy

        if bump:
            self.counters["policy_version"] += 1
        self._snapshot_updates = self.learner.num_updates
        self._good_state = copy.deepcopy(self.learner.state_dict())  # what a divergence rolls back to
        if not publish:
            return None
        version = self.counters["policy_version"]
        data = export_policy(self.learner.policy, replace_contract(self.contract, policy_version=version),
                             normalizer=self.normalizer)
        msg = UInt8MultiArray()
        msg.layout = MultiArrayLayout(dim=[MultiArrayDimension(label=f"policy_version={version}", size=len(data),
                                                               stride=len(data))], data_offset=0)
        msg.data = data
        if self._pub_snapshot is not None and rclpy.ok(context=self.context):
            self._pub_snapshot.publish(msg)
        return data

    def _checkpoint(self, publish: bool = True) -> Path:
        from morl_robot.learning.checkpoint import save_checkpoint
        from morl_robot.learning.config import config_to_dict

        if self.learner.num_updates != self._snapshot_updates:
            self._publish_snapshot(bump=True, publish=publish)  # the checkpoint's weights get their own version
        self.counters["updates"] = self.learner.num_updates
        tcfg = self.config.training
        payload = {
            "learner": self.learner.state_dict(),
            "config": config_to_dict(self.config),
            "contract": self.contract.to_metadata(),
            "normalizer": self.normalizer.state_dict() if self.normalizer is not None else None,
            "counters": dict(self.counters),
            "limiter": self.limiter.state_dict(),
            "replay": self.replay.state_dict() if tcfg.checkpoint_replay else None,
            "rng": {"torch": torch.get_rng_state()},
            "ingest": self.ingest.state_dict(),
        }
        path = save_checkpoint(self.checkpoint_dir, self.counters["env_steps"], payload, keep=tcfg.keep_checkpoints)
        self._last_checkpoint_steps = self.counters["env_steps"]
        self._keep_snapshot()
        self.logger.flush()
        self._log("info", f"checkpoint {path.name}: {self.counters['env_steps']} env steps, "
                  f"{self.learner.num_updates} updates, policy version {self.counters['policy_version']}")
        return path

    def _keep_snapshot(self) -> None:
        """Keep the current policy as ``snapshots/policy_<env_steps>.onnx`` (at activation of a fresh
        run and at every checkpoint): the learning curve of deterministic evaluations is measured on
        these files afterwards (:func:`morl_robot.evaluation.protocol.evaluation_curve`)."""
        from morl_robot.serving.contract import replace as replace_contract
        from morl_robot.serving.export import export_policy

        path = self.out_dir / "snapshots" / f"policy_{self.counters['env_steps']:08d}.onnx"
        contract = replace_contract(self.contract, policy_version=self.counters["policy_version"])
        export_policy(self.learner.policy, contract, path, normalizer=self.normalizer)

    def _log(self, level: str, message: str) -> None:
        """Log through ROS while the context lives; at process exit (after SIGINT) to stderr."""
        if rclpy.ok(context=self.context):
            log_at(self.get_logger(), level, message)
        else:
            print(f"[{level.upper()}] [{self.get_fully_qualified_name()}]: {message}", file=sys.stderr, flush=True)

    def _finalize(self, reason: str) -> None:
        """Final checkpoint, ``policy.onnx`` and plots (once)."""
        if self._finalized or not self._configured:
            return
        self._finalized = True
        steps = [("checkpoint", lambda: self._checkpoint(publish=rclpy.ok(context=self.context))),
                 ("policy.onnx", self._export_final), ("plots", self._plots)]
        for what, fn in steps:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - write whatever else can be written
                self._log("error", f"{reason}: could not write the {what}: {type(exc).__name__}: {exc}")
        self._log("info", f"{reason}: final artefacts in {self.out_dir}")

    def _export_final(self) -> None:
        from morl_robot.serving.contract import replace as replace_contract
        from morl_robot.serving.export import export_policy

        contract = replace_contract(self.contract, policy_version=self.counters["policy_version"])
        export_policy(self.learner.policy, contract, self.out_dir / "policy.onnx", normalizer=self.normalizer)

    def _plots(self) -> None:
        from morl_robot.evaluation.plots import (
            plot_learning_curves,
            plot_pareto_fronts,
            read_metrics_csv,
        )

        episodes_csv = self.out_dir / "episodes.csv"
        if not episodes_csv.exists():
            self._log("info", "no finished episode yet: no learning-curve plot")
            return
        names = self.contract.objective_names
        columns = [f"return/{n}" for n in names]
        plots = self.out_dir / "plots"
        plot_learning_curves(episodes_csv, plots / "learning_curves.png", step_column="env_steps",
                             return_columns=columns,
                             title="returns of finished training episodes (exploring policy, all actors)")
        if len(names) >= 2:
            data = read_metrics_csv(episodes_csv)
            points = np.stack([data[c] for c in columns], axis=1)[-RECENT_EPISODES:]
            points = points[np.all(np.isfinite(points), axis=1)]
            if len(points):
                plot_pareto_fronts({f"training episodes (last {len(points)})": points}, plots / "pareto_front.png",
                                   objective_names=names,
                                   title="per-objective returns of the exploring policy's last training episodes "
                                         "(not an evaluation of the final policy)")

    # --- diagnostics ---------------------------------------------------------------------------
    def _status(self) -> tuple[str, str, dict[str, Any]]:
        now = time.monotonic()
        t0, s0, u0 = self._rate_mark
        if now - t0 >= 0.5:
            dt = now - t0
            self._rates = ((self.counters["env_steps"] - s0) / dt, (self.learner.num_updates - u0) / dt)
            self._rate_mark = (now, self.counters["env_steps"], self.learner.num_updates)
        values: dict[str, Any] = {
            "env_steps": self.counters["env_steps"], "updates": self.learner.num_updates,
            "policy_version": self.counters["policy_version"], "episodes": self.counters["episodes"],
            "chunks": self.counters["chunks"], "transitions_per_s": float(self._rates[0]),
            "updates_per_s": float(self._rates[1]), "replay_size": len(self.replay),
            "rejected_chunks": self.ingest.rejected, "incomplete_episodes": self._incomplete_episodes,
            "actors": len(self.ingest.actors), "updates_owed": self._updates_owed(),
        }
        for actor, counts in self.ingest.actor_counts().items():
            values[f"actor/{actor}/transitions"] = counts["transitions"]
            values[f"actor/{actor}/episodes"] = counts["episodes"]
            values[f"actor/{actor}/policy_version"] = counts["policy_version"]
        if self._last_returns is not None:
            for name, v in zip(self.contract.objective_names, self._last_returns):
                values[f"return/{name}"] = float(v)
        if self.ingest.last_rejection:
            values["last_rejection"] = self.ingest.last_rejection[:300]
        min_size = self.config.replay.min_size_to_sample
        if self._diverged:
            return "error", self._diverged, values
        if self.finished:
            return "ok", "finished", values
        if self._draining:
            return "ok", f"total_steps reached: finishing {self._updates_owed()} owed updates", values
        if now - self._last_rejection_time < 10.0:
            return "warn", f"rejected experience: {self.ingest.last_rejection[:200]}", values
        if self.limiter.inserts < min_size:
            return "ok", f"waiting for experience ({self.limiter.inserts}/{min_size} transitions)", values
        return "ok", "learning", values


def main(args: list[str] | None = None) -> int:
    return run_node(LearnerNode, args)


if __name__ == "__main__":
    sys.exit(main())
