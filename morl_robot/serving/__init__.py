"""Serving trained policies: the contract a model carries, ONNX export, and the onnxruntime runtime.

* :mod:`.contract` — :class:`PolicyContract` (observation/action names, units, bounds, control mode
  and rate, robot, task, objectives, ε_k or weights, run id, code version) ↔ ONNX metadata;
  :func:`contract_for_task`, :func:`contract_for_env`; :class:`PreferenceInputs` (an ε-conditioned
  policy's preference input: ranges, checks, features); :class:`RewardMachineInputs` (a
  reward-machine task's machine: spec, one-hot layout, digest).
* :mod:`.export` — :func:`export_policy` (torch policy → ONNX bytes/file with normaliser and action
  scaling in the graph), :func:`export_run` (newest checkpoint of a run directory → ONNX file).
* :mod:`.runtime` — :class:`OnnxPolicy` (load, validate, warm up, ``act``; ``set_preference`` for an
  ε-conditioned policy), :class:`PolicyOutput`.

Names are imported lazily so that the policy server (which needs only the runtime) does not load
torch.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ContractError": "contract", "PolicyContract": "contract", "contract_for_task": "contract",
    "PreferenceError": "contract", "PreferenceInputs": "contract", "RewardMachineInputs": "contract",
    "contract_for_env": "contract", "observation_unit": "contract", "code_version": "contract",
    "ExportError": "export", "export_policy": "export", "export_run": "export",
    "NonFiniteInput": "runtime", "NonFiniteOutput": "runtime", "OnnxPolicy": "runtime",
    "PolicyLoadError": "runtime", "PolicyOutput": "runtime", "inspect_model": "runtime",
}

__all__ = [  # noqa: RUF022 - grouped as in _EXPORTS
    "ContractError", "PolicyContract", "contract_for_task", "observation_unit", "code_version",
    "PreferenceError", "PreferenceInputs", "RewardMachineInputs", "contract_for_env",
    "ExportError", "export_policy", "export_run",
    "NonFiniteInput", "NonFiniteOutput", "OnnxPolicy", "PolicyLoadError", "PolicyOutput", "inspect_model",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"morl_robot.serving.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'morl_robot.serving' has no attribute '{name}'")
