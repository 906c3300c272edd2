"""``policy_server``: an ONNX policy on the ROS graph, deterministic (deploy) or exploring (train).

The node is a thin shell around :class:`~morl_robot.serving.runtime.OnnxPolicy` (onnxruntime, one
intra-op and one inter-op thread, warmed up at configure).  It reads the observation from
``task_step`` (the robot node runs the task's observation function on both backends; the
labels are checked against the model's contract whenever a new layout arrives) and publishes
``command`` (labels = the contract's action labels, robot units) to the safety monitor.

Parameters:

* ``mode`` — ``deploy`` (deterministic action) or ``train`` (samples ``clip(mean + std·ξ, −1, 1)``,
  records ``log μ(a|s)``, completes transitions from the next ``task_step`` and publishes
  ``experience`` chunks of ``chunk_size`` rows, and at every episode end; columns
  :func:`morl_robot.acting.experience.experience_columns`, written by its
  :class:`~morl_robot.acting.experience.ExperienceWriter`).
* ``timing`` — ``lockstep`` (act on each ``task_step`` as it arrives; a repeated (episode, step)
  gets the same command again; terminal steps get none: the robot resets) or ``realtime`` (a loop
  thread ticking at the contract's control rate, or ``rate`` Hz, acts on the newest observation;
  one older than ``observation_timeout`` s is a missing input; a tick that ends after the next one
  was due, or a skipped period, counts as a deadline miss).
* ``policy`` — ONNX file (required in deploy mode; in train mode the first model may come on
  ``policy_snapshot``).  Setting it at run time (``ros2 param set``) or calling ``~/reload``
  reloads the file; ``policy_snapshot`` (std_msgs/UInt8MultiArray, latched, label
  ``policy_version=<n>``) hot-reloads learner snapshots, loaded on a worker thread so the loop
  never waits.  A new model must pass :meth:`PolicyContract.check_compatible` against the running
  one and give a finite action on the newest observation; otherwise it is rejected with the
  reason logged and in ``/diagnostics``, and the running model keeps serving.
* ``preference`` — an ε-conditioned policy (contract field ``preferences``) acts under this
  preference ε (one value per objective; empty = the box's geometric centre, which the parameter
  then shows).  Changeable while the robot runs, like the ``preference`` topic
  (std_msgs/Float64MultiArray, labels optional = objective names); both are checked against the
  contract's ranges (:meth:`PreferenceInputs.check`): an invalid parameter set is refused with the
  reason, an invalid message logged and ignored.  Each accepted change is logged (old → new) and
  the current preference is in ``/diagnostics`` (``preference/<objective>``).  An unconditioned
  policy refuses a preference.  In mode ``train`` the actor instead samples a preference per
  episode (log-uniform in the contract's ranges, :meth:`PreferenceInputs.sample`) and its
  experience rows carry the preference features after the observation (``obs/preference/<objective>``,
  the learner's network input); the parameter is then refused.
* ``actor_id``, ``chunk_size`` (64), ``seed``, ``observation_timeout`` (0.25 s), ``rate`` (0 = the
  contract's), ``realtime_priority`` (0; 1–99 runs the realtime loop thread under SCHED_FIFO, as
  ros2_control does for its loop, if the process may), ``diagnostics_period`` (1 s), ``autostart``.

Never garbage: a non-finite observation or model output, a layout that does not match the
contract, a stale observation or no model means *hold* — no command is published (the robot node
holds after its ``command_timeout``) — and the reason is counted and reported.  ``heartbeat``
(std_msgs/Header, ``frame_id`` = model version) goes out on every tick (realtime) or every handled
``task_step`` (lockstep) while a model is loaded — except while the policy itself is at fault
(non-finite output, an observation layout that does not fit), so the safety monitor's heartbeat
watchdog turns a broken policy into its latched stop.  ``/diagnostics`` carries the model version,
inference latency p50/p99, receive-to-publish latency, deadline misses, holds and rejections.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, Header, UInt8MultiArray
from std_srvs.srv import Trigger

from morl_robot.acting.experience import Allowance, ExperienceWriter, Pending
from morl_robot.acting.policy import ModelLoader, is_serving, validate_candidate
from morl_robot.errors import ConfigError
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    ManagedNode,
    log_at,
    run_node,
    steady_timer,
)
from morl_robot.serving.contract import ContractError, PolicyContract, PreferenceError
from morl_robot.serving.runtime import (
    NonFiniteInput,
    NonFiniteOutput,
    OnnxPolicy,
    PolicyLoadError,
)
from morl_robot.session.config import PolicyServerSettings

#: Parameters fixed once the node is configured (``policy`` and ``observation_timeout`` may change).
FIXED_WHILE_CONFIGURED = ("mode", "timing", "actor_id", "chunk_size", "seed", "rate", "diagnostics_period",
                          "realtime_priority")
#: Hold reasons (counters ``held_<reason>``).
HOLD_REASONS = ("no_model", "missing_input", "bad_layout", "non_finite_input", "non_finite_output")
#: Hold reasons that stop the heartbeat (the policy itself is at fault).
POLICY_FAULTS = ("non_finite_output", "bad_layout")
#: s between checks for a model loaded on the worker thread (also checked on every tick / task_step).
RELOAD_POLL_PERIOD = 0.05


def _percentile_ms(samples: deque[float], q: float) -> float:
    return float(np.percentile(np.fromiter(samples, float), q) * 1e3) if samples else float("nan")


class PolicyServer(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("policy_server", **kwargs)
        self.declare_settings(PolicyServerSettings)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.policy: OnnxPolicy | None = None
        self._configured = False
        self._active = False
        self._entities: list[tuple[str, Any]] = []
        self._loop_thread: threading.Thread | None = None
        self._stop_loop = threading.Event()
        self._lock = threading.RLock()  # state shared by the executor thread and the realtime loop
        self._timing = "lockstep"
        self._obs_timeout = 0.25
        self._diagnostics: DiagnosticsPublisher | None = None
        self._rng = np.random.default_rng(0)
        # newest observation
        self._latest: wire.TaskStep | None = None
        self._latest_time = 0.0
        # (label string, size, K, objectives, observation labels) of the newest task_step layout
        self._label_cache: tuple[str, int, int, tuple[str, ...], tuple[str, ...]] | None = None
        self._command_layout: tuple[PolicyContract, Any] | None = None  # (contract, layout of `command`)
        self._verified: tuple[str, PolicyContract] | None = None  # (label string, contract) that matched
        # lockstep
        self._last_key: tuple[int, int] | None = None
        self._last_command: Float64MultiArray | None = None
        # train: transitions → experience chunks (acting/experience.py)
        self._writer: ExperienceWriter | None = None
        self._period = 0.0  # s between realtime ticks
        # background loading of snapshots (acting/policy.py)
        self._loader = ModelLoader(lambda: self.policy)
        self._reload_poll: Any = None
        # reporting
        self._inference: deque[float] = deque(maxlen=2000)
        self._latency: deque[float] = deque(maxlen=2000)
        self._counters = {"ticks": 0, "commands": 0, "repeated_commands": 0, "deadline_misses": 0, "held": 0,
                          **{f"held_{r}": 0 for r in HOLD_REASONS}, "reloads": 0, "rejected_models": 0,
                          "back_pressure_waits": 0}
        # back-pressure (train + lockstep): the learner's experience_allowance
        self._allowance = Allowance(slack=0)
        self._waiting: wire.TaskStep | None = None  # the step held back until the learner catches up
        self._holding = ""  # current hold reason ("" = serving)
        self._last_error = ""
        self._preference_source = "parameter"  # who is setting the preference parameter (for the log)
        self._preference_episode: int | None = None  # train: the episode the current preference was sampled for
        self._counters.update(preference_changes=0, rejected_preferences=0, preference_samples=0)

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        mode, timing = self.settings.mode, self.settings.timing
        path = self.settings.policy
        if path:
            policy = OnnxPolicy.from_file(path)
            try:
                self._apply_initial_preference(policy)
            except PreferenceError as exc:
                raise ConfigError(f"parameter preference: {exc}") from None
            self.policy = policy
            self.get_logger().info(f"loaded {path}: {policy.contract.summary()}")
        elif mode == "deploy":
            raise ConfigError("parameter policy: deploy mode needs an ONNX policy file (morl-robot export)")
        self._rng = np.random.default_rng(self.settings.seed)
        self._timing, self._obs_timeout = timing, self.settings.observation_timeout
        self._pub_command = self.create_publisher(Float64MultiArray, "command", wire.COMMAND_QOS)
        self._pub_heartbeat = self.create_publisher(Header, "heartbeat", wire.COMMAND_QOS)
        self._pub_experience = (self.create_publisher(Float64MultiArray, "experience", wire.EXPERIENCE_QOS)
                                if mode == "train" else None)
        if self._pub_experience is not None:
            publish = self._pub_experience.publish
            self._writer = ExperienceWriter(self.settings.actor_id, self.settings.chunk_size,
                                            lambda table, columns: publish(wire.labelled_table(table, columns)))
            self._allowance = Allowance(slack=self.settings.chunk_size)
        self._entities = [
            ("publisher", self._pub_command), ("publisher", self._pub_heartbeat),
            ("subscription", self.create_subscription(Float64MultiArray, "task_step", self._on_task_step,
                                                      wire.SENSOR_QOS)),
            ("subscription", self.create_subscription(UInt8MultiArray, "policy_snapshot", self._on_snapshot,
                                                      wire.LATCHED_QOS)),
            ("service", self.create_service(Trigger, "~/reload", self._srv_reload)),
            ("subscription", self.create_subscription(Float64MultiArray, "preference", self._on_preference,
                                                      wire.COMMAND_QOS)),
        ]
        if self._pub_experience is not None:
            self._entities.append(("publisher", self._pub_experience))
            if timing == "lockstep" and self.settings.back_pressure:
                self._entities.append(("subscription", self.create_subscription(
                    Float64MultiArray, "experience_allowance", self._on_allowance, wire.LATCHED_QOS)))
        # rclpy's executor here has no guard conditions: a cheap poll picks up models loaded on the worker
        self._reload_poll = steady_timer(self, RELOAD_POLL_PERIOD, self._on_models_loaded)
        self._diagnostics = DiagnosticsPublisher(self, f"{self.get_name()}: policy", self._status,
                                                 period=self.settings.diagnostics_period)
        self._configured = True

    def activate(self) -> None:
        if self._timing == "realtime":
            rate = self.settings.rate or (self.policy.contract.control_rate if self.policy else 0.0)
            if rate <= 0:
                raise ConfigError("parameter rate: realtime timing without a policy file needs an explicit rate (Hz)")
            self._period = 1.0 / rate
            self._stop_loop.clear()
            self._loop_thread = threading.Thread(target=self._realtime_loop, name="policy_loop", daemon=True)
        self._active = True
        if self._loop_thread is not None:
            self._loop_thread.start()
            self.get_logger().info(f"realtime loop at {1.0 / self._period:g} Hz")

    def deactivate(self) -> None:
        self._active = False
        if self._loop_thread is not None:
            self._stop_loop.set()
            self._loop_thread.join(timeout=5.0)
            self._loop_thread = None
        with self._lock:
            if self._writer is not None:
                self._writer.pending = None
                self._writer.flush()

    def cleanup(self) -> None:
        if not self._configured:
            return
        for kind, entity in self._entities:
            getattr(self, f"destroy_{kind}")(entity)
        self._entities = []
        if self._reload_poll is not None:
            self.destroy_timer(self._reload_poll)
            self._reload_poll = None
        if self._diagnostics is not None:
            self._diagnostics.destroy()
            self._diagnostics = None
        self.policy = None
        self._latest, self._label_cache, self._verified, self._command_layout = None, None, None, None
        self._last_key, self._last_command, self._writer = None, None, None
        self._preference_episode = None
        self._configured = False

    def close(self) -> None:
        if self._active:
            self.deactivate()
        self.cleanup()

    # --- observations --------------------------------------------------------------------------
    def _decode(self, msg: Float64MultiArray) -> wire.TaskStep | None:
        """``task_step`` → :class:`wire.TaskStep`; the label string is split once per layout."""
        dims = msg.layout.dim
        cache = self._label_cache
        if cache is not None and len(dims) == 1 and dims[0].label == cache[0] and len(msg.data) == cache[1]:
            values = np.asarray(msg.data, dtype=np.float64)
            h, k = len(wire.TASK_STEP_HEADER), cache[2]
            return wire.TaskStep(episode=int(values[0]), step=int(values[1]), terminated=bool(values[2]),
                                 truncated=bool(values[3]), stamp=float(values[4]), reward=values[h:h + k],
                                 observation=values[h + k:], objectives=cache[3], observation_labels=cache[4])
        try:
            ts = wire.split_task_step(*wire.read_labelled(msg))
        except (wire.WireError, IndexError, ValueError) as exc:
            with self._lock:
                self._hold("bad_layout", f"malformed task_step: {exc}")
            return None
        size = len(wire.TASK_STEP_HEADER) + len(ts.objectives) + len(ts.observation_labels)
        self._label_cache = (dims[0].label, size, len(ts.objectives), ts.objectives, ts.observation_labels)
        return ts

    def _layout_matches(self, ts: wire.TaskStep) -> bool:
        """Check the task_step's observation labels (and, in train mode, objectives) against the
        running contract, once per (layout, contract)."""
        assert self.policy is not None and self._label_cache is not None
        if self._verified is not None and self._verified[0] == self._label_cache[0] \
                and self._verified[1] is self.policy.contract:
            return True
        c = self.policy.contract
        if ts.observation_labels != tuple(c.observation_labels):
            got, want = ts.observation_labels, c.observation_labels
            i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            self._hold("bad_layout", f"task_step observation labels do not match the policy contract ({len(got)} "
                                     f"labels, contract {len(want)}; first difference at index {i}: "
                                     f"{got[i] if i < len(got) else '(none)'!r} vs "
                                     f"{want[i] if i < len(want) else '(none)'!r})")
            return False
        if self._pub_experience is not None and ts.objectives != tuple(c.objective_names):
            self._hold("bad_layout", f"task_step objectives {list(ts.objectives)} differ from the policy "
                                     f"contract's {c.objective_names}")
            return False
        if self._writer is not None:  # the rows so far keep their columns
            self._writer.set_columns(wire.experience_columns(c.input_labels, c.action_labels, ts.objectives))
        self._verified = (self._label_cache[0], c)
        return True

    def _on_task_step(self, msg: Float64MultiArray) -> None:
        received = time.monotonic()
        ts = self._decode(msg)  # outside the lock: the realtime loop never waits for decoding
        if ts is not None:
            with self._lock:
                self._handle_task_step(ts, received)

    def _handle_task_step(self, ts: wire.TaskStep, received: float) -> None:
        self._latest, self._latest_time = ts, received
        if not self._active:
            return
        if self._timing == "lockstep":
            self._lockstep(ts, received)
        elif self._writer is not None:  # realtime training: complete transitions as steps arrive
            self._complete(ts)

    def _lockstep(self, ts: wire.TaskStep, received: float) -> None:
        key = (ts.episode, ts.step)
        if key == self._last_key and self._last_command is not None:
            self._pub_command.publish(self._last_command)  # the robot re-sent the step: same command
            self._counters["repeated_commands"] += 1
        elif self.policy is None:
            self._hold("no_model", "no policy yet (waiting for policy_snapshot)")
            return
        elif ts.terminated or ts.truncated:  # no command: the robot node resets and sends step 0
            if self._writer is not None:
                self._complete(ts)
            self._last_key, self._last_command = key, None
        else:
            if self._writer is not None:
                self._complete(ts)
                if self._must_wait():
                    self._waiting = ts  # acted on when the learner's allowance grows (_on_allowance)
                    self._counters["back_pressure_waits"] += 1
                    self._heartbeat()
                    return
            self._waiting = None
            self._act(ts, received)
        self._heartbeat()

    # --- back-pressure -------------------------------------------------------------------------
    def _must_wait(self) -> bool:
        """Whether this actor has used up the learner's ``experience_allowance`` (:class:`Allowance`)."""
        w = self._writer
        return w is not None and self._allowance.must_wait(w.sent, len(w.rows))

    def _on_allowance(self, msg: Float64MultiArray) -> None:
        allowance = wire.read_allowance(msg)
        if allowance is None:
            return
        received, allowed, acks = allowance
        with self._lock:
            self._allowance.update(received, allowed, self._writer.sent if self._writer is not None else 0,
                                   acks.get(self.settings.actor_id, 0))
            ts = self._waiting
            if ts is not None and self._active and self.policy is not None and not self._must_wait():
                self._waiting = None
                self._act(ts, time.monotonic())

    def _realtime_loop(self) -> None:
        """The realtime loop (its own thread, not an rclpy timer: the Python executor adds ~0.2 ms of
        dispatch and jitter per timer callback at 500 Hz).  Tick k is due at t0 + k·period; a tick
        that finishes after t0 + (k+1)·period, or a period skipped entirely, is a deadline miss."""
        period = self._period
        priority = self.settings.realtime_priority
        if priority > 0:
            try:  # this thread only (Linux: pid 0 = the calling thread)
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            except (AttributeError, OSError) as exc:
                self.get_logger().warning(f"realtime_priority {priority}: cannot use SCHED_FIFO ({exc}); "
                                          "running with normal scheduling")
        slot = time.monotonic() + period
        while not self._stop_loop.is_set():
            delay = slot - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = time.monotonic()
            if now - slot >= period:  # whole periods skipped (the process was starved)
                skipped = int((now - slot) // period)
                self._counters["deadline_misses"] += skipped
                slot += skipped * period
            with self._lock:
                if not self._active:
                    break
                try:
                    self._tick(now)
                except Exception as exc:  # noqa: BLE001 - a dead loop thread in a live process is the worst case
                    # no more commands or heartbeats from here: end the process so that the session
                    # (and the monitor's heartbeat watchdog) see a dead commander, not a silent one
                    print(f"[FATAL] [{self.get_name()}]: realtime loop failed: {type(exc).__name__}: {exc}",
                          file=sys.stderr, flush=True)
                    os._exit(70)
            if time.monotonic() > slot + period:
                self._counters["deadline_misses"] += 1
            slot += period

    def _tick(self, now: float) -> None:
        """One realtime tick: act on the newest observation, or hold and say why."""
        self._counters["ticks"] += 1
        ts = self._latest
        if self.policy is None:
            self._hold("no_model", "no policy yet (waiting for policy_snapshot)")
        elif ts is None:
            self._hold("missing_input", "no task_step received yet")
        elif now - self._latest_time > self._obs_timeout:
            self._hold("missing_input", f"newest task_step is {now - self._latest_time:.3f} s old "
                                        f"(observation_timeout {self._obs_timeout} s)")
        elif not (ts.terminated or ts.truncated):  # a terminal step is replaced by the reset's step 0
            self._act(ts, self._latest_time)
        self._heartbeat()

    # --- acting --------------------------------------------------------------------------------
    def _act(self, ts: wire.TaskStep, received: float) -> None:
        assert self.policy is not None
        if not self._layout_matches(ts):
            return
        policy = self.policy
        train = self._pub_experience is not None
        if train and policy.preferences is not None and ts.episode != self._preference_episode:
            policy.set_preference(policy.preferences.sample(self._rng))  # this episode's preference
            self._preference_episode = ts.episode
            self._counters["preference_samples"] += 1
        t0 = time.perf_counter()
        try:
            out = policy.act(ts.observation, deterministic=self._pub_experience is None, rng=self._rng)
        except NonFiniteInput as exc:
            self._hold("non_finite_input", str(exc))
            return
        except NonFiniteOutput as exc:
            self._hold("non_finite_output", str(exc))
            return
        except ContractError as exc:
            self._hold("bad_layout", str(exc))
            return
        self._inference.append(time.perf_counter() - t0)
        msg = self._command_message(out.command, policy, ts)
        self._pub_command.publish(msg)
        self._latency.append(time.monotonic() - received)
        self._counters["commands"] += 1
        self._last_command, self._last_key = msg, (ts.episode, ts.step)
        if self._writer is not None:
            features = (policy.preferences.features(policy.preference) if policy.preferences is not None
                        and policy.preference is not None else np.zeros(0, np.float32))
            self._writer.acted(Pending(ts.observation, out.action, out.log_prob, policy.version, ts.episode, ts.step,
                                       features.astype(np.float64)))
        if self._holding:
            self.get_logger().info(f"serving again (was holding: {self._holding})")
            self._holding = ""

    def _command_message(self, command: np.ndarray, policy: OnnxPolicy, ts: wire.TaskStep) -> Float64MultiArray:
        """``wire.labelled_array(command, action_labels)`` with the layout built once per contract;
        in lockstep the key of the answered task_step is appended (``wire.STEP_KEY_LABEL``)."""
        keyed = self._timing == "lockstep"
        if self._command_layout is None or self._command_layout[0] is not policy.contract:
            labels = tuple(policy.contract.action_labels) + ((wire.STEP_KEY_LABEL,) if keyed else ())
            layout = wire.labelled_array(np.zeros(len(labels)), labels).layout
            self._command_layout = (policy.contract, layout)
        msg = Float64MultiArray()
        msg.layout = self._command_layout[1]
        msg.data = command.tolist() + ([wire.step_key(ts.episode, ts.step)] if keyed else [])
        return msg

    def _hold(self, reason: str, why: str) -> None:
        self._counters["held"] += 1
        self._counters[f"held_{reason}"] += 1
        if why != self._last_error:
            level = "warning" if reason in ("no_model", "missing_input") else "error"
            log_at(self.get_logger(), level, f"holding ({reason}): {why}")
        self._holding, self._last_error = reason, why

    def _heartbeat(self) -> None:
        """Liveness for the safety monitor's watchdog: sent while a model is loaded and the server is
        not stuck on a policy fault (non-finite output, observation layout that does not fit), so a
        broken policy escalates to the monitor's latched stop, while missing or non-finite sensor
        input (which the monitor sees itself) does not."""
        if self.policy is not None and self._holding not in POLICY_FAULTS:
            self._pub_heartbeat.publish(Header(stamp=self.get_clock().now().to_msg(), frame_id=str(self.policy.version)))

    # --- experience (train) --------------------------------------------------------------------
    def _complete(self, ts: wire.TaskStep) -> None:
        """Close the pending transition with this step (acting/experience.py's writer)."""
        assert self._writer is not None
        self._writer.observe(ts.episode, ts.step, ts.reward, ts.observation, ts.terminated, ts.truncated)

    # --- hot reload ----------------------------------------------------------------------------
    def _on_snapshot(self, msg: UInt8MultiArray) -> None:
        label = msg.layout.dim[0].label if msg.layout.dim else ""
        data = bytes(msg.data)
        if not is_serving(self.policy, data):
            self._loader.request(data, f"policy_snapshot ({label or 'no version label'})")

    def _on_models_loaded(self) -> None:
        if not self._loader.ready():
            return
        with self._lock:
            self._install_loaded()

    def _install_loaded(self) -> None:
        for loaded in self._loader.take():
            if loaded.policy is None:
                self._reject(loaded.source, loaded.error)
            else:
                self._install(loaded.policy, loaded.source)
        ts = self._latest
        if (self._active and self.policy is not None and ts is not None and self._timing == "lockstep"
                and (ts.episode, ts.step) != self._last_key):
            self._lockstep(ts, self._latest_time)  # a robot waiting in lockstep for the first model

    def _install(self, candidate: OnnxPolicy, source: str) -> bool:
        """Make ``candidate`` the running model if it is compatible and acts finitely on the newest
        observation; returns whether it was accepted."""
        ts = self._latest
        why = validate_candidate(self.policy, candidate, ts.observation if ts is not None and ts.observation_labels
                                 == tuple(candidate.contract.observation_labels) else None)
        if why:
            self._reject(source, why)
            return False
        try:
            if self.policy is not None and self.policy.preference is not None:
                candidate.set_preference(self.policy.preference)  # compatible: the same preference box
            elif self.policy is None:
                self._apply_initial_preference(candidate)
        except PreferenceError as exc:
            self._reject(source, f"parameter preference: {exc}")
            return False
        old = self.policy.version if self.policy is not None else None
        self.policy = candidate
        self._counters["reloads"] += 1
        self.get_logger().info(f"policy version {candidate.version} from {source} now serving (was {old})")
        return True

    def _reject(self, source: str, why: str) -> None:
        self._counters["rejected_models"] += 1
        self._last_error = f"rejected model from {source}: {why}"
        self.get_logger().error(self._last_error + " — the running model keeps serving"
                                if self.policy is not None else self._last_error)

    def _load_file_now(self, path: str) -> tuple[bool, str]:
        """Synchronous reload from a file (parameter change, ``~/reload``): (accepted, message)."""
        if not path:
            return False, "empty policy path"
        source = f"file {path}"
        with self._lock:
            return self._load_file_locked(path, source)

    def _load_file_locked(self, path: str, source: str) -> tuple[bool, str]:
        try:
            candidate = OnnxPolicy.from_file(Path(path), self.policy.contract if self.policy is not None else None)
        except (PolicyLoadError, ContractError) as exc:
            self._reject(source, str(exc))
            return False, str(exc)
        if not self._install(candidate, source):
            return False, self._last_error
        return True, f"policy version {candidate.version} from {path} now serving"

    def _on_set_parameters(self, params: list[Any]) -> SetParametersResult:
        if not self._configured:
            return SetParametersResult(successful=True)
        for p in params:
            if p.name in FIXED_WHILE_CONFIGURED:
                return SetParametersResult(successful=False,
                                           reason=f"parameter '{p.name}' can only change while unconfigured")
            if p.name == "policy":
                ok, message = self._load_file_now(str(p.value))
                if not ok:
                    return SetParametersResult(successful=False, reason=message)
            if p.name == "observation_timeout":
                if not float(p.value) > 0:
                    return SetParametersResult(successful=False, reason="observation_timeout must be > 0 s")
                self._obs_timeout = float(p.value)
            if p.name == "preference":
                ok, message = self._set_preference(p.value)
                if not ok:
                    return SetParametersResult(successful=False, reason=message)
        return SetParametersResult(successful=True)

    # --- preference (ε-conditioned policy) -----------------------------------------------------
    def _apply_initial_preference(self, policy: OnnxPolicy) -> None:
        """The first model: act under the ``preference`` parameter (:class:`PreferenceError` if it
        does not fit); an empty one means the box's centre, which the parameter then shows (train
        mode: nothing, the preference is sampled per episode)."""
        if self.settings.mode == "train":
            return
        value = list(self.settings.preference or [])
        if value:
            policy.set_preference(value)
        elif policy.preference is not None:
            self.set_parameters([Parameter("preference", value=[float(x) for x in policy.preference])])

    def _set_preference(self, value: Any) -> tuple[bool, str]:
        """A new ``preference`` parameter value: checked against the running model's contract and
        applied, or refused with the reason (counted, logged)."""
        values = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else value
        with self._lock:
            policy = self.policy
            if self.settings.mode == "train":
                if values == []:
                    return True, "no preference"
                self._counters["rejected_preferences"] += 1
                why = ("mode train samples a preference per episode (log-uniform in the policy's ranges); "
                       "the preference parameter applies to mode deploy")
                self.get_logger().error(f"refused preference from the {self._preference_source}: {why}")
                return False, why
            if policy is None:
                return True, "no model yet: checked when one loads"
            try:
                new = policy.check_preference(policy.preferences.centre if policy.conditioned and values == [] else
                                              values, f"preference from the {self._preference_source}")
            except PreferenceError as exc:
                if values == []:
                    return True, "no preference"  # an unconditioned model and the empty default
                self._counters["rejected_preferences"] += 1
                self._last_error = str(exc)
                self.get_logger().error(f"refused {exc}")
                return False, str(exc)
            assert policy.preferences is not None and policy.preference is not None
            old = policy.preference
            policy.set_preference(new)
            self._counters["preference_changes"] += 1
        self.get_logger().info(f"preference ({self._preference_source}): {policy.preferences.describe(old)} -> "
                               f"{policy.preferences.describe(new)}")
        return True, "accepted"

    def _on_preference(self, msg: Float64MultiArray) -> None:
        """``preference`` topic: becomes a ``preference`` parameter set (the same checks; the
        parameter shows the newest preference); an invalid message is logged and ignored."""
        policy = self.policy
        try:
            labelled = bool(msg.layout.dim) and bool(msg.layout.dim[0].label)
            values, labels = wire.read_labelled(msg) if labelled else (np.asarray(msg.data, np.float64), ())
            if policy is None:
                raise PreferenceError("no model loaded yet")
            if policy.preferences is None:
                policy.check_preference(values, "preference message")  # says: not conditioned
            assert policy.preferences is not None
            eps = policy.preferences.check_labelled(values, labels, "preference message")
        except (PreferenceError, wire.WireError, ValueError) as exc:
            self._counters["rejected_preferences"] += 1
            self.get_logger().error(f"ignored preference message: {exc}")
            return
        self._preference_source = "topic"
        try:
            result = self.set_parameters([Parameter("preference", value=[float(x) for x in eps])])[0]
        finally:
            self._preference_source = "parameter"
        if not result.successful:
            self.get_logger().error(f"ignored preference message: {result.reason}")

    def _srv_reload(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self._load_file_now(self.settings.policy)
        return response

    # --- diagnostics ---------------------------------------------------------------------------
    def _status(self) -> tuple[str, str, dict[str, Any]]:
        values: dict[str, Any] = {
            "mode": self.settings.mode, "timing": self._timing, "active": self._active,
            "policy_version": self.policy.version if self.policy is not None else -1,
            "task": self.policy.contract.task if self.policy is not None else "",
            "model_sha256": self.policy.digest[:12] if self.policy is not None else "",
            "rate_hz": 1.0 / self._period if self._period else 0.0,
            "inference_p50_ms": _percentile_ms(self._inference, 50),
            "inference_p99_ms": _percentile_ms(self._inference, 99),
            "receive_to_publish_p50_ms": _percentile_ms(self._latency, 50),
            "receive_to_publish_p99_ms": _percentile_ms(self._latency, 99),
            **self._counters,
            "transitions": self._writer.transitions if self._writer is not None else 0,
            "dropped_transitions": self._writer.dropped_transitions if self._writer is not None else 0,
            "chunks": self._writer.chunks if self._writer is not None else 0,
            "holding": self._holding, "last_error": self._last_error,
        }
        if self.policy is not None and self.policy.preferences is not None and self.policy.preference is not None:
            values["preference"] = self.policy.preferences.describe(self.policy.preference)
            values.update({f"preference/{n}": float(v) for n, v in zip(self.policy.preferences.names,
                                                                        self.policy.preference)})
        if self.policy is None:
            level = "error" if self.settings.mode == "deploy" else "warn"
            return level, "no policy loaded", values
        if self._holding in ("non_finite_output", "non_finite_input", "bad_layout"):
            return "error", f"holding: {self._holding}: {self._last_error}", values
        if self._holding:
            return "warn", f"holding: {self._holding}", values
        return "ok", f"serving policy version {self.policy.version} ({self.settings.mode})", values


def main(args: list[str] | None = None) -> int:
    # The realtime loop thread shares the GIL with the executor thread: bound how long it can wait
    # for it (CPython's default switch interval is 5 ms, longer than a 500 Hz period).
    sys.setswitchinterval(0.0005)
    return run_node(lambda: PolicyServer(), args)


if __name__ == "__main__":
    sys.exit(main())
