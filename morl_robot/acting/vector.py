"""A vectorized simulated actor: B task environments stepped by one batched policy forward.

Distributed MO-MPO (Abdolmaleki et al. 2020) learns off-policy from whatever actors feed its
replay; simulated actors are cheapest when one process steps many environments and runs the
policy once per step for all of them (the batched actors of Acme / Sample Factory).  Per step:

1. the B observations (B, O) (and, for an ε-conditioned policy, the B preferences (B, K), one
   sampled per episode and environment) go through :meth:`OnnxPolicy.explore_batch` once:
   actions a (B, D) in [-1, 1] and log μ(a|s) (B,);
2. every environment's command passes its own :class:`~morl_robot.safety.shield.SafetyShield`
   (the pure :class:`~morl_robot.safety.monitor.SafetyMonitor` rules from the robot's safety
   YAML, the same file the ``safety_monitor`` node reads; watchdogs off, as in lockstep): a
   clamped command is executed clamped, a command violating a hold- or e-stop-level rule is
   replaced *inline* by the control mode's hold command, which the robot executes for that
   control period (a zero twist for a Cartesian-velocity task is a task step, as on the graph;
   another mode's hold command is not), and the sampled action, not executed, gives no
   transition (the learner sees a sequence break); a latched e-stop ends the
   episode with termination ``safety`` (as the robot node's ``end_episode_on_estop``) and the
   next episode starts with a fresh, released monitor;
3. each environment is a :class:`~morl_robot.envs.task_runner.TaskRunner` (the robot node's core):
   episode ``e`` of environment ``b`` resets with seed ``seed + b·ENV_SEED_STRIDE + e``, so the
   experience's ``(actor, episode)`` columns name the seed of every row;
4. each environment has its own :class:`~morl_robot.acting.experience.ExperienceWriter` with actor
   id ``actor_index·B + b``: its chunks are the per-step actors' format exactly (one actor per
   chunk, per-environment episode boundaries; a chunk boundary is a bootstrapped sequence break
   on the learner's side); a reward-machine task's rows carry its machine columns;
5. demonstrations (``demonstrations`` N > 0, learning from demonstrations): the actor's first N
   episodes, over all its environments in the order they begin, are acted by the task's noisy
   demonstrator (:class:`~morl_robot.acting.demonstrator.NoisyDemonstrator`, as the policy server
   acts them) with ``policy_version`` :data:`~morl_robot.acting.experience.DEMONSTRATION_VERSION`;
   an environment whose next episode is not a demonstration waits (not stepped) until a policy
   newer than the one serving at that moment arrives: the learner's clone of the demonstrations.

Back-pressure: :meth:`VectorActor.must_wait` against the learner's
:class:`~morl_robot.acting.experience.Allowance` (the caller waits instead of stepping).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from morl_robot.acting.demonstrator import NoisyDemonstrator, task_demonstrator
from morl_robot.acting.experience import (
    DEMONSTRATION_VERSION,
    Allowance,
    Emit,
    ExperienceWriter,
    Pending,
    experience_columns,
)
from morl_robot.acting.policy import validate_candidate
from morl_robot.envs.mo_env import open_task_env
from morl_robot.envs.task_runner import StepRecord, TaskRunner
from morl_robot.errors import ConfigError
from morl_robot.safety.shield import SafetyShield
from morl_robot.serving.runtime import OnnxPolicy

#: Seeds of environment b start at ``seed + b·ENV_SEED_STRIDE`` (10 000 episodes before they meet
#: the next environment's).
ENV_SEED_STRIDE = 10_000


@dataclass
class VectorActorConfig:
    """Settings of one vectorized actor (session YAML section ``vector_actor``)."""

    task: str
    envs: int = 8  # B environments in this process
    actor_index: int = 0  # environment b's experience actor id is actor_index·envs + b
    seed: int = 0
    chunk_size: int = 64
    safety: str = ""  # robot name or safety YAML path ("" = the task's robot)
    task_config: str = ""  # task YAML ("" = the registry's)
    reward_machine: str = ""  # reward-machine task spec ("" = none): the task in its product machine
    demonstrations: int = 0  # this actor's first episodes (all environments) acted by the task's demonstrator
    demonstration_noise: float = 0.2  # σ of the demonstrator's Gaussian action noise (normalised units)

    def validate(self) -> None:
        if self.envs < 1:
            raise ConfigError(f"vector_actor.envs: must be >= 1, got {self.envs}")
        if self.chunk_size < 1:
            raise ConfigError(f"vector_actor.chunk_size: must be >= 1, got {self.chunk_size}")
        if self.actor_index < 0:
            raise ConfigError(f"vector_actor.actor_id: must be >= 0, got {self.actor_index}")
        if self.demonstrations < 0:
            raise ConfigError(f"vector_actor.demonstrations: must be >= 0 episodes, got {self.demonstrations}")
        if self.demonstrations and not self.demonstration_noise > 0:
            raise ConfigError(f"vector_actor.demonstration_noise: must be > 0, got {self.demonstration_noise}")


class VectorActor:
    """B simulated environments, their safety shields and experience writers (module docstring).

    Args:
        config: the actor's settings.
        emit: sends one chunk ``(table (R, C), columns)`` (the node publishes it on ``experience``).
    """

    def __init__(self, config: VectorActorConfig, emit: Emit) -> None:
        config.validate()
        self.config = config
        b = config.envs
        self.runners = [TaskRunner(env.robot, env, seed=config.seed + i * ENV_SEED_STRIDE)
                        for i, env in enumerate(open_task_env(config.task, config.task_config, config.reward_machine)
                                                for _ in range(b))]
        self.shields = [SafetyShield(r.env, config.safety or None) for r in self.runners]
        self.writers = [ExperienceWriter(config.actor_index * b + i, config.chunk_size, emit) for i in range(b)]
        self.allowance = Allowance(slack=config.chunk_size * b)
        self.policy: OnnxPolicy | None = None
        self.rng = np.random.default_rng(config.seed)
        self.objectives = tuple(self.runners[0].objective_names)
        self.observation_labels = tuple(self.runners[0].observation_labels)
        self._preferences: np.ndarray | None = None  # (B, K) of an ε-conditioned policy
        self.demonstrator: NoisyDemonstrator | None = None  # built from the first demonstrating step's contract
        self._demo = np.zeros(b, bool)  # environment b's episode is a demonstration
        self._waiting = np.zeros(b, bool)  # environment b waits for the learner's clone
        self.clone_after: int | None = None  # after the demonstrations: only a newer version acts
        self.counters = {"steps": 0, "env_steps": 0, "held": 0, "safety_stops": 0, "episodes": 0,
                         "demonstration_episodes": 0, "demonstration_steps": 0}
        self.records: list[StepRecord] = [self._begin(i) for i in range(b)]

    # --- policy ------------------------------------------------------------------------------
    def install(self, candidate: OnnxPolicy) -> str:
        """Make ``candidate`` the running policy unless :func:`validate_candidate` objects (also:
        it must fit this task's observation labels and objectives); returns the reason ("" = installed)."""
        c = candidate.contract
        if tuple(c.observation_labels) != self.observation_labels:
            return "the policy's observation labels differ from the task's"
        if tuple(c.objective_names) != self.objectives:
            return f"the policy's objectives {list(c.objective_names)} differ from the task's {list(self.objectives)}"
        why = validate_candidate(self.policy, candidate, self.records[0].observation)
        if why:
            return why
        first = self.policy is None
        self.policy = candidate
        columns = experience_columns(c.input_labels, c.action_labels, self.objectives, self.runners[0].machine_labels)
        for w in self.writers:
            w.set_columns(columns)
        if first and candidate.preferences is not None:
            self._preferences = np.stack([candidate.preferences.sample(self.rng) for _ in self.runners])
        return ""

    # --- stepping ----------------------------------------------------------------------------
    def must_wait(self) -> bool:
        """Whether the learner's allowance is used up by this actor's environments."""
        return self.allowance.must_wait(self.sent, sum(len(w.rows) for w in self.writers))

    def acknowledged(self, received: dict[int, int]) -> int:
        """Of the learner's rows received per actor id, the ones from this actor's environments."""
        return sum(received.get(w.actor_id, 0) for w in self.writers)

    def awaiting_clone(self) -> bool:
        """Whether every environment waits for the learner's policy cloned from the demonstrations
        (the version serving when the first one began waiting is noted; a newer one ends the waits)."""
        policy = self.policy
        if policy is not None and self._waiting.any():
            if self.clone_after is None:
                self.clone_after = policy.version
            elif policy.version > self.clone_after:
                self._waiting[:] = False
        return bool(self._waiting.all())

    @property
    def sent(self) -> int:
        """Transitions emitted so far (all environments)."""
        return sum(w.sent for w in self.writers)

    def step(self) -> int:
        """One control period of every environment (one policy forward); returns the task steps taken."""
        policy = self.policy
        if policy is None:
            raise RuntimeError("no policy installed")
        self.awaiting_clone()  # environments waiting for the clone: does it act now?
        obs = np.stack([r.observation for r in self.records])  # (B, O)
        prefs = self._preferences
        if (self._demo | self._waiting).all():  # no environment acts the policy this step
            actions, log_probs = np.zeros((len(obs), len(policy.contract.action_labels))), np.zeros(len(obs))
        else:
            actions, log_probs = policy.explore_batch(obs, self.rng, None if prefs is None else prefs)
        features = (np.stack([policy.preferences.features(e) for e in prefs]).astype(np.float64)
                    if prefs is not None and policy.preferences is not None else np.zeros((len(obs), 0)))
        taken = 0
        for i, (runner, shield, writer) in enumerate(zip(self.runners, self.shields, self.writers)):
            if self._waiting[i]:
                continue
            rec = self.records[i]
            version = policy.version
            if self._demo[i]:
                actions[i], log_probs[i] = self._demonstrate(obs[i], policy)
                version = DEMONSTRATION_VERSION
            writer.acted(Pending(obs[i], actions[i], float(log_probs[i]), version, rec.episode, rec.step,
                                 features[i]))
            command = shield.command(actions[i], rec.state.stamp)
            if shield.estopped:  # a latched stop ends the episode ('safety'); the robot did not move
                rec = runner.end_episode("safety")
                self.counters["safety_stops"] += 1
            else:
                if shield.held:  # the hold command replaces the policy's within this period
                    writer.pending = None  # the sampled action was not executed: no transition
                    self.counters["held"] += 1
                rec = runner.step(command.values, command.labels) if command is not None else runner.hold()
                shield.observe(rec.state)
                if tuple(command.labels if command is not None else ()) != runner.action_labels:
                    self.records[i] = rec  # a hold in the control mode's own command: no task step
                    continue
            taken += 1
            assert rec.reward is not None and rec.observation is not None
            writer.observe(rec.episode, rec.step, rec.reward, rec.observation, rec.terminated, rec.truncated,
                           runner.machine_values(rec))
            self.records[i] = self._begin(i) if rec.done else rec
        self.counters["steps"] += 1
        self.counters["env_steps"] += taken
        return taken

    def _demonstrate(self, obs: np.ndarray, policy: OnnxPolicy) -> tuple[np.ndarray, float]:
        """The noisy demonstrator's normalised action and log μ(a|s) at raw observation ``obs``."""
        if self.demonstrator is None:  # the running contract's task (ConfigError without a demonstrator)
            c = policy.contract
            self.demonstrator = NoisyDemonstrator(task_demonstrator(c.task, c.action_mode),
                                                  self.config.demonstration_noise, self.config.seed + 5)
        a, log_mu = self.demonstrator.act(obs)
        self.counters["demonstration_steps"] += 1
        return a.astype(np.float64), log_mu

    def _begin(self, i: int) -> StepRecord:
        """Environment i's next episode: reset (its next seed), a fresh released monitor, (ε-
        conditioned) a new preference, and whether the demonstrator acts it or it waits for the
        learner's clone."""
        rec = self.runners[i].reset()
        self.shields[i].begin(rec.state)
        if self._preferences is not None and self.policy is not None and self.policy.preferences is not None:
            self._preferences[i] = self.policy.preferences.sample(self.rng)
        self.counters["episodes"] += 1
        if self.config.demonstrations:
            self._demo[i] = self.counters["demonstration_episodes"] < self.config.demonstrations
            self.counters["demonstration_episodes"] += int(self._demo[i])
            # the demonstrations are all begun: wait for the clone unless it is serving already
            self._waiting[i] = not self._demo[i] and not (self.clone_after is not None and self.policy is not None
                                                          and self.policy.version > self.clone_after)
        return rec

    def episode_seed(self, actor: int, episode: int) -> int:
        """The reset seed of ``episode`` of the environment whose experience actor id is ``actor``."""
        return self.runners[actor - self.config.actor_index * self.config.envs].episode_seed(episode)

    def flush(self) -> None:
        """Emit every environment's rows held (the pending transitions are dropped)."""
        for w in self.writers:
            w.pending = None
            w.flush()

    def close(self) -> None:
        for r in self.runners:
            r.close()
