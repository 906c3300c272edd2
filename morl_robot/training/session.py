"""The learner core every driver shares: one MO-MPO learning session in a run directory.

MO-MPO (Abdolmaleki et al. 2020) learns off-policy from a replay that actors fill, at a fixed
samples-per-insert ratio (Reverb's rate limiter, Cassirer et al. 2021).  :class:`LearnerSession`
owns everything of a learner run that is not acting, so the in-process loop
(:func:`morl_robot.training.loop.train`) and the distributed one
(:mod:`morl_robot.nodes.learner_node`, which only translates messages to these calls) behave alike:

* **restore** (:meth:`start`): the newest readable checkpoint of ``<run>/checkpoints``; an
  unreadable newer one is named in the log and the previous one is used
  (:func:`~morl_robot.learning.checkpoint.load_latest`); if none is readable the start fails
  naming them.  Nothing in the run directory changes before the restore is checked (contract:
  task, robot, reward machine…; the normaliser setting; the learner's and replay's shapes): a
  refused resume leaves it byte-identical, and :meth:`finish` of a session that never started
  writes nothing.  Only then are the skipped unreadable checkpoints moved aside to ``*.corrupt``
  and the metric logs opened.  :meth:`check_resume` is the same check alone (the CLI's
  preflight, before any node starts).
* **experience**: one transition (:meth:`add_transition`, the in-process actor) or one decoded
  chunk of a distributed actor (:meth:`add_chunk`, through
  :class:`~morl_robot.training.ingest.ExperienceIngest`); both count inserts in the
  :class:`~morl_robot.learning.replay.SampleToInsertRatio`.
* **counterfactual experience** (reward machines, ``replay.crm``; MORM paper eq. 4): the replay
  relabels sampled sequences from counterfactual machine states
  (:mod:`morl_robot.reward_machines.crm`; the relabeller comes from
  :func:`counterfactual_relabeller`, for both drivers), and with ``replay.crm_scale_updates``
  every real step past ``min_size_to_sample`` counts as |U \\ F| inserts, one per counterfactual
  experience (:meth:`inserts_for`); the allowance counts env steps accordingly.
* **demonstrations** (``training.demonstrations``, with the task's ``demonstrator``): while
  :attr:`demonstrating`, experience acted by the demonstrator (in-process: ``add_transition(…,
  demonstration=True)``; distributed: rows of ``policy_version``
  :data:`~morl_robot.acting.experience.DEMONSTRATION_VERSION`) is kept aside as well; new policy
  versions are made but not published (actors that demonstrated wait for the clone).
  :meth:`end_demonstrations` clones the policy on the demonstrator's noise-free actions
  (behaviour cloning, then the critic warm-up); :meth:`tick` calls it once the configured
  demonstration episodes are in (or an actor acts a learned policy: a resumed run), then publishes
  the cloned policy as the next version.
* **learning** (:meth:`learn`): updates while the ratio allows (optionally until a deadline),
  the sampled observations normalised with the current running statistics; a non-finite
  statistic rolls the learner back to the newest policy version's state and stops learning
  (:attr:`diverged`).
* **updates owed and back-pressure**: :meth:`updates_owed` (the backlog the ratio allows now),
  :meth:`allowance` (the transitions the ratio accepts; actors wait past it) and
  :attr:`max_updates_owed` (the bound on the backlog while actors respect the allowance).
* **checkpoints**: one payload schema (:data:`PAYLOAD_KEYS`) and one cadence,
  ``training.checkpoint_every`` env steps of the learner YAML (:meth:`checkpoint_due`), plus one
  at :meth:`finish`.  The newest ``training.keep_checkpoints`` files are kept.
* **policy versions** (with a :class:`~morl_robot.serving.contract.PolicyContract`): every
  ``snapshot_every`` updates the policy becomes a new version, exported as ONNX and handed to
  ``on_snapshot(version, bytes)``; a checkpoint always holds the weights of its version, and its
  policy is kept as ``snapshots/policy_<env_steps>.onnx`` (learning curves of deterministic
  evaluations are measured on these).
* **metrics**: ``metrics.csv`` (every ``training.log_every`` updates), ``episodes.csv`` (one row
  per finished training episode), ``eval.csv`` and TensorBoard (:class:`MetricsLogger`).
* **serving distributed actors** (the learner node's turns): :meth:`begin_serving` (the first
  policy version), :meth:`receive` (one experience message: decoded, checked, inserted, or
  rejected, counted and logged — never fatal; a due checkpoint is written), :meth:`tick` (learn
  for a time budget, hand a changed :meth:`allowance` to ``on_allowance``, finish at
  ``total_steps``) and :meth:`diagnostics` (statistics, ingest rates, a recent rejection).
* **end of run** (:meth:`finish`): the final checkpoint and, with a contract, ``policy.onnx`` and
  ``plots/`` (learning curves and the Pareto front of the newest training episodes).
* **writes that fail** (disk full, a read-only folder…): a :class:`~morl_robot.learning.run_lock.WriteError`
  naming the file and the OS error — from the metric logs at once (experience is not taken as
  "rejected" for it), from :meth:`finish` after every other artefact was tried — never a run that
  ends as if it had written everything.

Counters (``env_steps``, ``updates``, ``episodes``, ``policy_version``, ``chunks``) are part of
every checkpoint; a resumed session continues them.  No ROS here.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import math
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from morl_robot.acting.experience import DEMONSTRATION_VERSION
from morl_robot.errors import ConfigError, MorlRobotError, WireError
from morl_robot.learning.checkpoint import (
    CheckpointError,
    checkpoint_path,
    load_latest,
    quarantine,
    run_checkpoint_dir,
    save_checkpoint,
)
from morl_robot.learning.config import MPOConfig, config_to_dict
from morl_robot.learning.learner import MOMPOLearner
from morl_robot.learning.networks import ActionSpec
from morl_robot.learning.normalization import RunningNormalizer
from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
from morl_robot.learning.run_lock import WriteError, write_error
from morl_robot.training.ingest import ExperienceError, ExperienceIngest, IngestResult
from morl_robot.training.metrics import MetricsLogger
from morl_robot.training.termination import WorstCaseTermination, worst_case_termination

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.acting.demonstrator import Demonstrator
    from morl_robot.reward_machines.crm import CounterfactualRelabeller
    from morl_robot.serving.contract import PolicyContract

#: What a learner session writes in its run directory (path, content): the source of
#: docs/reference/run_directory.md.  ``<env_steps>``: zero-padded env steps.
RUN_FILES: tuple[tuple[str, str], ...] = (
    ("checkpoints/ckpt-<env_steps>.pt", ("checkpoint (atomic, checksummed; the newest training.keep_checkpoints are "
                                         "kept; an unreadable one is renamed *.corrupt once an older one restored); "
                                         "the replay only with training.checkpoint_replay")),
    ("metrics.csv", "one row per logged learner update (every training.log_every updates)"),
    ("episodes.csv", "one row per finished training episode (the exploring policy's returns)"),
    ("eval.csv", "deterministic evaluations during training (in-process train only)"),
    ("tb/", "TensorBoard event files mirroring the CSVs"),
    ("snapshots/policy_<env_steps>.onnx", "the initial policy and the policy of every checkpoint"),
    ("policy.onnx", "the final policy with its contract (at the end of the run or a clean shutdown)"),
    ("plots/learning_curves.png", "returns of finished training episodes (exploring policy), at the end"),
    ("plots/pareto_front.png", "per-objective returns of the newest training episodes (2+ objectives), at the end"),
)
#: The columns of the session's CSV files (column, meaning); ``<objective>`` stands for each objective.
CSV_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "metrics.csv": (
        ("step", "learner updates so far"),
        ("env_steps", "environment steps so far"),
        ("<statistic>", "every named statistic of the update, e.g. temperature/<objective>, kl_q/<objective>, kl_mean"),
        ("policy_version", "the newest policy version"),
        ("replay_size", "transitions in the replay"),
        ("actor/<id>/transitions", "transitions received from each actor (distributed training)"),
    ),
    "episodes.csv": (
        ("env_steps", "environment steps when the episode ended"),
        ("return/<objective>", "the episode's return of each objective"),
        ("length", "steps in the episode (distributed training)"),
        ("actor", "the actor id that acted it (distributed training)"),
        ("policy_version", "the policy version that acted it (distributed training; 0: the demonstrator)"),
        ("termination", "why it ended (a task's reason, 'safety', 'terminated' or 'truncated')"),
    ),
    "eval.csv": (
        ("env_steps", "environment steps at the evaluation"),
        ("return/<objective>", "mean deterministic return of each objective"),
    ),
}
#: the keys of every checkpoint payload (None where a session has no such part).
PAYLOAD_KEYS = ("learner", "config", "contract", "normalizer", "counters", "limiter", "replay", "rng", "ingest",
                "evaluations")
COUNTERS = ("env_steps", "updates", "episodes", "policy_version", "chunks", "demonstration_episodes",
            "demonstrations_done")
#: the end-of-run Pareto plot shows the returns of this many newest finished episodes.
RECENT_EPISODES = 200

#: ``log(level, message)``; level is ``info``, ``warning`` or ``error``.
Log = Callable[[str, str], None]
#: seconds between two logged experience rejections (the others are counted only).
REJECTION_LOG_INTERVAL = 5.0
#: seconds the diagnostics warn after an experience rejection.
REJECTION_WARN_FOR = 10.0
#: seconds the ingest and update rates of :meth:`LearnerSession.diagnostics` average over (at least).
RATE_WINDOW = 0.5


def warnings_log(level: str, message: str) -> None:
    """The default :data:`Log` of in-process training: problems as ``RuntimeWarning``\\ s, the
    rest to the ``morl_robot.training.session`` logger (Python :mod:`logging`, level INFO)."""
    if level == "info":
        logging.getLogger(__name__).info(message)
    else:
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def counterfactual_relabeller(config: MPOConfig, env: Any, what: str = "the environment",
                              hint: str = "wrap it in morl_robot.reward_machines.env.RewardMachineEnv, "
                                          "e.g. the Gymnasium id morl_robot/SawyerPegInHoleRM-v0"
                              ) -> CounterfactualRelabeller | None:
    """The replay's CRM relabeller for ``env``'s observation and reward layout (a
    :class:`~morl_robot.reward_machines.env.RewardMachineEnv`) if ``replay.crm`` is on, else
    None; a :class:`ConfigError` naming ``what`` when it is on for an environment without a
    reward machine (``hint``: how to give it one), or together with preferences."""
    rcfg = config.replay
    if not rcfg.crm:
        return None
    if config.preferences is not None:
        raise ConfigError("preferences (ε-conditioned MO-MPO) and replay.crm cannot be combined yet: the "
                          "counterfactual relabelling rewrites the machine-state part of stored observations, "
                          "which the preference features would follow")
    if not hasattr(env, "relabeller"):
        raise ConfigError(f"replay.crm is true but {what} has no reward machine to relabel experience with "
                          f"({hint}); or set replay.crm: false")
    return env.relabeller(rcfg.crm_fraction)


def _to_numpy(obj: Any) -> Any:
    """Tensors (as checkpoints store numpy arrays) back to numpy, recursively."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    return obj


class LearnerSession:
    """One learner run: learner, replay, rate limiter, normaliser, counters and run directory.

    Args:
        obs_dim: observation width O (without preference features).
        action_spec: the policy's actions.
        num_objectives: K.
        config: the learner configuration (``objective_names`` filled in).
        seed: seeds the learner (networks, sampling) and the replay (``seed + 3``).
        run_dir: checkpoints, metrics and artefacts go here; None: nothing is written or restored.
        normalize_observations: keep running observation statistics and learn on normalised
            observations (:class:`RunningNormalizer`).
        normalization_setting: the setting's name in errors (``training.observation_normalization``).
        contract: the policy's contract; enables policy versions, ONNX snapshots and ``policy.onnx``.
        snapshot_every: learner updates between policy versions (0: a new version only at checkpoints).
        relabeller: counterfactual relabelling for the replay (reward machines, CRM:
            :func:`counterfactual_relabeller`).
        propositions: the MORM's propositions of a reward-machine task (its experience has the
            machine columns ``env_terminated``, ``label/<proposition>``…); () without one.
        log: where messages go (default :func:`warnings_log`).
        on_snapshot: ``(version, onnx_bytes)`` of every new policy version (e.g. publish it).
        keep_metrics: also keep the logged learner statistics in :attr:`metrics`.
        end_of_run_plots: write ``plots/`` at :meth:`finish`.
        total_steps: env steps of the run (0: until stopped); caps :meth:`allowance`; past it the
            session is :attr:`draining` (the driver takes no more experience).
        on_allowance: ``(received, allowed, rows received per actor id)`` whenever :meth:`tick` finds the allowance changed
            (e.g. publish it to the actors).
        clock: monotonic seconds (rejection logging, diagnostics rates).
        demonstrator: the task's hand-written controller, raw observation (O,) → normalised action
            (D,): what the policy is cloned on (needed when ``training.demonstrations.episodes`` > 0).
    """

    def __init__(self, obs_dim: int, action_spec: ActionSpec, num_objectives: int, config: MPOConfig, *,
                 seed: int = 0, run_dir: str | Path | None = None, normalize_observations: bool = False,
                 normalization_setting: str = "training.observation_normalization",
                 contract: PolicyContract | None = None, snapshot_every: int = 0,
                 relabeller: CounterfactualRelabeller | None = None, propositions: Sequence[str] = (),
                 log: Log = warnings_log, on_snapshot: Callable[[int, bytes], None] | None = None,
                 keep_metrics: bool = False, end_of_run_plots: bool = False, total_steps: int = 0,
                 on_allowance: Callable[[tuple[int, int, dict[int, int]]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, demonstrator: Demonstrator | None = None) -> None:
        if snapshot_every < 0:
            raise ConfigError(f"snapshot_every: must be >= 0 learner updates, got {snapshot_every}")
        self.config, self.obs_dim, self.contract = config, int(obs_dim), contract
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.learner = MOMPOLearner(obs_dim, action_spec, num_objectives, config, seed=seed)
        rcfg = config.replay
        self.replay = SequenceReplay(rcfg.capacity, self.learner.input_dim, action_spec.dim, num_objectives,
                                     discrete=action_spec.is_discrete, seed=seed + 3, relabeller=relabeller)
        self.limiter = SampleToInsertRatio(rcfg.samples_per_insert, rcfg.min_size_to_sample, rcfg.error_buffer)
        self.propositions = tuple(propositions)
        #: inserts one real step counts past min_size_to_sample: |U \ F| with CRM scaling the updates
        self.crm_inserts = (len(relabeller.product.nonterminal_states)
                            if relabeller is not None and rcfg.crm_scale_updates else 1)
        self.normalizer = RunningNormalizer(obs_dim) if normalize_observations else None
        self.normalization_setting = normalization_setting
        self.ingest: ExperienceIngest | None = None
        #: ``training.worst_case_termination`` for actors' chunks (set by :func:`session_for_task`,
        #: which knows the task's step limit and worst rewards)
        self.worst_case: WorstCaseTermination | None = None
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.evaluations: list[tuple[int, np.ndarray]] = []
        self.metrics: list[dict[str, float]] = []
        self.keep_metrics, self.end_of_run_plots = keep_metrics, end_of_run_plots
        self.snapshot_every, self.log, self.on_snapshot = int(snapshot_every), log, on_snapshot
        self.total_steps = int(total_steps)
        self.logger: MetricsLogger | None = None
        self.resumed_from: Path | None = None
        self.diverged = ""
        self.incomplete_episodes = 0
        # rows received per actor id in this process (chunks that fit or not): the actors'
        # acknowledgement in the experience allowance, so a lagging subscription cannot be overrun
        self.acknowledged: dict[int, int] = {}
        self.last_returns: np.ndarray | None = None
        self._good_state: dict[str, Any] | None = None  # learner state of the newest policy version
        self._snapshot_updates = 0
        self._last_checkpoint_steps = 0
        self._finished = False
        self._started = False  # start() passed its restore check: the run directory may be written
        self.on_allowance, self.clock = on_allowance, clock
        self.seed = int(seed)
        if config.training.demonstrations.episodes and demonstrator is None:
            raise ConfigError(f"training.demonstrations.episodes is {config.training.demonstrations.episodes} but no "
                              "demonstrator was given (the task has none, or the command does not pass one)")
        self.demonstrator = demonstrator
        self._demonstrations: list[np.ndarray] = []  # raw observations [R, O] acted by the demonstrator
        self._learned_rows = False  # an actor acted a learned policy during the demonstration phase
        self._allowance_sent: tuple[int, int, dict[int, int]] | None = None
        self._rate_mark, self._rates = (clock(), 0, 0), (0.0, 0.0)
        self._last_rejection_time = self._last_rejection_log = -math.inf

    @property
    def objective_names(self) -> list[str]:
        return list(self.learner.objective_names)

    @property
    def checkpoint_dir(self) -> Path | None:
        return run_checkpoint_dir(self.run_dir) if self.run_dir is not None else None

    def accept_experience(self, columns: Sequence[str]) -> ExperienceIngest:
        """Take distributed actors' experience chunks with these ``columns`` (:meth:`add_chunk`);
        before :meth:`start`, so the ingest's per-actor counters are restored too."""
        self.ingest = ExperienceIngest(self.replay, columns, self.objective_names, self.normalizer,
                                       worst_case=self.worst_case)
        return self.ingest

    # --- restore ---------------------------------------------------------------------------------
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

    # --- experience ------------------------------------------------------------------------------
    def inserts_for(self, transitions: int) -> int:
        """What ``transitions`` real steps, received now, count in the samples-per-insert ratio:
        one each, and with CRM scaling the updates |U \\ F| each (one per counterfactual
        experience) once ``min_size_to_sample`` real steps are in (learning starts after the same
        real steps with or without CRM)."""
        start = self.counters["env_steps"]
        scaled = max(0, start + transitions - max(start, self.config.replay.min_size_to_sample))
        return transitions + (self.crm_inserts - 1) * scaled

    def add_transition(self, obs: np.ndarray, action: Any, reward: np.ndarray, next_obs: np.ndarray,
                       terminated: bool, truncated: bool, behaviour_log_prob: float, *, label: int = -1,
                       env_terminated: Any = None, demonstration: bool = False) -> None:
        """One environment step of an in-process actor.  ``obs``/``next_obs`` ``[O (+K)]`` as the
        networks take them (ε-conditioned: the preference features after the O observations);
        the first O update the observation statistics.  ``label``/``env_terminated``: a
        reward-machine step's σ mask and the environment's own termination (CRM needs them);
        ``demonstration``: acted by the demonstrator (kept for :meth:`end_demonstrations`)."""
        if demonstration and self.demonstrating:
            self._demonstrations.append(np.asarray(obs, np.float32)[None, : self.obs_dim])
        if self.normalizer is not None:
            self.normalizer.update(obs[: self.obs_dim])
        self.replay.add(obs, action, reward, next_obs, terminated, truncated, behaviour_log_prob,
                        label=label, env_terminated=env_terminated)
        self.limiter.insert(self.inserts_for(1))
        self.counters["env_steps"] += 1

    def record_episode(self, returns: np.ndarray, termination: str | None,
                       extra: dict[str, Any] | None = None, demonstration: bool = False) -> None:
        """A finished training episode ``returns [K]`` (``episodes.csv``); ``demonstration``: acted
        by the demonstrator."""
        self.counters["episodes"] += 1
        self.counters["demonstration_episodes"] += int(demonstration)
        self.last_returns = np.asarray(returns)
        if self.logger is not None:
            with self._writing("episodes.csv"):
                self.logger.log_episode(self.counters["env_steps"],
                                        {f"return/{n}": float(v) for n, v in zip(self.objective_names, returns)},
                                        termination, extra)

    def add_chunk(self, chunk: Any) -> IngestResult:
        """A decoded experience chunk of a distributed actor (:meth:`accept_experience` first);
        raises :class:`~morl_robot.training.ingest.ExperienceError` (counted as rejected) if it
        does not fit.  Episodes whose beginning was not seen are counted, not logged."""
        if self.ingest is None:
            raise RuntimeError("add_chunk before accept_experience")
        actor = int(chunk.actor)
        self.acknowledged[actor] = self.acknowledged.get(actor, 0) + len(chunk.episode)
        result = self.ingest.add(chunk)
        if self.demonstrating:
            demo = np.asarray(chunk.policy_version) == DEMONSTRATION_VERSION  # (R,) acted by the demonstrator
            if demo.any():
                self._demonstrations.append(np.asarray(chunk.obs, np.float32)[demo, : self.obs_dim])
            self._learned_rows = self._learned_rows or not demo.all()
        self.limiter.insert(self.inserts_for(result.transitions))
        self.counters["env_steps"] += result.transitions
        self.counters["chunks"] += 1
        for rec in result.episodes:
            if not rec.complete:
                self.counters["episodes"] += 1
                self.counters["demonstration_episodes"] += int(rec.policy_version == DEMONSTRATION_VERSION)
                self.incomplete_episodes += 1
                continue  # its beginning was not seen: its return would be wrong
            self.record_episode(rec.returns, "terminated" if rec.terminated else "truncated",
                                {"length": rec.length, "actor": rec.actor, "policy_version": rec.policy_version},
                                demonstration=rec.policy_version == DEMONSTRATION_VERSION)
        return result

    def record_evaluation(self, returns: np.ndarray) -> None:
        """A deterministic evaluation's mean returns ``[K]`` at the current env steps (``eval.csv``)."""
        self.evaluations.append((self.counters["env_steps"], returns))
        if self.logger is not None:
            with self._writing("eval.csv"):
                self.logger.log_eval(self.counters["env_steps"],
                                     {f"return/{n}": float(v) for n, v in zip(self.objective_names, returns)})

    # --- updates owed ----------------------------------------------------------------------------
    def updates_owed(self) -> int:
        """Learner updates the samples-per-insert ratio allows now (the learner's backlog)."""
        return int(self.limiter.samples_allowed() // self.config.batch_size)

    @property
    def max_updates_owed(self) -> int:
        """The bound on :meth:`updates_owed` while actors stop at :meth:`allowance` (an actor that
        sends chunks of R transitions may overshoot it by R - 1: add ``R·spi / batch``)."""
        return math.ceil(self.limiter.max_backlog() / self.config.batch_size)

    def allowance(self) -> tuple[int, int]:
        """``(env steps received, env steps the ratio accepts now)``: actors in lockstep wait once
        the first reaches the second (capped at ``total_steps`` if > 0), so acting keeps pace with
        learning (Reverb's rate limiter blocks inserts the same way)."""
        received = self.counters["env_steps"]  # the limiter counts only this process's inserts (resumes)
        room = self.limiter.max_inserts() - self.limiter.inserts  # inserts the ratio accepts (may be < 0)
        if room > 0 and self.crm_inserts > 1:  # CRM: a real step past min_size_to_sample counts |U \ F|
            unscaled = min(room, max(0, self.config.replay.min_size_to_sample - received))
            room = unscaled + (room - unscaled) // self.crm_inserts
        allowed = received + room
        return received, min(allowed, self.total_steps) if self.total_steps else allowed

    @property
    def draining(self) -> bool:
        """``total_steps`` reached: no more experience; the owed updates are still learned."""
        return bool(self.total_steps) and self.counters["env_steps"] >= self.total_steps

    # --- learning --------------------------------------------------------------------------------
    def can_learn(self) -> bool:
        return not self.diverged and self.limiter.can_sample(self.config.batch_size)

    def learn(self, deadline: float | None = None, max_updates: int | None = None, offline: bool = False) -> int:
        """Learner updates while the ratio allows (and ``time.monotonic() < deadline`` and fewer
        than ``max_updates``, if given); returns how many.  Statistics are logged every ``training.log_every`` updates, a new
        policy version is made every ``snapshot_every`` updates.  ``offline`` (a fixed replay, e.g.
        ``train --from-recording``): no ratio, ``max_updates`` updates once a batch fits."""
        cfg = self.config
        done = 0
        if self._good_state is None:
            self._good_state = copy.deepcopy(self.learner.state_dict())
        while ((self.can_learn() if not offline else not self.diverged and len(self.replay) >= cfg.batch_size)
               and (deadline is None or time.monotonic() < deadline) and (max_updates is None or done < max_updates)):
            batch = self._sample()
            if not offline:
                self.limiter.sample(cfg.batch_size)
            stats = self.learner.update(batch)
            done += 1
            self.counters["updates"] = self.learner.num_updates
            bad = [key for key, v in stats.items() if not np.isfinite(v)]
            if bad:
                self._roll_back(f"non-finite learner statistics at update {self.learner.num_updates}: {bad[:4]}")
                break
            if self.learner.num_updates % cfg.training.log_every == 0:
                self._log_update(stats)
            if self.snapshot_every and self.learner.num_updates - self._snapshot_updates >= self.snapshot_every:
                self.snapshot(bump=True, publish=not self.demonstrating)
        return done

    def _sample(self) -> Any:
        """A replay batch, its observations normalised with the current running statistics."""
        batch = self.replay.sample(self.config.batch_size, self.config.sequence_length)
        if self.normalizer is not None:  # raw [T+1, B, O(+K)] → the observation part normalised
            o = batch.observations.copy()
            o[..., : self.obs_dim] = self.normalizer.normalize(o[..., : self.obs_dim])
            batch = dataclasses.replace(batch, observations=o.astype(np.float32))
        return batch

    # --- demonstrations ---------------------------------------------------------------------------
    @property
    def demonstrating(self) -> bool:
        """Learning from demonstrations is configured and its demonstrations are not cloned yet."""
        return bool(self.config.training.demonstrations.episodes) and not self.counters["demonstrations_done"]

    @property
    def demonstrations_complete(self) -> bool:
        """The configured demonstration episodes are in, or an actor already acts a learned policy."""
        return (self.counters["demonstration_episodes"] >= self.config.training.demonstrations.episodes
                or self._learned_rows)

    def end_demonstrations(self) -> bool:
        """End the demonstration phase (once): behaviour cloning of the policy on the demonstrator's
        noise-free actions at the demonstrations received in this process
        (``pretrain_updates`` minibatches, :meth:`MOMPOLearner.behaviour_clone`, on observations
        normalised with the current statistics), then the critic warm-up
        (``critic_warmup_updates``, :meth:`warm_up_critic`).  Returns whether anything was learned
        (nothing after a resume past the demonstrations: they were not kept)."""
        dcfg = self.config.training.demonstrations
        self.counters["demonstrations_done"] = 1
        parts, self._demonstrations = self._demonstrations, []
        if not parts or not (dcfg.pretrain_updates or dcfg.critic_warmup_updates):
            return False
        if dcfg.pretrain_updates:
            assert self.demonstrator is not None
            obs = np.concatenate(parts)  # [N, O] raw
            actions = np.stack([np.clip(np.asarray(self.demonstrator(o), np.float64).reshape(-1), -1.0, 1.0)
                                for o in obs]).astype(np.float32)  # [N, D] noise-free
            x = self.normalizer.normalize(obs) if self.normalizer is not None else obs
            loss = self.learner.behaviour_clone(x, actions, dcfg.pretrain_updates, self.config.batch_size, self.seed,
                                                dcfg.pretrain_lr)
            self.log("info", f"behaviour cloning: {dcfg.pretrain_updates} updates on {len(obs)} demonstration steps "
                     f"({self.counters['demonstration_episodes']} episodes); last loss {loss:.4g}")
        if dcfg.critic_warmup_updates:
            self.warm_up_critic(dcfg.critic_warmup_updates)
        return True

    def warm_up_critic(self, updates: int) -> dict[str, float]:
        """``updates`` policy-evaluation-only learner steps on the replay (the critics learn the
        current policy's values; the policy and the duals do not move: ``update(…,
        improve_policy=False)``), outside the samples-per-insert ratio, then a copy of the
        critics into the targets.  Returns the last step's statistics (logged as one line)."""
        stats: dict[str, float] = {}
        for _ in range(updates):
            stats = self.learner.update(self._sample(), improve_policy=False)
        self.learner.update_targets()
        self.counters["updates"] = self.learner.num_updates
        if stats:
            q = ", ".join(f"{n} q {stats[f'q_mean/{n}']:.3g} (target {stats[f'target_mean/{n}']:.3g})"
                          for n in self.objective_names)
            self.log("info", f"critic warm-up: {updates} policy-evaluation updates on {len(self.replay)} "
                     f"transitions; {q}")
        return stats

    def _log_update(self, stats: dict[str, float]) -> None:
        steps = self.counters["env_steps"]
        if self.keep_metrics:
            self.metrics.append({"update": float(self.learner.num_updates), "env_steps": float(steps), **stats})
        if self.logger is not None:
            extra = {"policy_version": float(self.counters["policy_version"]), "replay_size": float(len(self.replay)),
                     **self._crm_statistics()}
            if self.ingest is not None:
                extra.update({f"actor/{a}/transitions": float(n["transitions"])
                              for a, n in self.ingest.actor_counts().items()})
            with self._writing("metrics.csv"):
                self.logger.log_update(self.learner.num_updates, steps, {**stats, **extra})

    @contextlib.contextmanager
    def _writing(self, name: str) -> Iterator[None]:
        """An ``OSError`` while writing ``RUN_DIR/name`` as a :class:`WriteError` naming it."""
        try:
            yield
        except OSError as exc:
            raise write_error((self.run_dir or Path()) / name, exc) from None

    def _crm_statistics(self) -> dict[str, float]:
        """With CRM: ``replay_inserts`` (what the samples-per-insert ratio counted: the real steps
        and, scaled, their counterfactual experiences) and the sampled sequences the replay
        relabelled from a machine state other than the real one (``counterfactual_sequences``,
        this process)."""
        relabeller = self.replay.relabeller
        if relabeller is None:
            return {}
        return {"replay_inserts": float(self.limiter.inserts),
                "counterfactual_sequences": float(relabeller.counterfactual_sequences)}

    def _roll_back(self, reason: str) -> None:
        self.diverged = reason
        assert self._good_state is not None
        self.learner.load_state_dict(self._good_state)
        self.counters["updates"] = self._snapshot_updates = self.learner.num_updates
        self.log("error", f"{reason}; rolled back to the state of policy version {self.counters['policy_version']} "
                 f"(update {self.learner.num_updates}) and stopped updating")

    # --- policy versions -------------------------------------------------------------------------
    def snapshot(self, bump: bool, publish: bool = True) -> bytes | None:
        """Make the current policy the next (``bump``) or the current version: the state a
        divergence rolls back to; with a contract and ``publish``, its ONNX bytes go to
        ``on_snapshot`` and are returned."""
        if bump:
            self.counters["policy_version"] += 1
        self._snapshot_updates = self.learner.num_updates
        self._good_state = copy.deepcopy(self.learner.state_dict())
        if not publish or self.contract is None:
            return None
        data = self._export()
        if self.on_snapshot is not None:
            self.on_snapshot(self.counters["policy_version"], data)
        return data

    def publish_policy(self) -> None:
        """The policy actors start from (at activation): version 1 of a new run, the checkpoint's
        version of a resumed one, a new version if the weights changed since the last one; a
        fresh run also keeps it as the first snapshot (the "before" of every learning curve)."""
        if self.counters["policy_version"] == 0:
            self.counters["policy_version"] = 1
        self.snapshot(bump=self.learner.num_updates != self._snapshot_updates)
        if self.learner.num_updates == 0 and self.counters["env_steps"] == 0:
            self.keep_snapshot()

    def _export(self, path: Path | None = None) -> bytes:
        from morl_robot.serving.contract import replace as replace_contract
        from morl_robot.serving.export import export_policy

        assert self.contract is not None
        contract = replace_contract(self.contract, policy_version=self.counters["policy_version"])
        return export_policy(self.learner.policy, contract, path, normalizer=self.normalizer)

    def keep_snapshot(self) -> None:
        """Keep the current policy as ``snapshots/policy_<env_steps>.onnx`` (with a contract)."""
        if self.contract is not None and self.run_dir is not None:
            self._export(self.run_dir / "snapshots" / f"policy_{self.counters['env_steps']:08d}.onnx")

    # --- checkpoints -----------------------------------------------------------------------------
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

    # --- end of run ------------------------------------------------------------------------------
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
            steps.append(("plots", self._plots))
        failures: list[Exception] = []
        for what, fn in steps:
            try:
                fn()
            except WriteError as exc:  # names the file and the OS error
                failures.append(exc)
                self.log("error", f"{reason}: {exc}")
            except Exception as exc:  # noqa: BLE001 - write whatever else can be written
                failures.append(exc)
                self.log("error", f"{reason}: could not write the {what}: {type(exc).__name__}: {exc}")
        if failures:
            raise failures[0]
        if self.run_dir is not None:
            self.log("info", f"{reason}: final artefacts in {self.run_dir}")

    def close(self) -> None:
        if self.logger is not None:
            self.logger.close()
            self.logger = None

    def _plots(self) -> None:
        from morl_robot.evaluation.plots import (
            plot_learning_curves,
            plot_pareto_fronts,
            read_metrics_csv,
        )

        assert self.run_dir is not None
        episodes_csv = self.run_dir / "episodes.csv"
        if not episodes_csv.exists():
            self.log("info", "no finished episode yet: no learning-curve plot")
            return
        names = self.objective_names
        columns = [f"return/{n}" for n in names]
        plots = self.run_dir / "plots"
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

    # --- serving distributed actors ---------------------------------------------------------------
    def begin_serving(self) -> None:
        """Start taking actors' experience: the policy they start from (:meth:`publish_policy`);
        the diagnostics rates count from now.  The allowance goes out first: an actor acts once it
        has a policy, and one without an allowance acts freely (a learner slow to its first
        :meth:`tick` would be overrun)."""
        self._offer_allowance()
        self.publish_policy()
        self._rate_mark = (self.clock(), self.counters["env_steps"], self.learner.num_updates)
        if self.draining:  # a finished run started again
            self.log("info", f"the run already has {self.counters['env_steps']} of total_steps={self.total_steps} "
                     "env steps: finishing")

    def receive(self, read: Callable[[], tuple[Any, Sequence[str]]], split: Callable[[Any, Sequence[str]], Any]) -> bool:
        """One experience message of a distributed actor; returns whether its chunk was inserted.

        ``read()`` decodes the message into ``(table, columns)`` and ``split(table, columns)`` the
        table into a chunk (the wire format is the driver's).  A message that cannot be decoded or
        does not fit (:class:`~morl_robot.errors.WireError`, :class:`ExperienceError`, anything
        else raised while decoding or inserting) is rejected: counted in the ingest, logged (at
        most every :data:`REJECTION_LOG_INTERVAL` s; unexpected errors always) and shown by
        :meth:`diagnostics` for :data:`REJECTION_WARN_FOR` s; the session goes on.  Past
        ``total_steps`` messages are ignored.  A due checkpoint is written after an insert."""
        if self.ingest is None:
            raise RuntimeError("receive before accept_experience")
        if self.draining:
            return False
        ingest = self.ingest
        try:
            try:
                table, columns = read()
                ingest.check_columns(columns)
                chunk = split(table, columns)
            except (WireError, ExperienceError) as exc:
                ingest.reject(f"malformed experience chunk: {exc}")
                raise
            self.add_chunk(chunk)  # the ingest counts its own rejections
        except WriteError:
            raise  # the run directory cannot be written: not the chunk's fault, and fatal
        except MorlRobotError as exc:
            self._last_rejection_time = now = self.clock()
            if now - self._last_rejection_log >= REJECTION_LOG_INTERVAL:
                self._last_rejection_log = now
                self.log("warning", f"rejected experience chunk #{ingest.rejected}: {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - a bad chunk must never stop the learner
            ingest.reject(f"{type(exc).__name__}: {exc}")
            self._last_rejection_time = self.clock()
            self.log("error", f"experience chunk failed ({type(exc).__name__}: {exc}); chunk dropped")
            return False
        if self.checkpoint_due():
            self.checkpoint()
        if self.draining:
            self.log("info", f"reached total_steps={self.total_steps} ({self.counters['env_steps']} env steps): "
                     f"finishing the {self.updates_owed()} updates the samples-per-insert ratio still allows, "
                     "then writing the final artefacts")
        return True

    def tick(self, deadline: float) -> bool:
        """One learner turn: :meth:`learn` until ``deadline`` (``time.monotonic()`` s), a changed
        :meth:`allowance` to ``on_allowance``, and once ``total_steps`` is reached and nothing
        more may be learned, :meth:`finish`; returns whether the run is finished.  At the end of
        the demonstration phase (:attr:`demonstrations_complete`, or ``total_steps`` reached
        during it) the policy is cloned (:meth:`end_demonstrations`) and published as the next
        version first."""
        if self.demonstrating and (self.demonstrations_complete or self.draining):
            self.end_demonstrations()
            self.snapshot(bump=True)  # the cloned policy: what actors that demonstrated wait for
        self.learn(deadline=deadline)
        self._offer_allowance()
        if self.draining and not self.can_learn():
            self.finish("total_steps reached", publish=True)
            return True
        return False

    def _offer_allowance(self) -> None:
        """Hand :meth:`allowance` (with the per-actor acknowledgements) to ``on_allowance`` if it changed."""
        allowance = (*self.allowance(), dict(self.acknowledged))
        if allowance != self._allowance_sent and self.on_allowance is not None:
            self.on_allowance(allowance)
            self._allowance_sent = allowance

    def diagnostics(self) -> tuple[str, str, dict[str, Any]]:
        """``(level, message, values)``: :meth:`status`, :meth:`statistics` and the ingest and
        update rates (``transitions_per_s``, ``updates_per_s``, over at least
        :data:`RATE_WINDOW` s); a warning naming the rejection while one is recent."""
        now = self.clock()
        t0, s0, u0 = self._rate_mark
        if now - t0 >= RATE_WINDOW:
            steps, updates = self.counters["env_steps"], self.learner.num_updates
            self._rates = ((steps - s0) / (now - t0), (updates - u0) / (now - t0))
            self._rate_mark = (now, steps, updates)
        values = {**self.statistics(), "transitions_per_s": self._rates[0], "updates_per_s": self._rates[1]}
        level, message = self.status()
        if level == "ok" and not self.draining and now - self._last_rejection_time < REJECTION_WARN_FOR:
            assert self.ingest is not None
            return "warn", f"rejected experience: {self.ingest.last_rejection[:200]}", values
        return level, message, values

    # --- diagnostics -----------------------------------------------------------------------------
    def describe(self, config_source: str | Path = "") -> str:
        """One line saying what this session learns, how, and where it writes (``config_source``:
        where the learner configuration came from)."""
        cfg, r = self.config, self.config.replay
        source = f" ({config_source})" if config_source else ""
        what = (f"{self.contract.task} on {self.contract.robot}: {len(self.contract.observation_labels)} observations, "
                f"{len(self.contract.action_labels)} actions" if self.contract is not None
                else f"{self.obs_dim} observations, {self.learner.spec.dim} actions")
        return (f"{what}, objectives {self.objective_names}; {cfg.algorithm}{source}, batch "
                f"{cfg.batch_size}×{cfg.sequence_length}, updates after {r.min_size_to_sample} transitions at "
                f"{r.samples_per_insert:g} samples/insert; run directory {self.run_dir or '-'}")

    def status(self) -> tuple[str, str]:
        """``(level, message)`` of the session: ``error`` once diverged, else what it is doing."""
        min_size = self.config.replay.min_size_to_sample
        if self.diverged:
            return "error", self.diverged
        if self._finished:
            return "ok", "finished"
        if self.draining:
            return "ok", f"total_steps reached: finishing {self.updates_owed()} owed updates"
        if self.limiter.inserts < min_size:
            return "ok", f"waiting for experience ({self.limiter.inserts}/{min_size} transitions)"
        return "ok", "learning"

    def statistics(self) -> dict[str, Any]:
        """The session's counters as named values (diagnostics)."""
        values: dict[str, Any] = {
            "env_steps": self.counters["env_steps"], "updates": self.learner.num_updates,
            "policy_version": self.counters["policy_version"], "episodes": self.counters["episodes"],
            "chunks": self.counters["chunks"], "replay_size": len(self.replay),
            "incomplete_episodes": self.incomplete_episodes, "updates_owed": self.updates_owed(),
            "max_updates_owed": self.max_updates_owed,
        }
        values.update(self._crm_statistics())
        if self.ingest is not None:
            values["rejected_chunks"] = self.ingest.rejected
            values["actors"] = len(self.ingest.actors)
            for actor, counts in self.ingest.actor_counts().items():
                for key in ("transitions", "episodes", "policy_version"):
                    values[f"actor/{actor}/{key}"] = counts[key]
            if self.ingest.last_rejection:
                values["last_rejection"] = self.ingest.last_rejection[:300]
        if self.last_returns is not None:
            for name, v in zip(self.objective_names, self.last_returns):
                values[f"return/{name}"] = float(v)
        return values


def session_for_task(task_name: str, task_config: str | None, config_file: str | Path, *, seed: int = 0,
                     reward_machine: str = "", **options: Any) -> LearnerSession:
    """A :class:`LearnerSession` for a robot task's policy (the distributed learner's): the
    learner YAML resolved by name or path, the task's objectives, and the policy contract of the
    task's robot (observation/action labels, units, bounds).  With ``reward_machine`` (a
    reward-machine task spec) the task is in the product of that MORM, as the actors run it
    (:func:`~morl_robot.envs.mo_env.open_task_env`): the machine one-hot joins the observation,
    the MORM objectives the task's, the machine the contract (its ``reward_machine`` field), and
    ``replay.crm`` relabels the replay (:func:`counterfactual_relabeller`); with
    ``training.worst_case_termination`` actors' terminations are learned at the task's worst rewards
    for the steps left (:mod:`~morl_robot.training.termination`).  ``options``: see :class:`LearnerSession`."""
    from morl_robot.envs.mo_env import make_sim_robot, open_task_env
    from morl_robot.learning.config import load_learner_config
    from morl_robot.resources import resolve_config
    from morl_robot.serving.contract import contract_for_env
    from morl_robot.tasks.registry import load_task

    path = resolve_config("learner", config_file)
    config = load_learner_config(path)
    task = load_task(task_name, task_config or None)
    robot = make_sim_robot(task)  # only for the spec: labels, units, action bounds
    env = open_task_env(task, reward_machine=reward_machine, robot=robot)
    try:
        objectives = list(env.objective_names)
        if config.objective_names and list(config.objective_names) != objectives:
            raise ConfigError(f"{path}: key 'objective_names': {config.objective_names} differ from the "
                              f"objectives of task '{task_name}' {objectives} (leave it empty to use the task's)")
        config.check_objectives(len(objectives), str(path))
        config = dataclasses.replace(config, objective_names=objectives)
        relabeller = counterfactual_relabeller(
            config, env, what=f"{path}: task '{task_name}'",
            hint="give the session a reward-machine task: morl-robot train --reward-machine SPEC, the "
                 "reward_machine parameter")
        contract = contract_for_env(env, config, policy_version=0, run_id=uuid.uuid4().hex[:12])
        propositions = tuple(env.product.propositions) if reward_machine else ()
        worst = worst_case_termination(env, len(objectives)) if config.training.worst_case_termination else None
    finally:
        env.close()
    demonstrator = None
    if config.training.demonstrations.episodes:  # the task's scripted controller: what the policy is cloned on
        from morl_robot.acting.demonstrator import task_demonstrator

        demonstrator = task_demonstrator(task_name, task.action_mode)
    session = LearnerSession(len(contract.observation_labels), ActionSpec.box(len(contract.action_labels)),
                             len(objectives), config, seed=seed, contract=contract, relabeller=relabeller,
                             propositions=propositions, demonstrator=demonstrator, **options)
    session.worst_case = worst
    return session
