"""Export a trained Gaussian policy to ONNX with its contract, normaliser and action scaling inside.

The exported graph (opset 17, dynamic batch B):

* input ``observation`` [B, O] float32 — the raw observation, in the contract's label order;
* input ``preference`` [B, K] float32, only for an ε-conditioned policy (contract field
  ``preferences``) — the raw preference ε (the KL bounds ε_k, not their logs);
* the observation normaliser, if any: ``clip((x − μ) / sqrt(σ² + ε), −c, c)``
  (:class:`~morl_robot.learning.normalization.RunningNormalizer`), constants in the graph;
* conditioned: the preference features ``scale · log ε + offset`` (log ε scaled to [-1, 1] over each
  objective's range, 0 for a fixed one: :meth:`PreferenceInputs.features`, the same as the learner's
  :meth:`~morl_robot.learning.preferences.PreferenceSpace.features`) concatenated after the
  normalised observation, [B, O + K];
* the policy network (:class:`~morl_robot.learning.networks.GaussianPolicy`, MO-MPO's policy,
  Abdolmaleki et al. 2020, appendix B) → ``mean`` [B, D], ``std`` [B, D] in the normalised action box;
* output ``action`` [B, D] float32 — the deterministic action in robot units:
  ``low + (clip(mean, −1, 1) + 1) / 2 · (high − low)`` (the same affine map as
  :func:`morl_robot.tasks.base.scale_action`; ``low``/``high`` from ``Task.action_bounds``);
* outputs ``mean`` [B, D] and ``log_std`` [B, D] (normalised space) for exploring actors.

The :class:`~morl_robot.serving.contract.PolicyContract` is stored in ``metadata_props``.  The
graph is produced by PyTorch's TorchScript-based exporter (``dynamo=False``: deterministic,
offline, about 15 ms for the paper's (300, 200) policy; the torch.export-based exporter needs
``onnxscript``, which this project does not depend on) and checked with ``onnx.checker``.
"""
from __future__ import annotations

import copy
import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from torch import nn

from morl_robot.errors import MorlRobotError
from morl_robot.learning.normalization import RunningNormalizer
from morl_robot.serving.contract import (
    ContractError,
    PolicyContract,
    PreferenceError,
    PreferenceInputs,
    code_version,
    replace,
)

OPSET = 17  # LayerNormalization is an ONNX operator from opset 17
INPUT = "observation"
PREFERENCE_INPUT = "preference"
OUTPUTS = ("action", "mean", "log_std")


class ExportError(MorlRobotError, RuntimeError):
    """The policy could not be exported (exporter failure, checker failure, no checkpoint)."""


class ServingGraph(nn.Module):
    """What the ONNX file computes: raw observation [B, O] (and, conditioned, preference ε [B, K])
    → (action [B, D] robot units, mean [B, D], log_std [B, D]).  Also the torch reference for parity
    checks and benchmarks."""

    def __init__(self, policy: nn.Module, contract: PolicyContract, normalizer: RunningNormalizer | None = None) -> None:
        super().__init__()
        self.policy = policy
        low = torch.tensor(contract.action_low, dtype=torch.float32)
        high = torch.tensor(contract.action_high, dtype=torch.float32)
        self.register_buffer("action_center", (high + low) / 2)
        self.register_buffer("action_half_range", (high - low) / 2)
        self.normalize = normalizer is not None
        if normalizer is not None:
            self.register_buffer("obs_mean", torch.tensor(normalizer.mean, dtype=torch.float32))
            self.register_buffer("obs_std", torch.tensor(normalizer.std, dtype=torch.float32))
            self.clip = float(normalizer.clip)
        else:
            self.clip = 0.0
        self.conditioned = contract.preferences is not None
        if contract.preferences is not None:
            scale, offset = contract.preferences.feature_affine()
            self.register_buffer("preference_scale", torch.tensor(scale, dtype=torch.float32))
            self.register_buffer("preference_offset", torch.tensor(offset, dtype=torch.float32))

    def forward(self, observation: torch.Tensor,
                preference: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = observation
        if self.normalize:
            x = torch.clamp((x - self.obs_mean) / self.obs_std, -self.clip, self.clip)
        if self.conditioned:
            if preference is None:
                raise ContractError("this policy is preference-conditioned: give a preference [B, K]")
            features = torch.log(preference) * self.preference_scale + self.preference_offset
            x = torch.cat([x, features], dim=-1)
        mean, std = self.policy(x)
        action = self.action_center + torch.clamp(mean, -1.0, 1.0) * self.action_half_range
        return action, mean, torch.log(std)


def _input_width(contract: PolicyContract) -> int:
    """The policy network's input width: O, plus K for an ε-conditioned policy."""
    k = contract.preferences.dim if contract.preferences is not None else 0
    return len(contract.observation_labels) + k


def _check_policy(policy: nn.Module, contract: PolicyContract, normalizer: RunningNormalizer | None) -> None:
    o, d = len(contract.observation_labels), len(contract.action_labels)
    if normalizer is not None and normalizer.dim != o:
        raise ContractError(f"normalizer has dim {normalizer.dim} but the contract names {o} observation labels")
    width = _input_width(contract)
    what = (f"inputs of width {width} ({o} observation labels + {width - o} preference inputs)" if width > o else
            f"observations of width {o} (the contract's observation_labels)")
    try:
        with torch.no_grad():
            out = policy(torch.zeros(2, width))
    except Exception as exc:  # noqa: BLE001 - any failure means a wrong-shaped policy
        raise ContractError(f"policy does not accept {what}: {type(exc).__name__}: {exc}") from None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ContractError("policy must return (mean [B, D], std [B, D]) like GaussianPolicy")
    for name, t in zip(("mean", "std"), out):
        if tuple(t.shape) != (2, d):
            raise ContractError(f"policy {name} has shape {tuple(t.shape)} for a batch of 2 but the contract "
                                f"names {d} action labels (expected (2, {d}))")


def _torch_export(graph: nn.Module, contract: PolicyContract) -> bytes:
    buf = io.BytesIO()
    args: tuple[torch.Tensor, ...] = (torch.zeros(1, len(contract.observation_labels)),)
    inputs = [INPUT]
    if contract.preferences is not None:
        args += (torch.as_tensor(contract.preferences.centre, dtype=torch.float32).reshape(1, -1),)
        inputs.append(PREFERENCE_INPUT)
    dynamic = {name: {0: "batch"} for name in (*inputs, *OUTPUTS)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter announces its deprecation on every call
        try:
            torch.onnx.export(graph, args, buf, dynamo=False, input_names=inputs,
                              output_names=list(OUTPUTS), dynamic_axes=dynamic, opset_version=OPSET,
                              do_constant_folding=True)
        except Exception as exc:
            raise ExportError(f"torch.onnx.export failed: {type(exc).__name__}: {exc}") from exc
    return buf.getvalue()


def write_atomically(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write the model atomically (a server hot-reloading the file never sees a partial one); an
    ``OSError`` (disk full, read-only folder, name too long…) is a
    :class:`~morl_robot.learning.run_lock.WriteError` naming ``path`` (the old file, if any, stays)."""
    from morl_robot.learning.run_lock import write_error
    from morl_robot.records import write_bytes_atomic

    try:
        return write_bytes_atomic(path, data)
    except OSError as exc:
        raise write_error(path, exc) from None


def export_policy(policy: nn.Module, contract: PolicyContract, path: str | os.PathLike[str] | None = None, *,
                  normalizer: RunningNormalizer | None = None) -> bytes:
    """The ONNX bytes of ``policy`` under ``contract`` (see the module docstring for the graph);
    written atomically to ``path`` if given.

    ``policy`` is copied (to CPU float32, eval mode), so a learner may keep training it.  With a
    ``normalizer`` the contract's ``observation_normalizer`` is recorded as ``running``.  Raises
    :class:`ContractError` if the policy's input/output widths do not match the contract (an
    ε-conditioned policy, ``contract.preferences`` set, takes O + K inputs).
    """
    contract = replace(contract, observation_normalizer="running" if normalizer is not None else "none",
                       code_version=contract.code_version or code_version())
    net = copy.deepcopy(policy).to(device="cpu", dtype=torch.float32).eval().requires_grad_(False)
    _check_policy(net, contract, normalizer)
    graph = ServingGraph(net, contract, normalizer).eval()
    raw = _torch_export(graph, contract)
    model = onnx.load_from_string(raw)
    model.producer_name = "morl_robot"
    model.doc_string = f"morl_robot policy: {contract.summary()}"
    model.graph.name = "morl_robot_policy"
    del model.metadata_props[:]
    for key, value in contract.to_metadata().items():
        model.metadata_props.add(key=key, value=value)
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as exc:
        raise ExportError(f"exported model fails onnx.checker: {exc}") from None
    data = model.SerializeToString()
    if path is not None:
        write_atomically(path, data)
    return data


# --- from a learner run directory ----------------------------------------------------------------
def _checkpoint_payload(run_dir: Path) -> tuple[Path, dict[str, Any]]:
    from morl_robot.learning.checkpoint import (
        CheckpointError,
        load_checkpoint,
        load_latest,
    )

    if run_dir.is_file():
        return run_dir, load_checkpoint(run_dir)
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir}: no such run directory")
    for folder in (run_dir / "checkpoints", run_dir):
        try:
            found = load_latest(folder, fallback=True)
        except CheckpointError as exc:
            raise ExportError(str(exc)) from None
        if found is not None:
            return found
    raise ExportError(f"{run_dir}: no checkpoint (ckpt-*.pt) in {run_dir / 'checkpoints'} or {run_dir}")


def policy_from_checkpoint(payload: dict[str, Any], source: str = "checkpoint") -> tuple[nn.Module, PolicyContract,
                                                                                          RunningNormalizer | None]:
    """The Gaussian policy, its contract and its normaliser from a learner_node checkpoint payload
    (keys ``learner``, ``config``, ``contract``, ``normalizer``, ``counters``)."""
    from morl_robot.learning.config import config_from_dict
    from morl_robot.learning.networks import GaussianPolicy

    for key in ("learner", "contract"):
        if payload.get(key) is None:  # train() checkpoints have no contract (a generic environment)
            raise ExportError(f"{source}: payload lacks '{key}' (not a learner_node checkpoint?)")
    contract = PolicyContract.from_metadata(dict(payload["contract"]))
    learner = payload["learner"]
    meta = learner.get("meta", {})
    spec = meta.get("action_spec", {})
    if spec.get("kind", "box") != "box":
        raise ExportError(f"{source}: a {spec.get('kind')} policy cannot be served (robot policies are Gaussian)")
    config = config_from_dict(dict(payload.get("config") or meta.get("config") or {}), source=f"{source}: config")
    obs_dim = int(meta.get("obs_dim", len(contract.observation_labels)))
    action_dim = int(spec.get("dim", len(contract.action_labels)))
    if obs_dim != len(contract.observation_labels) or action_dim != len(contract.action_labels):
        raise ContractError(f"{source}: the learner has observation width {obs_dim} and action width {action_dim}, "
                            f"its contract names {len(contract.observation_labels)} observation and "
                            f"{len(contract.action_labels)} action labels")
    contract = _with_checkpoint_preferences(contract, meta.get("preferences"), source)
    k = contract.preferences.dim if contract.preferences is not None else 0
    net = config.networks
    policy = GaussianPolicy(obs_dim + k, action_dim, net.policy_hidden, min_std=net.min_std, init_std=net.init_std)
    try:
        policy.load_state_dict(learner["policy"])
    except (KeyError, RuntimeError) as exc:
        raise ExportError(f"{source}: cannot load the policy weights: {exc}") from None
    normalizer = None
    if payload.get("normalizer") is not None:
        normalizer = RunningNormalizer.from_state_dict(dict(payload["normalizer"]))
    counters = payload.get("counters") or {}
    if "policy_version" in counters:
        contract = replace(contract, policy_version=int(counters["policy_version"]))
    return policy, contract, normalizer


def _with_checkpoint_preferences(contract: PolicyContract, saved: Any, source: str) -> PolicyContract:
    """The contract with the learner's preference box (``learner.state_dict()["meta"]["preferences"]``,
    ``PreferenceSpace.to_dict()``; None = unconditioned) as its ``preferences``, named by the
    contract's objectives; :class:`ExportError` if the contract already lists a different box."""
    if saved is None:
        if contract.preferences is not None:
            raise ExportError(f"{source}: the contract lists preference inputs but the learner is not "
                              "preference-conditioned")
        return contract
    ranges = saved.get("ranges") if isinstance(saved, dict) else None
    if not isinstance(ranges, list) or len(ranges) != len(contract.objective_names):
        raise ExportError(f"{source}: the learner's preferences {saved!r} do not give one [low, high] range per "
                          f"objective {contract.objective_names}")
    prefs = PreferenceInputs(list(contract.objective_names), [[float(a), float(b)] for a, b in ranges])
    if contract.preferences is not None and contract.preferences != prefs:
        raise ExportError(f"{source}: the contract's preference ranges {contract.preferences.ranges} differ from "
                          f"the learner's {prefs.ranges}")
    return replace(contract, preferences=prefs)


def load_run_policy(run_dir: str | os.PathLike[str]) -> tuple[Path, nn.Module, PolicyContract,
                                                               RunningNormalizer | None]:
    """(checkpoint path, torch policy, contract, normaliser) of the newest readable checkpoint of a
    run directory (what ``export_run`` exports and the deploy check evaluates in-process)."""
    path, payload = _checkpoint_payload(Path(run_dir))
    policy, contract, normalizer = policy_from_checkpoint(payload, source=str(path))
    return path, policy, contract, normalizer


def export_run(run_dir: str | os.PathLike[str], out_path: str | os.PathLike[str]) -> PolicyContract:
    """``morl-robot export RUN_DIR``: the newest readable checkpoint of a learner_node run directory
    (``RUN_DIR/checkpoints/ckpt-*.pt``; a checkpoint file or a checkpoints folder also work) →
    ONNX file ``out_path``.  Returns the contract written (policy_version = the run's counter)."""
    path, payload = _checkpoint_payload(Path(run_dir))
    policy, contract, normalizer = policy_from_checkpoint(payload, source=str(path))
    data = export_policy(policy, contract, out_path, normalizer=normalizer)
    return PolicyContract.from_metadata({p.key: p.value for p in onnx.load_from_string(data).metadata_props})


def reference_outputs(policy: nn.Module, contract: PolicyContract, observations: np.ndarray,
                      normalizer: RunningNormalizer | None = None,
                      preference: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The torch computation the ONNX graph reproduces, on ``observations`` [B, O] (parity checks);
    a conditioned policy acts under ``preference`` ([K] for every row, or [B, K]; default the box's
    centre), checked against the contract's ranges."""
    graph = ServingGraph(copy.deepcopy(policy).float().eval(), contract, normalizer).eval()
    obs = torch.as_tensor(np.asarray(observations, np.float32))
    pref = None
    if contract.preferences is not None:
        p = np.asarray(contract.preferences.centre if preference is None else preference, np.float64)
        rows = p.reshape(-1, contract.preferences.dim) if p.ndim > 1 else p.reshape(1, -1)
        rows = np.stack([contract.preferences.check(r) for r in rows])
        pref = torch.as_tensor(np.broadcast_to(rows, (obs.shape[0], rows.shape[1])).astype(np.float32))
    elif preference is not None:
        raise PreferenceError("this policy is not preference-conditioned: it takes no preference")
    with torch.no_grad():
        action, mean, log_std = graph(obs, pref)
    return {"action": action.numpy(), "mean": mean.numpy(), "log_std": log_std.numpy()}
