"""The learner run both drivers share (in-process :func:`~morl_robot.training.loop.train`, the
learner node): :class:`LearnerSession` holds the run's state and composes one class per
responsibility — restore and checkpoints (:mod:`.checkpoints`), experience intake
(:mod:`.intake`), updates and roll-back (:mod:`.updates`), demonstrations (:mod:`.demonstrations`),
policy versions (:mod:`.snapshots`), distributed actors (:mod:`.distributed`), diagnostics
(:mod:`.diagnostics`).  The run directory: docs/reference/run_directory.md; the learning:
docs/explanation/mo_mpo.md.  No ROS here."""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.errors import ConfigError
from morl_robot.learning.config import MPOConfig
from morl_robot.learning.learner import MOMPOLearner
from morl_robot.learning.networks import ActionSpec
from morl_robot.learning.normalization import RunningNormalizer
from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
from morl_robot.learning.run_lock import write_error
from morl_robot.training.checkpoints import Checkpoints
from morl_robot.training.demonstrations import Demonstrations
from morl_robot.training.diagnostics import Diagnostics
from morl_robot.training.distributed import Distributed
from morl_robot.training.ingest import ExperienceIngest
from morl_robot.training.intake import Intake
from morl_robot.training.metrics import MetricsLogger
from morl_robot.training.run_directory import COUNTERS, Log, warnings_log
from morl_robot.training.snapshots import Snapshots
from morl_robot.training.termination import WorstCaseTermination, worst_case_termination
from morl_robot.training.updates import Updates

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.acting.demonstrator import Demonstrator
    from morl_robot.reward_machines.crm import CounterfactualRelabeller
    from morl_robot.serving.contract import PolicyContract


class LearnerSession(Checkpoints, Intake, Updates, Demonstrations, Snapshots, Distributed, Diagnostics):
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

    @contextlib.contextmanager
    def _writing(self, name: str) -> Iterator[None]:
        """An ``OSError`` while writing ``RUN_DIR/name`` as a :class:`WriteError` naming it."""
        try:
            yield
        except OSError as exc:
            raise write_error((self.run_dir or Path()) / name, exc) from None


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
    from morl_robot.envs.sparse import released_columns, released_objectives
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
        released = released_columns(released_objectives(env))  # PRISM: a sparse task's released flags
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
    session.released_columns = released
    session.context_spec = task.config.contexts  # issue 37: episodes.csv names a fixed context by it
    return session
