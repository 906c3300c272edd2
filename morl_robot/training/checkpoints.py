"""Restore and checkpoints of a learner run: the newest readable checkpoint restored (and checked)
before anything in the run directory is written, one cadence of checkpoints, the final artefacts.
A refused resume leaves the run directory byte-identical (docs/reference/run_directory.md)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from morl_robot.errors import ConfigError
from morl_robot.learning.checkpoint import (
    CheckpointError,
    checkpoint_path,
    load_latest,
    quarantine,
    run_checkpoint_dir,
    save_checkpoint,
)
from morl_robot.learning.config import MPOConfig, config_to_dict
from morl_robot.learning.run_lock import WriteError, write_error
from morl_robot.training.metrics import MetricsLogger
from morl_robot.training.plots import write_end_of_run_plots
from morl_robot.training.run_directory import COUNTERS, Log

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
    from morl_robot.serving.contract import PolicyContract
    from morl_robot.training.ingest import ExperienceIngest


def _to_numpy(obj: Any) -> Any:
    """Tensors (as checkpoints store numpy arrays) back to numpy, recursively."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    return obj


class Checkpoints:
    """Restore (:meth:`start`, :meth:`check_resume`), checkpoints (:meth:`checkpoint_due`,
    :meth:`checkpoint`) and the end of a run (:meth:`finish`) of a :class:`LearnerSession`."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    config: MPOConfig
    learner: MOMPOLearner
    replay: SequenceReplay
    limiter: SampleToInsertRatio
    normalizer: RunningNormalizer | None
    ingest: ExperienceIngest | None
    contract: PolicyContract | None
    run_dir: Path | None
    counters: dict[str, int]
    evaluations: list[tuple[int, np.ndarray]]
    logger: MetricsLogger | None
    resumed_from: Path | None
    log: Log
    _final_exports: dict[int, bytes] | None  # :class:`~morl_robot.training.snapshots.Snapshots`

    @property
    def checkpoint_dir(self) -> Path | None:
        return run_checkpoint_dir(self.run_dir) if self.run_dir is not None else None

    def start(self) -> Path | None:
        """Resume from the newest readable checkpoint (if any) and open the metric logs; returns
        the checkpoint resumed from.  The run directory is written only after the restore is
        checked: unreadable checkpoints skipped on the way are then moved aside (``*.corrupt``)."""
        if self.run_dir is not None:
            skipped = self._restore_newest()  # raises before any write if the run cannot be resumed
            for path, message in skipped:
                self.log("warning", f"skipping unreadable checkpoint: {message}; {quarantine(path)}")
            try:
                self.logger = MetricsLogger(self.run_dir, self.config.training.tensorboard,
                                            resume_step=self.counters["env_steps"])
            except OSError as exc:
                raise write_error(self.run_dir / "metrics.csv", exc) from None
        self._started = True
        self._snapshot_updates = self.learner.num_updates  # a checkpoint holds the weights of its version
        self._last_checkpoint_steps = self.counters["env_steps"]
        return self.resumed_from

    def check_resume(self) -> Path | None:
        """The resume :meth:`start` would make, checked without writing anything: the newest
        readable checkpoint restored into this session (contract — task, robot, reward machine,
        labels —, normaliser setting, learner, replay and ingest shapes); returns it (None: a new
        run).  Raises what :meth:`start` would (:class:`~morl_robot.serving.contract.ContractError`,
        :class:`ConfigError`, :class:`CheckpointError`, also when every checkpoint is unreadable).
        The session is left restored but not started: a preflight's throwaway (the CLI's)."""
        if self.run_dir is None:
            return None
        self._restore_newest()
        return self.resumed_from

    def _restore_newest(self) -> list[tuple[Path, str]]:
        """Restore the newest readable checkpoint (reading only); returns the unreadable newer ones
        skipped, with why.  If there are checkpoints but none is readable, a
        :class:`CheckpointError` names them all (never a silent fresh start over a run's history)."""
        skipped: list[tuple[Path, str]] = []
        try:
            found = load_latest(self.checkpoint_dir, fallback=True,
                                on_skip=lambda path, exc: skipped.append((path, str(exc))))
        except CheckpointError as exc:
            raise CheckpointError(f"{exc}; nothing was changed: move the unreadable checkpoints aside to start a "
                                  "new run in this directory, or choose another one") from None
        if found is not None:
            self._restore(*found)
        return skipped

    def _restore(self, path: Path, payload: dict[str, Any]) -> None:
        from morl_robot.serving.contract import ContractError, PolicyContract
        from morl_robot.serving.contract import replace as replace_contract

        saved = None
        if self.contract is not None:
            try:
                saved = PolicyContract.from_metadata(dict(payload["contract"]))
                saved.check_compatible(self.contract)
            except (KeyError, TypeError, ContractError) as exc:
                raise ContractError(f"{path} cannot be resumed for task '{self.contract.task}': {exc}") from None
        had_normalizer = payload.get("normalizer") is not None
        if had_normalizer != (self.normalizer is not None):
            raise ConfigError(f"{self.normalization_setting}: {path} was trained with it "
                              f"{'on' if had_normalizer else 'off'}; resume with the same setting")
        try:
            self.learner.load_state_dict(payload["learner"])
            if self.normalizer is not None:
                self.normalizer.load_state_dict(_to_numpy(payload["normalizer"]))
            if payload.get("replay") is not None:
                self.replay.load_state_dict(payload["replay"])
                self.limiter.load_state_dict(payload["limiter"])
            if self.ingest is not None and payload.get("ingest") is not None:
                self.ingest.load_state_dict(payload["ingest"])
            torch.set_rng_state(payload["rng"]["torch"])
        except (KeyError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{path} does not fit this learner: {exc}") from None
        self.counters = {key: int(payload["counters"].get(key, 0)) for key in COUNTERS}
        self.counters["updates"] = self.learner.num_updates
        self.evaluations = [(int(s), np.asarray(r)) for s, r in payload.get("evaluations") or []]
        if saved is not None and self.contract is not None:
            self.contract = replace_contract(self.contract, run_id=saved.run_id or self.contract.run_id)
        self.resumed_from = path
        replay_note = (f", replay of {len(self.replay)} transitions restored" if payload.get("replay") is not None
                       else ", replay empty (learning resumes after min_size_to_sample new transitions)")
        run = f", run {self.contract.run_id}" if self.contract is not None else ""
        self.log("info", f"resumed from {path} at {self.counters['env_steps']} env steps (update "
                 f"{self.learner.num_updates}, policy version {self.counters['policy_version']}{run}){replay_note}")

    def checkpoint_due(self) -> bool:
        """Whether the env steps crossed a multiple of ``training.checkpoint_every`` since the last
        checkpoint (0: checkpoints only at :meth:`finish`)."""
        every = self.config.training.checkpoint_every
        return bool(every) and self.counters["env_steps"] // every > self._last_checkpoint_steps // every

    def checkpoint(self, publish: bool = True) -> Path | None:
        """Write the checkpoint of the current env steps (None without a run directory).  The
        policy becomes a new version first if it changed since the last one (``publish``: and
        goes to ``on_snapshot``)."""
        if self.run_dir is None:
            return None
        if self.learner.num_updates != self._snapshot_updates:  # the checkpoint's weights get their own version
            self.snapshot(bump=True, publish=publish and not self.demonstrating)
        self.counters["updates"] = self.learner.num_updates
        tcfg = self.config.training
        payload = {
            "learner": self.learner.state_dict(),
            "config": config_to_dict(self.config),
            "contract": self.contract.to_metadata() if self.contract is not None else None,
            "normalizer": self.normalizer.state_dict() if self.normalizer is not None else None,
            "counters": dict(self.counters),
            "limiter": self.limiter.state_dict(),
            "replay": self.replay.state_dict() if tcfg.checkpoint_replay else None,
            "rng": {"torch": torch.get_rng_state()},
            "ingest": self.ingest.state_dict() if self.ingest is not None else None,
            "evaluations": [(s, torch.as_tensor(r)) for s, r in self.evaluations],
        }
        try:
            path = save_checkpoint(self.checkpoint_dir, self.counters["env_steps"], payload, keep=tcfg.keep_checkpoints)
        except OSError as exc:
            raise write_error(checkpoint_path(self.checkpoint_dir, self.counters["env_steps"]), exc) from None
        self._last_checkpoint_steps = self.counters["env_steps"]
        self.keep_snapshot()
        if self.logger is not None:
            with self._writing("tb"):
                self.logger.flush()
        self.log("info", f"checkpoint {path.name}: {self.counters['env_steps']} env steps, "
                 f"{self.learner.num_updates} updates, policy version {self.counters['policy_version']}")
        return path

    def finish(self, reason: str, publish: bool = True) -> None:
        """The final checkpoint and, with a contract, ``policy.onnx`` (and ``plots/``); once.
        Each artefact that fails is logged and the others are still written; then the first
        failure is raised (:class:`WriteError` naming the file and the OS error, or what the
        artefact raised).  A session whose :meth:`start` did not pass writes nothing."""
        if self._finished:
            return
        self._finished = True
        if self.run_dir is not None and not self._started:
            self.log("info", f"{reason}: the run did not start (restore refused or failed): nothing written "
                     f"to {self.run_dir}")
            return
        steps: list[tuple[str, Callable[[], Any]]] = [("checkpoint", lambda: self.checkpoint(publish=publish))]
        if self.contract is not None and self.run_dir is not None:
            steps.append(("policy.onnx", lambda: self._export(self.run_dir / "policy.onnx")))
        if self.end_of_run_plots and self.run_dir is not None:
            steps.append(("plots", lambda: write_end_of_run_plots(self.run_dir, self.objective_names, self.log)))
        failures: list[Exception] = []
        self._final_exports = {}  # one ONNX export for the final snapshot, its kept copy and policy.onnx
        for what, fn in steps:
            try:
                fn()
            except WriteError as exc:  # names the file and the OS error
                failures.append(exc)
                self.log("error", f"{reason}: {exc}")
            except Exception as exc:  # noqa: BLE001 - write whatever else can be written
                failures.append(exc)
                self.log("error", f"{reason}: could not write the {what}: {type(exc).__name__}: {exc}")
        self._final_exports = None
        if failures:
            raise failures[0]
        if self.run_dir is not None:
            self.log("info", f"{reason}: final artefacts in {self.run_dir}")

    def close(self) -> None:
        if self.logger is not None:
            self.logger.close()
            self.logger = None
