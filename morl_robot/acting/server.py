"""The policy server's core (no ROS): one ONNX policy acting on task steps, in time, or holding.

:class:`PolicyServerCore` is everything ``policy_server`` decides; the node only decodes
``task_step`` into a :class:`~morl_robot.acting.experience.TaskStep`, calls the core and turns
what it sends (commands, heartbeats, experience chunks, log lines) into messages.

* **Acting.**  Mode ``deploy`` acts deterministically; mode ``train`` samples
  ``clip(mean + std·ξ, −1, 1)`` with log μ(a|s) (Retrace's behaviour probability) and writes
  transitions with the :class:`~morl_robot.acting.experience.ExperienceWriter`.  Timing
  ``lockstep`` answers each task step as it arrives (a repeated (episode, step) gets the same
  command again; a terminal step gets none: the robot resets); timing ``realtime`` acts on the
  newest step at every :meth:`PolicyServerCore.tick` of a :class:`TickSchedule`.
* **Holding.**  Never garbage: no model, no or a stale observation (older than
  ``observation_timeout``), a layout that does not match the contract, a non-finite observation
  or model output mean *hold* — nothing is sent, the reason is counted (``held_<reason>``,
  :data:`HOLD_REASONS`) and logged when it changes.  The heartbeat goes out after every handled
  step or tick while a model is loaded, except on a policy fault (:data:`POLICY_FAULTS`), so the
  safety monitor's watchdog turns a broken policy into its latched stop.
* **Models.**  A new model (file or learner snapshot) replaces the running one only if
  :func:`~morl_robot.acting.policy.validate_candidate` accepts it; otherwise it is rejected with
  the reason and the running one keeps serving.
* **Preference** (ε-conditioned policies, contract field ``preferences``).  Deploy: the ε to act
  under, checked against the contract's ranges (:meth:`PreferenceInputs.check`), each change
  logged ``old -> new``; empty = the box's centre.  Train: one ε sampled per episode
  (log-uniform, :meth:`PreferenceInputs.sample`), its features recorded with the observation.
* **Demonstrations** (train, ``demonstrations`` > 0: learning from demonstrations): this actor's
  first ``demonstrations`` episodes are acted whole by the task's scripted demonstrator with
  Gaussian noise ``demonstration_noise`` (:class:`~morl_robot.acting.demonstrator.NoisyDemonstrator`,
  commands scaled to robot units by the running contract), their rows sent with ``policy_version``
  :data:`~morl_robot.acting.experience.DEMONSTRATION_VERSION`; then acting waits (hold
  ``no_model``) for a policy version newer than the one serving at that moment: the learner's
  clone of the demonstrations.  The safety monitor sees these commands like any other.
* **Back-pressure** (train + lockstep): a step is held back while this actor has used up the
  learner's :class:`~morl_robot.acting.experience.Allowance`, and acted on when it grows.
"""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.acting.demonstrator import NoisyDemonstrator, task_demonstrator
from morl_robot.acting.experience import (
    DEMONSTRATION_VERSION,
    Allowance,
    Emit,
    ExperienceWriter,
    Pending,
    TaskStep,
    experience_columns,
)
from morl_robot.acting.policy import Loaded, validate_candidate
from morl_robot.errors import ConfigError
from morl_robot.node_settings import PolicyServerSettings
from morl_robot.serving.contract import ContractError, PolicyContract, PreferenceError
from morl_robot.serving.runtime import (
    NonFiniteInput,
    NonFiniteOutput,
    OnnxPolicy,
    PolicyLoadError,
    PolicyOutput,
)
from morl_robot.tasks.base import scale_action
from morl_robot.throttle import RateLimitedLog

#: Hold reasons (counters ``held_<reason>``).
HOLD_REASONS = ("no_model", "missing_input", "bad_layout", "non_finite_input", "non_finite_output")
#: Hold reasons that stop the heartbeat (the policy itself is at fault).
POLICY_FAULTS = ("non_finite_output", "bad_layout")

#: ``log(level, message)``, level one of debug/info/warning/error.
Log = Callable[[str, str], None]
#: ``send_command(command (D,) robot units, contract, key)``; ``key`` = the (episode, step) answered
#: (lockstep) or None (realtime).
SendCommand = Callable[[np.ndarray, PolicyContract, tuple[int, int] | None], None]


def _percentile_ms(samples: deque[float], q: float) -> float:
    values = list(samples)  # one C-level copy: the loop thread may append meanwhile
    return float(np.percentile(values, q) * 1e3) if values else float("nan")


def use_fifo_scheduling(priority: int) -> str:
    """Run the calling thread under SCHED_FIFO at ``priority`` (1–99; 0 = leave it), as
    ros2_control does for its loop; returns why not ("" = done or not asked)."""
    if priority <= 0:
        return ""
    try:  # Linux: pid 0 = the calling thread
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (AttributeError, OSError) as exc:
        return f"realtime_priority {priority}: cannot use SCHED_FIFO ({exc}); running with normal scheduling"
    return ""


class TickSchedule:
    """Fixed-rate tick slots on an injected clock: tick k is due at t0 + k·period (t0 = the clock
    at construction).  A tick that finishes after the next one was due, or a period skipped
    entirely (the process was starved), is a deadline miss (:attr:`misses`)."""

    def __init__(self, period: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not period > 0:
            raise ValueError(f"tick period must be > 0 s, got {period}")
        self.period, self._clock, self._sleep = period, clock, sleep
        self.slot = clock() + period  # when the next tick is due
        self.misses = 0

    def wait(self) -> float:
        """Sleep until the next tick is due; returns the time it starts (whole periods already
        missed are counted and skipped)."""
        delay = self.slot - self._clock()
        if delay > 0:
            self._sleep(delay)
        now = self._clock()
        if now - self.slot >= self.period:
            skipped = int((now - self.slot) // self.period)
            self.misses += skipped
            self.slot += skipped * self.period
        return now

    def done(self) -> None:
        """The tick's work is done: a miss if the next tick is already overdue."""
        if self._clock() > self.slot + self.period:
            self.misses += 1
        self.slot += self.period


class PolicyServerCore:
    """What ``policy_server`` decides (module docstring).  Not thread-safe: the caller serialises
    calls (the node holds one lock around them).

    Args:
        settings: the node's parameters (read live: ``observation_timeout`` may change).
        send_command: publishes a command (``SendCommand``).
        send_heartbeat: publishes a heartbeat naming the running model's version.
        emit_experience: publishes an experience chunk (mode train).
        log: ``log(level, message)``.
        show_preference: makes the ``preference`` parameter show the ε acted under when it was
            left empty (the box's centre).
        clock: monotonic seconds (observation ages, receive-to-send latency).
    """

    def __init__(self, settings: PolicyServerSettings, send_command: SendCommand,
                 send_heartbeat: Callable[[int], None], emit_experience: Emit, log: Log,
                 show_preference: Callable[[list[float]], None] = lambda value: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._send_command, self._send_heartbeat, self._log = send_command, send_heartbeat, log
        self._show_preference, self._clock = show_preference, clock
        self._bad_input = RateLimitedLog(log, clock=clock)
        self.policy: OnnxPolicy | None = None
        self.active = False
        self.rng = np.random.default_rng(settings.seed)
        self.train = settings.mode == "train"
        self.writer = ExperienceWriter(settings.actor_id, settings.chunk_size, emit_experience) if self.train else None
        self.allowance = Allowance(slack=settings.chunk_size if self.train else 0)
        self.schedule: TickSchedule | None = None
        self.period = 0.0  # s between realtime ticks
        self.latest: TaskStep | None = None  # the newest step and when it was received
        self.latest_time = 0.0
        self._verified: tuple[tuple[str, ...], tuple[str, ...], PolicyContract] | None = None
        self._last: tuple[tuple[int, int], np.ndarray, PolicyContract] | None = None  # lockstep: the last answer
        self._answered: tuple[int, int] | None = None
        self._waiting: TaskStep | None = None  # held back until the learner's allowance grows
        self._preference_episode: int | None = None  # train: the episode the preference was sampled for
        self.demonstrator: NoisyDemonstrator | None = None  # train: built from the first model's task
        self._demo_episode: int | None = None  # the episode the demonstrator decision was made for
        self._demonstrating = False  # the demonstrator acts the current episode
        self._clone_after: int | None = None  # after the demonstrations: act only with a newer version
        self.holding = ""  # current hold reason ("" = serving)
        self.fault = ""  # the policy fault that stops the heartbeat until the policy acts again ("" = none)
        self.last_error = ""
        self.inference: deque[float] = deque(maxlen=2000)  # s per forward pass
        self.latency: deque[float] = deque(maxlen=2000)  # s from receiving a step to sending its command
        self.counters = {"ticks": 0, "commands": 0, "repeated_commands": 0, "held": 0,
                         **{f"held_{r}": 0 for r in HOLD_REASONS}, "reloads": 0, "rejected_models": 0,
                         "back_pressure_waits": 0, "preference_changes": 0, "rejected_preferences": 0,
                         "preference_samples": 0, "demonstration_episodes": 0, "demonstration_steps": 0}

    # --- lifecycle -----------------------------------------------------------------------------
    def open_model(self) -> None:
        """Load the ``policy`` file of the settings (required in mode deploy) under the
        ``preference`` parameter; :class:`ConfigError` naming the parameter at fault."""
        path = self.settings.policy
        if not path:
            if not self.train:
                raise ConfigError("parameter policy: deploy mode needs an ONNX policy file (morl-robot export)")
            return
        policy = OnnxPolicy.from_file(path)
        try:
            self._apply_initial_preference(policy)
        except PreferenceError as exc:
            raise ConfigError(f"parameter preference: {exc}") from None
        self.policy = policy
        self._log("info", f"loaded {path}: {policy.contract.summary()}")

    def start_realtime(self, clock: Callable[[], float] = time.monotonic,
                       sleep: Callable[[float], None] = time.sleep) -> TickSchedule:
        """The tick schedule at ``rate`` Hz (0 = the running contract's control rate)."""
        rate = self.settings.rate or (self.policy.contract.control_rate if self.policy is not None else 0.0)
        if rate <= 0:
            raise ConfigError("parameter rate: realtime timing without a policy file needs an explicit rate (Hz)")
        self.period = 1.0 / rate
        self.schedule = TickSchedule(self.period, clock, sleep)
        return self.schedule

    def stop(self) -> None:
        """Deactivated: stop acting; the half-known transition is dropped, the rows held go out."""
        self.active = False
        if self.writer is not None:
            self.writer.pending = None
            self.writer.flush()

    # --- steps and ticks -----------------------------------------------------------------------
    def on_step(self, ts: TaskStep, received: float) -> None:
        """A task step arrived at ``received`` (clock time)."""
        self.latest, self.latest_time = ts, received
        if not self.active:
            return
        if self.settings.timing == "lockstep":
            self._lockstep(ts, received)
        elif self.writer is not None:  # realtime training: complete transitions as steps arrive
            self._complete(ts)

    def tick(self, now: float) -> None:
        """One realtime tick at ``now``: act on the newest observation, or hold and say why."""
        self.counters["ticks"] += 1
        ts = self.latest
        if self.policy is None:
            self.hold("no_model", "no policy yet (waiting for policy_snapshot)")
        elif ts is None:
            self.hold("missing_input", "no task_step received yet")
        elif now - self.latest_time > self.settings.observation_timeout:
            self.hold("missing_input", f"newest task_step is {now - self.latest_time:.3f} s old "
                                       f"(observation_timeout {self.settings.observation_timeout} s)")
        elif not (ts.terminated or ts.truncated):  # a terminal step is replaced by the reset's step 0
            self._act(ts, self.latest_time)
        self._heartbeat()

    def hold(self, reason: str, why: str) -> None:
        """Send nothing for this step or tick; count the reason, log it when it changes."""
        self.counters["held"] += 1
        self.counters[f"held_{reason}"] += 1
        if reason in POLICY_FAULTS:
            self.fault = why  # kept through other holds (a stale input) until the policy acts finitely again
        if why != self.last_error:
            self._log("warning" if reason in ("no_model", "missing_input") else "error", f"holding ({reason}): {why}")
        self.holding, self.last_error = reason, why

    def _lockstep(self, ts: TaskStep, received: float) -> None:
        key = (ts.episode, ts.step)
        if self._last is not None and self._last[0] == key:
            self._send_command(self._last[1], self._last[2], key)  # the robot re-sent the step: same command
            self.counters["repeated_commands"] += 1
        elif self.policy is None:
            self.hold("no_model", "no policy yet (waiting for policy_snapshot)")
            return
        elif ts.terminated or ts.truncated:  # no command: the robot resets and sends step 0
            self._complete(ts)
            self._answered, self._last = key, None
        else:
            self._complete(ts)
            if self.settings.back_pressure and self._must_wait():
                self._waiting = ts  # acted on when the learner's allowance grows (on_allowance)
                self.counters["back_pressure_waits"] += 1
                self._heartbeat()
                return
            self._waiting = None
            self._act(ts, received)
        self._heartbeat()

    def _complete(self, ts: TaskStep) -> None:
        """Close the pending transition with this step (train)."""
        if self.writer is not None:
            self.writer.observe(ts.episode, ts.step, ts.reward, ts.observation, ts.terminated, ts.truncated,
                                ts.machine)

    def _heartbeat(self) -> None:
        """Liveness while a model is loaded and not at fault: missing or non-finite sensor input
        (which the monitor sees itself) keeps it, a broken policy stops it until it acts finitely
        again (or another model is installed), whatever holds come between, so the monitor's
        heartbeat watchdog latches its stop."""
        if self.policy is not None and not self.fault:
            self._send_heartbeat(self.policy.version)

    # --- back-pressure -------------------------------------------------------------------------
    def _must_wait(self) -> bool:
        w = self.writer
        return w is not None and self.allowance.must_wait(w.sent, len(w.rows))

    def on_allowance(self, received: float, allowed: float, acknowledged: dict[int, int] | None = None) -> None:
        """The learner's ``experience_allowance`` (with the rows it received per actor id, if it
        says); a step held back is acted on once it allows."""
        ack = None if acknowledged is None else acknowledged.get(self.settings.actor_id, 0)
        self.allowance.update(received, allowed, self.writer.sent if self.writer is not None else 0, ack)
        ts = self._waiting
        if ts is not None and self.active and self.policy is not None and not self._must_wait():
            self._waiting = None
            self._act(ts, self._clock())

    # --- acting --------------------------------------------------------------------------------
    def _layout_matches(self, ts: TaskStep) -> bool:
        """The step's observation labels (train: and objectives) against the running contract,
        checked once per (layout, contract)."""
        assert self.policy is not None
        c = self.policy.contract
        v = self._verified
        if v is not None and v[2] is c and v[0] == ts.observation_labels and v[1] == ts.objectives:
            return True
        if ts.observation_labels != tuple(c.observation_labels):
            got, want = ts.observation_labels, c.observation_labels
            i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            self.hold("bad_layout", f"task_step observation labels do not match the policy contract ({len(got)} "
                                    f"labels, contract {len(want)}; first difference at index {i}: "
                                    f"{got[i] if i < len(got) else '(none)'!r} vs "
                                    f"{want[i] if i < len(want) else '(none)'!r})")
            return False
        if self.train and ts.objectives != tuple(c.objective_names):
            self.hold("bad_layout", f"task_step objectives {list(ts.objectives)} differ from the policy "
                                    f"contract's {c.objective_names}")
            return False
        if self.writer is not None:  # the rows so far keep their columns
            self.writer.set_columns(experience_columns(c.input_labels, c.action_labels, ts.objectives,
                                                       ts.machine_labels))
        self._verified = (ts.observation_labels, ts.objectives, c)
        return True

    def _act(self, ts: TaskStep, received: float) -> None:
        assert self.policy is not None
        if not self._layout_matches(ts):
            return
        policy = self.policy
        if self.train and policy.preferences is not None and ts.episode != self._preference_episode:
            policy.set_preference(policy.preferences.sample(self.rng))  # this episode's preference
            self._preference_episode = ts.episode
            self.counters["preference_samples"] += 1
        demonstrating = self._demonstrates(ts, policy)
        version = DEMONSTRATION_VERSION if demonstrating else policy.version
        if not demonstrating and self._clone_after is not None and policy.version <= self._clone_after:
            return self.hold("no_model", f"demonstrations done: waiting for the learner's policy cloned from them "
                                         f"(a version newer than {self._clone_after})")
        t0 = time.perf_counter()
        try:
            out = (self._demonstrate(ts, policy.contract) if demonstrating
                   else policy.act(ts.observation, deterministic=not self.train, rng=self.rng))
        except NonFiniteInput as exc:
            return self.hold("non_finite_input", str(exc))
        except NonFiniteOutput as exc:
            return self.hold("non_finite_output", str(exc))
        except ContractError as exc:
            return self.hold("bad_layout", str(exc))
        self.inference.append(time.perf_counter() - t0)
        lockstep = self.settings.timing == "lockstep"
        key = (ts.episode, ts.step)
        self._send_command(out.command, policy.contract, key if lockstep else None)
        self.latency.append(self._clock() - received)
        self.counters["commands"] += 1
        self._answered, self._last = key, (key, out.command, policy.contract)
        if self.writer is not None:
            features = (policy.preferences.features(policy.preference) if policy.preferences is not None
                        and policy.preference is not None else np.zeros(0, np.float32))
            self.writer.acted(Pending(ts.observation, out.action, out.log_prob, version, ts.episode, ts.step,
                                      features.astype(np.float64)))
        if self.holding or self.fault:
            self._log("info", f"serving again (was holding: {self.holding or 'policy fault'})")
            self.holding = self.fault = ""

    # --- demonstrations ------------------------------------------------------------------------
    def _demonstrates(self, ts: TaskStep, policy: OnnxPolicy) -> bool:
        """Whether the demonstrator acts this step: decided once per episode (this actor's first
        ``demonstrations`` episodes); at the first episode after them the serving version is
        noted, and only a newer one acts (the learner's clone)."""
        if not (self.train and self.settings.demonstrations):
            return False
        if ts.episode != self._demo_episode:
            self._demo_episode = ts.episode
            self._demonstrating = self.counters["demonstration_episodes"] < self.settings.demonstrations
            if self._demonstrating:
                self.counters["demonstration_episodes"] += 1
            elif self._clone_after is None:
                self._clone_after = policy.version
                self._log("info", f"{self.counters['demonstration_episodes']} demonstration episodes acted; waiting "
                                  f"for the learner's cloned policy (newer than version {policy.version})")
        return self._demonstrating

    def _demonstrate(self, ts: TaskStep, contract: PolicyContract) -> PolicyOutput:
        """The noisy demonstrator's action on this step, scaled to the contract's robot units."""
        if self.demonstrator is None:  # the task is the running contract's (ConfigError without a demonstrator)
            self.demonstrator = NoisyDemonstrator(task_demonstrator(contract.task, contract.action_mode),
                                                  self.settings.demonstration_noise,
                                                  self.settings.seed + 5)
        if not np.all(np.isfinite(ts.observation)):
            raise NonFiniteInput("the task_step observation is not finite (the demonstrator holds)")
        a, log_mu = self.demonstrator.act(ts.observation)
        action = a.astype(np.float64)
        self.counters["demonstration_steps"] += 1
        return PolicyOutput(command=scale_action(action, np.asarray(contract.action_low, np.float64),
                                                 np.asarray(contract.action_high, np.float64)),
                            action=action, log_prob=log_mu)

    # --- models --------------------------------------------------------------------------------
    def install_loaded(self, loaded: Sequence[Loaded]) -> None:
        """Models opened by the :class:`~morl_robot.acting.policy.ModelLoader`: install or reject
        each; a lockstep robot waiting for its first model gets its answer."""
        for item in loaded:
            if item.policy is None:
                self.reject(item.source, item.error)
            else:
                self.install(item.policy, item.source)
        ts = self.latest
        if (self.active and self.policy is not None and ts is not None and self.settings.timing == "lockstep"
                and (ts.episode, ts.step) != self._answered):
            self._lockstep(ts, self.latest_time)

    def install(self, candidate: OnnxPolicy, source: str) -> bool:
        """Make ``candidate`` the running model if it is compatible and acts finitely on the newest
        observation (keeping the preference acted under); returns whether it was accepted."""
        ts = self.latest
        why = validate_candidate(self.policy, candidate, ts.observation if ts is not None and ts.observation_labels
                                 == tuple(candidate.contract.observation_labels) else None)
        if why:
            self.reject(source, why)
            return False
        try:
            if self.policy is not None and self.policy.preference is not None:
                candidate.set_preference(self.policy.preference)  # compatible: the same preference box
            elif self.policy is None:
                self._apply_initial_preference(candidate)
        except PreferenceError as exc:
            self.reject(source, f"parameter preference: {exc}")
            return False
        old = self.policy.version if self.policy is not None else None
        self.policy, self.fault = candidate, ""  # a new model is not at the old one's fault
        self.counters["reloads"] += 1
        self._log("info", f"policy version {candidate.version} from {source} now serving (was {old})")
        return True

    def reject(self, source: str, why: str) -> None:
        self.counters["rejected_models"] += 1
        self.last_error = f"rejected model from {source}: {why}"
        self._log("error", self.last_error + " — the running model keeps serving" if self.policy is not None
                  else self.last_error)

    def load_file(self, path: str) -> tuple[bool, str]:
        """Reload from a file now (parameter change, ``~/reload``): (accepted, message)."""
        if not path:
            return False, "empty policy path"
        source = f"file {path}"
        try:
            candidate = OnnxPolicy.from_file(Path(path), self.policy.contract if self.policy is not None else None)
        except (PolicyLoadError, ContractError) as exc:
            self.reject(source, str(exc))
            return False, str(exc)
        if not self.install(candidate, source):
            return False, self.last_error
        return True, f"policy version {candidate.version} from {path} now serving"

    # --- preference (ε-conditioned policy) -----------------------------------------------------
    def _apply_initial_preference(self, policy: OnnxPolicy) -> None:
        """The first model acts under the ``preference`` setting (:class:`PreferenceError` if it
        does not fit); an empty one means the box's centre, which the parameter then shows (train:
        nothing, the preference is sampled per episode)."""
        if self.train:
            return
        value = list(self.settings.preference or [])
        if value:
            policy.set_preference(value)
        elif policy.preference is not None:
            self._show_preference([float(x) for x in policy.preference])

    def set_preference(self, value: Any, source: str = "parameter") -> tuple[bool, str]:
        """Act under ε = ``value`` from now on if the running contract allows it: (accepted, reason).
        Empty = the box's centre.  Refusals are counted and logged, changes logged old -> new."""
        values = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else value
        policy = self.policy
        if self.train:
            if values == []:
                return True, "no preference"
            self.counters["rejected_preferences"] += 1
            why = ("mode train samples a preference per episode (log-uniform in the policy's ranges); "
                   "the preference parameter applies to mode deploy")
            self._bad_input(f"preference/{source}", "error", f"refused preference from the {source}: {why}")
            return False, why
        if policy is None:
            return True, "no model yet: checked when one loads"
        try:
            new = policy.check_preference(policy.preferences.centre if policy.conditioned and values == [] else
                                          values, f"preference from the {source}")
        except PreferenceError as exc:
            if values == []:
                return True, "no preference"  # an unconditioned model and the empty default
            self.counters["rejected_preferences"] += 1
            self.last_error = str(exc)
            self._bad_input(f"preference/{source}", "error", f"refused {exc}")
            return False, str(exc)
        assert policy.preferences is not None and policy.preference is not None
        old = policy.preference
        policy.set_preference(new)
        self.counters["preference_changes"] += 1
        self._log("info", f"preference ({source}): {policy.preferences.describe(old)} -> "
                          f"{policy.preferences.describe(new)}")
        return True, "accepted"

    def preference_message(self, values: np.ndarray, labels: Sequence[str]) -> np.ndarray | None:
        """ε of a ``preference`` message (labels: objective names in any order, or none), or None
        if the running model cannot take it (counted and logged: :meth:`ignore_preference`)."""
        policy = self.policy
        try:
            if policy is None:
                raise PreferenceError("no model loaded yet")
            if policy.preferences is None:
                policy.check_preference(values, "preference message")  # says: not conditioned
            assert policy.preferences is not None
            return policy.preferences.check_labelled(values, tuple(labels), "preference message")
        except (PreferenceError, ValueError) as exc:
            self.ignore_preference(str(exc))
            return None

    def ignore_preference(self, why: str) -> None:
        """An invalid ``preference`` message: counted; logged at most once a second (a flood of
        them is one line a second with the count, :class:`RateLimitedLog`)."""
        self.counters["rejected_preferences"] += 1
        self._bad_input("preference/topic", "error", f"ignored preference message: {why}")

    # --- diagnostics ---------------------------------------------------------------------------
    def status(self) -> tuple[str, str, dict[str, Any]]:
        """(level, message, values) for ``/diagnostics``."""
        policy, w = self.policy, self.writer
        values: dict[str, Any] = {
            "mode": self.settings.mode, "timing": self.settings.timing, "active": self.active,
            "policy_version": policy.version if policy is not None else -1,
            "task": policy.contract.task if policy is not None else "",
            "model_sha256": policy.digest[:12] if policy is not None else "",
            "rate_hz": 1.0 / self.period if self.period else 0.0,
            "inference_p50_ms": _percentile_ms(self.inference, 50),
            "inference_p99_ms": _percentile_ms(self.inference, 99),
            "receive_to_publish_p50_ms": _percentile_ms(self.latency, 50),
            "receive_to_publish_p99_ms": _percentile_ms(self.latency, 99),
            **self.counters,
            "deadline_misses": self.schedule.misses if self.schedule is not None else 0,
            "transitions": w.transitions if w is not None else 0,
            "dropped_transitions": w.dropped_transitions if w is not None else 0,
            "chunks": w.chunks if w is not None else 0,
            "holding": self.holding, "last_error": self.last_error,
        }
        if policy is not None and policy.preferences is not None and policy.preference is not None:
            values["preference"] = policy.preferences.describe(policy.preference)
            values.update({f"preference/{n}": float(v) for n, v in zip(policy.preferences.names, policy.preference)})
        if policy is None:
            return ("error" if self.settings.mode == "deploy" else "warn"), "no policy loaded", values
        if self.holding in ("non_finite_output", "non_finite_input", "bad_layout"):
            return "error", f"holding: {self.holding}: {self.last_error}", values
        if self.holding:
            return "warn", f"holding: {self.holding}", values
        return "ok", f"serving policy version {policy.version} ({self.settings.mode})", values
