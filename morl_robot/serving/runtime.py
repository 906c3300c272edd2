"""Running an exported policy with onnxruntime: the one inference path from training to deployment.

:class:`OnnxPolicy` loads a model produced by :func:`morl_robot.serving.export.export_policy`,
validates it (an ONNX protobuf with the ``observation`` → ``action``/``mean``/``log_std``
signature whose widths match the contract in its metadata, optionally compatible with an expected
contract), opens an onnxruntime CPU session with one intra-op and one inter-op thread (a control
loop wants predictable latency, not parallel speed-up on a 300×200 MLP) and warms it up.

:meth:`OnnxPolicy.act` turns one raw observation (O,) into a :class:`PolicyOutput`:

* deterministic: :meth:`OnnxPolicy.served_action`, the one definition of what a deployed policy
  sends and what ``evaluate`` scores: the normalised action ``a = clip(mean, −1, 1)`` and the
  command ``low + (a + 1) / 2 · (high − low)`` in robot units (the contract's bounds; the map the
  exported ``action`` output computes in float32 and the environment applies to ``a``, here in
  float64, so the command the robot node receives normalises back to ``a``).  The graph's
  ``action`` output must agree with that command (to float32 rounding, :data:`SERVED_RTOL`): a
  model whose ``action`` says something else (5 m/s where its ``mean`` says 0.1) is neither served
  nor evaluated — :class:`InconsistentOutput` at load (probe observations) and at every step, held
  like a non-finite output;
* exploring (an actor in training, MO-MPO's behaviour policy μ, Abdolmaleki et al. 2020):
  ``a = clip(mean + std · ξ, −1, 1)`` with ξ ~ N(0, I), and
  ``log μ(a|s) = Σ_d log N(a_d; mean_d, std_d)`` evaluated at the *clipped* sample — the same value
  :class:`morl_robot.learning.learner.PolicyActor` records (``mpo.gaussian_log_prob``), which
  Retrace's importance weights need; the command is ``a`` mapped affinely onto
  ``[action_low, action_high]`` (:func:`morl_robot.tasks.base.scale_action`).

An ε-conditioned model (contract field ``preferences``, a second input ``preference`` [B, K]) acts
under a preference ε: the one set with :meth:`OnnxPolicy.set_preference` (default the box's
geometric centre) or one given to :meth:`OnnxPolicy.act`; either is checked against the contract's
ranges (:class:`~morl_robot.serving.contract.PreferenceError` naming the objective and its range,
or the wrong length).  An unconditioned model refuses a preference.

Non-finite model outputs raise :class:`NonFiniteOutput` (an ``action`` output that disagrees with
the served command, its subclass :class:`InconsistentOutput`) and a non-finite observation
:class:`NonFiniteInput`, so a caller holds instead of sending garbage to a robot.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from morl_robot.errors import MorlRobotError
from morl_robot.serving.contract import ContractError, PolicyContract, PreferenceError
from morl_robot.tasks.base import scale_action

INPUT = "observation"
PREFERENCE_INPUT = "preference"
OUTPUTS = ("action", "mean", "log_std")
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
WARMUP_RUNS = 20


class PolicyLoadError(MorlRobotError, ValueError):
    """A model file is truncated, corrupt, not ONNX, carries no contract, or has the wrong shape."""


class NonFiniteOutput(MorlRobotError, ValueError):
    """The model produced NaN or inf; the message names the output and the component."""


class InconsistentOutput(NonFiniteOutput):
    """The model's ``action`` output is not its contract's scaling of its ``mean`` (a tampered or
    mis-exported graph): unusable as a non-finite output is; the message names the component."""


#: How far (relative to ``1 + |low| + |high|`` per component) the graph's ``action`` may be from the
#: served command before the model is refused: float32 rounding of the export's map is ~1e-7.
SERVED_RTOL = 1e-5
#: Observations a model is probed with at load (:meth:`OnnxPolicy.check_served`), besides zeros.
PROBE_OBSERVATIONS = 4


class NonFiniteInput(MorlRobotError, ValueError):
    """The observation holds NaN or inf (a sensor fault); the message names the component."""


@dataclass
class PolicyOutput:
    command: np.ndarray  # (D,) float64, robot units (labels = contract.action_labels)
    action: np.ndarray  # (D,) float64, normalised [-1, 1] (what the learner stores)
    log_prob: float  # behaviour log-probability of `action` (clipped sample); 0.0 if deterministic


@dataclass(frozen=True)
class ModelInfo:
    """What :func:`inspect_model` finds in a model file."""

    contract: PolicyContract
    opset: int
    inputs: dict[str, list[int | str]]  # name -> shape (dims as ints or symbolic names)
    outputs: dict[str, list[int | str]]
    size_bytes: int
    sha256: str
    producer: str


def _shape(value_info: object) -> list[int | str]:
    dims = value_info.type.tensor_type.shape.dim  # type: ignore[attr-defined]
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]


def inspect_model(data: bytes) -> ModelInfo:
    """Parse and validate ONNX bytes without running them: :class:`PolicyLoadError` if the bytes
    are not a well-formed model with the policy signature and a contract that fits its shapes."""
    import onnx
    from google.protobuf.message import DecodeError

    if not data:
        raise PolicyLoadError("empty model (0 bytes)")
    try:
        model = onnx.load_from_string(bytes(data))
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise PolicyLoadError(f"not an ONNX model, or truncated/corrupt ({len(data)} bytes): {exc}") from None
    if not model.graph.node:
        raise PolicyLoadError(f"not an ONNX policy, or truncated/corrupt ({len(data)} bytes): the graph has no nodes")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - onnx raises several types
        raise PolicyLoadError(f"model fails onnx.checker: {exc}") from None
    try:
        contract = PolicyContract.from_metadata({p.key: p.value for p in model.metadata_props})
    except ContractError as exc:
        raise PolicyLoadError(f"model has no valid policy contract: {exc}") from None
    initializers = {i.name for i in model.graph.initializer}
    inputs = {i.name: _shape(i) for i in model.graph.input if i.name not in initializers}
    outputs = {o.name: _shape(o) for o in model.graph.output}
    prefs = contract.preferences
    if prefs is None and list(inputs) != [INPUT]:
        raise PolicyLoadError(f"model inputs are {list(inputs)}; a policy has exactly one input '{INPUT}' [B, O] "
                              "(its contract lists no preference inputs)")
    if prefs is not None and list(inputs) != [INPUT, PREFERENCE_INPUT]:
        raise PolicyLoadError(f"model inputs are {list(inputs)}; a preference-conditioned policy (its contract lists "
                              f"{prefs.dim} preference inputs) has the inputs '{INPUT}' [B, O] and "
                              f"'{PREFERENCE_INPUT}' [B, K]")
    missing = [n for n in OUTPUTS if n not in outputs]
    if missing:
        raise PolicyLoadError(f"model lacks the output(s) {missing}; a policy outputs {list(OUTPUTS)}")
    o, d = len(contract.observation_labels), len(contract.action_labels)
    checks = [(INPUT, inputs[INPUT], o, "observation labels")]
    if prefs is not None:
        checks.append((PREFERENCE_INPUT, inputs[PREFERENCE_INPUT], prefs.dim, "preference inputs"))
    for name, shape, width, what in checks + [(n, outputs[n], d, "action labels") for n in OUTPUTS]:
        if len(shape) != 2:
            raise PolicyLoadError(f"model {name} has rank {len(shape)} (shape {shape}); expected [B, {width}]")
        if isinstance(shape[1], int) and shape[1] > 0 and shape[1] != width:
            raise PolicyLoadError(f"model {name} has width {shape[1]} but its contract names {width} {what}")
    opset = max((op.version for op in model.opset_import if op.domain in ("", "ai.onnx")), default=0)
    return ModelInfo(contract=contract, opset=int(opset), inputs=inputs, outputs=outputs, size_bytes=len(data),
                     sha256=hashlib.sha256(bytes(data)).hexdigest(), producer=model.producer_name)


class OnnxPolicy:
    """An exported policy in an onnxruntime session (see the module docstring)."""

    def __init__(self, session: object, info: ModelInfo) -> None:
        self._session = session
        self.info = info
        self.contract = info.contract
        self.version = int(info.contract.policy_version)
        self.obs_dim = len(info.contract.observation_labels)
        self.action_dim = len(info.contract.action_labels)
        self._low = np.asarray(info.contract.action_low, dtype=np.float64)
        self._high = np.asarray(info.contract.action_high, dtype=np.float64)
        self._served_tol = SERVED_RTOL * (1.0 + np.abs(self._low) + np.abs(self._high))
        self._rng = np.random.default_rng()
        self._buf = np.zeros((1, self.obs_dim), dtype=np.float32)
        #: ε-conditioned: the preference input (names, ranges) and the preference ε [K] acted under
        self.preferences = info.contract.preferences
        self.preference: np.ndarray | None = None
        self._pref_buf: np.ndarray | None = None
        if self.preferences is not None:
            self.preference = self.preferences.centre
            self._pref_buf = self.preference.astype(np.float32).reshape(1, -1)

    @property
    def conditioned(self) -> bool:
        """Whether the model takes a preference input."""
        return self.preferences is not None

    def check_preference(self, eps: object, what: str = "preference") -> np.ndarray:
        """``eps`` as a ``[K]`` float64 array if this model can act under it; otherwise
        :class:`PreferenceError` naming the objective and its range (or the wrong length, or that
        the model takes no preference)."""
        return self.contract.check_preference(eps, what)

    def set_preference(self, eps: object) -> np.ndarray:
        """Act under ``eps`` (checked: :meth:`check_preference`) from now on; returns it as [K] float64."""
        e = self.check_preference(eps)
        self.preference = e
        self._pref_buf = e.astype(np.float32).reshape(1, -1)
        return e

    @property
    def digest(self) -> str:
        """sha256 of the model bytes (hex)."""
        return self.info.sha256

    @classmethod
    def from_bytes(cls, data: bytes, expected: PolicyContract | None = None, *, check_task: bool = False,
                   task_config: str | os.PathLike[str] | None = None) -> OnnxPolicy:
        """Load, validate (against ``expected`` if given: :class:`ContractError` naming the field;
        with ``check_task``, against the task and robot it names as run here, its YAML or
        ``task_config``: :meth:`PolicyContract.check_runs_on`), open a 1+1-thread CPU session and
        warm it up.  Bytes from a running learner are not checked against the task YAML by default
        (the learner built the contract from the task it runs); a file is (:meth:`from_file`)."""
        import onnxruntime as ort

        info = inspect_model(data)
        if check_task:
            info.contract.check_runs_on(task_config)
        if expected is not None:
            expected.check_compatible(info.contract)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        try:
            session = ort.InferenceSession(bytes(data), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise PolicyLoadError(f"onnxruntime cannot load the model: {exc}") from None
        policy = cls(session, info)
        policy.warm_up()
        try:
            policy.check_served()
        except InconsistentOutput as exc:
            raise PolicyLoadError(str(exc)) from None
        except NonFiniteOutput:
            pass  # held at every step (NonFiniteOutput from act), as a model that turns non-finite later is
        return policy

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], expected: PolicyContract | None = None, *,
                  check_task: bool = True, task_config: str | os.PathLike[str] | None = None) -> OnnxPolicy:
        """:meth:`from_bytes` of a model file, checked against the task and robot its contract names
        (``check_task``, default on: ``inspect``, ``evaluate``, ``deploy`` and the policy server
        refuse a contract whose robot, control mode or rate is not its task's); errors name the file."""
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise PolicyLoadError(f"{path}: model file not found") from None
        except OSError as exc:
            raise PolicyLoadError(f"{path}: cannot read the model file: {exc}") from None
        try:
            return cls.from_bytes(data, expected, check_task=check_task, task_config=task_config)
        except PolicyLoadError as exc:
            raise PolicyLoadError(f"{path}: {exc}") from None
        except ContractError as exc:
            raise ContractError(f"{path}: {exc}") from None

    def warm_up(self, runs: int = WARMUP_RUNS) -> None:
        """Run the graph a few times (allocations, kernel selection) before it must meet deadlines."""
        for _ in range(runs):
            self.infer(np.zeros((1, self.obs_dim), dtype=np.float32))

    def infer(self, observations: np.ndarray,
              preferences: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Raw graph outputs ``(action, mean, log_std)``, each [B, D] float32, for ``observations``
        [B, O] float32 (conditioned: under ``preferences`` [B, K] float32, unchecked; default the
        current preference for every row)."""
        feed = {INPUT: observations}
        if self._pref_buf is not None:
            if preferences is None:
                preferences = (self._pref_buf if len(observations) == 1 else
                               np.repeat(self._pref_buf, len(observations), axis=0))
            feed[PREFERENCE_INPUT] = preferences
        elif preferences is not None:
            raise PreferenceError("this policy is not preference-conditioned: it takes no preference")
        action, mean, log_std = self._session.run(OUTPUTS, feed)  # type: ignore[attr-defined]
        return action, mean, log_std

    def _load_observation(self, observation: np.ndarray) -> None:
        """Copy one observation (O,) into the float32 input buffer, checking size and finiteness."""
        obs = np.asarray(observation, dtype=np.float64)
        if obs.size != self.obs_dim:
            raise ContractError(f"observation has {obs.size} values but the policy's contract names {self.obs_dim} "
                                f"observation labels")
        self._buf[0] = obs.reshape(-1)
        if not math.isfinite(float(self._buf.sum(dtype=np.float64))):  # one reduction on the fast path
            bad = np.flatnonzero(~np.isfinite(self._buf[0]))
            i = int(bad[0])
            raise NonFiniteInput(f"observation value {obs.reshape(-1)[i]} at index {i} "
                                 f"('{self.contract.observation_labels[i]}') is not finite (in float32)")

    def _check_outputs(self, **outputs: np.ndarray) -> None:
        if math.isfinite(sum(float(v.sum()) for v in outputs.values())):
            return
        for name, values in outputs.items():
            bad = np.flatnonzero(~np.isfinite(values.reshape(-1)))
            if bad.size:
                i = int(bad[0])
                raise NonFiniteOutput(f"model output '{name}' is not finite ({values.reshape(-1)[i]} at index {i}, "
                                      f"'{self.contract.action_labels[i % self.action_dim]}') for policy version "
                                      f"{self.version}")

    def act(self, observation: np.ndarray, deterministic: bool, rng: np.random.Generator | None = None,
            preference: np.ndarray | None = None) -> PolicyOutput:
        """One observation (O,) → :class:`PolicyOutput` (see the module docstring); a conditioned
        model acts under ``preference`` [K] if given (checked), else under the current one."""
        self._load_observation(observation)
        pref = None
        if preference is not None:
            pref = self.check_preference(preference).astype(np.float32).reshape(1, -1)
        action, mean, log_std = self.infer(self._buf, pref)
        if deterministic:
            self._check_outputs(action=action, mean=mean)
            return self._served(action[0], mean[0])
        self._check_outputs(mean=mean, log_std=log_std)
        a, log_prob = self._explore(mean, log_std, rng if rng is not None else self._rng)
        return PolicyOutput(command=scale_action(a[0], self._low, self._high), action=a[0], log_prob=float(log_prob[0]))

    def served_action(self, observation: np.ndarray, preference: np.ndarray | None = None) -> PolicyOutput:
        """What a deployed policy sends for one observation (O,), and what ``evaluate`` scores: the
        normalised action ``clip(mean, −1, 1)`` (``action``) and its command in robot units
        (``command``), which the graph's ``action`` output must agree with (else
        :class:`InconsistentOutput`); see the module docstring.  The same as
        ``act(observation, deterministic=True)``."""
        return self.act(observation, deterministic=True, preference=preference)

    def _served(self, action: np.ndarray, mean: np.ndarray) -> PolicyOutput:
        """The served :class:`PolicyOutput` of one row of the graph's ``action`` and ``mean`` (D,)
        float32: ``a = clip(mean, −1, 1)``, ``command = scale(a)``, checked against ``action``."""
        a = np.minimum(np.maximum(mean.astype(np.float64), -1.0), 1.0)  # np.clip's result, ~3x cheaper
        command = scale_action(a, self._low, self._high)
        gap = np.abs(action - command)
        if (gap > self._served_tol).any():
            i = int(np.argmax(gap - self._served_tol))
            raise InconsistentOutput(
                f"model output 'action' is {float(action[i]):.6g} at index {i} ('{self.contract.action_labels[i]}', "
                f"{self.contract.action_units[i]}) but its 'mean' {float(mean[i]):.6g} scaled to the contract's "
                f"[{self._low[i]:g}, {self._high[i]:g}] is {command[i]:.6g} (policy version {self.version}): the "
                "graph's action is not what its contract defines; refused rather than served or evaluated")
        return PolicyOutput(command=command, action=a, log_prob=0.0)

    def check_served(self, observations: np.ndarray | None = None) -> None:
        """Probe the model (zeros and :data:`PROBE_OBSERVATIONS` seeded normal observations, or
        ``observations`` [N, O]) for a served action its ``action`` output disagrees with:
        :class:`InconsistentOutput` naming the component (a non-finite output: :class:`NonFiniteOutput`)."""
        if observations is None:
            rng = np.random.default_rng(0)
            observations = np.vstack([np.zeros((1, self.obs_dim)), rng.normal(size=(PROBE_OBSERVATIONS, self.obs_dim))])
        obs = np.asarray(observations, dtype=np.float32)
        action, mean, _ = self.infer(obs)
        self._check_outputs(action=action, mean=mean)
        for row_action, row_mean in zip(action, mean):
            self._served(row_action, row_mean)

    def explore_batch(self, observations: np.ndarray, rng: np.random.Generator,
                      preferences: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exploring actions for B observations in one forward pass: ``(a [B, D] normalised,
        log μ(a|s) [B])``, sampled as :meth:`act` does (``preferences`` [B, K] of a conditioned
        model, checked by the caller; default the current preference).  Non-finite observations
        or outputs raise as in :meth:`act`."""
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ContractError(f"observations have shape {obs.shape}; the policy's contract needs (B, {self.obs_dim})")
        if not math.isfinite(float(obs.sum(dtype=np.float64))):
            b, i = (int(x[0]) for x in np.nonzero(~np.isfinite(obs)))
            raise NonFiniteInput(f"observation {b} value at index {i} ('{self.contract.observation_labels[i]}') "
                                 "is not finite (in float32)")
        pref = None if preferences is None else np.asarray(preferences, dtype=np.float32)
        _, mean, log_std = self.infer(obs, pref)
        self._check_outputs(mean=mean, log_std=log_std)
        return self._explore(mean, log_std, rng)

    def _explore(self, mean: np.ndarray, log_std: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``a = clip(mean + std·ξ, −1, 1)`` and ``log μ(a|s) = Σ_d log N(a_d; mean_d, std_d)`` at the
        clipped sample, for mean, log_std [B, D]: ``(a [B, D], log_prob [B])``, float64."""
        mu = mean.astype(np.float64)
        std = np.exp(log_std.astype(np.float64))
        a = np.clip(mu + std * rng.standard_normal(mu.shape), -1.0, 1.0)
        z = (a - mu) / std
        log_prob = np.sum(-0.5 * z * z - np.log(std) - _LOG_SQRT_2PI, axis=1)
        if not np.all(np.isfinite(log_prob)):
            raise NonFiniteOutput(f"log-probability of the sampled action is {log_prob[~np.isfinite(log_prob)][0]} "
                                  f"(policy version {self.version})")
        return a, log_prob
