"""``morl-robot inspect policy.onnx [--json]``: print the contract an ONNX policy carries —
robot, task, control mode and rate, every observation and action component with its unit (and
the action's robot-unit limits), objectives with ε_k or weights, run id, code version — and the
graph's signature.  A contract whose robot, control mode or control rate is not its task's (as
configured here) is refused: rc 2 and one line naming the field, both values and the file."""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from morl_robot.errors import UsageError

if TYPE_CHECKING:
    from morl_robot.serving.runtime import ModelInfo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="print the contract (observation, action, units, limits, origin) of an ONNX policy")
    p.add_argument("policy", metavar="POLICY", help="ONNX file written by `morl-robot export` or the learner")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def format_info(info: ModelInfo) -> str:
    """The human-readable report of :func:`morl_robot.serving.runtime.inspect_model`'s result."""
    c = info.contract
    signature = (", ".join(f"{k} {v}" for k, v in info.inputs.items()) + " -> "
                 + ", ".join(f"{k} {v}" for k, v in info.outputs.items()))
    lines = [
        f"policy       {c.task} on {c.robot}, version {c.policy_version}, run '{c.run_id}'",
        f"control      {c.control_mode} at {c.control_rate:g} Hz (period {1e3 / c.control_rate:.1f} ms)",
        f"algorithm    {c.algorithm}",
    ]
    if c.epsilons:
        lines.append("objectives   " + ", ".join(f"{n} (ε={e:g})" for n, e in zip(c.objective_names, c.epsilons)))
    elif c.weights:
        lines.append("objectives   " + ", ".join(f"{n} (w={w:g})" for n, w in zip(c.objective_names, c.weights)))
    else:
        lines.append("objectives   " + ", ".join(c.objective_names))
    if c.preferences is not None:
        lines.append("preference   " + ", ".join(f"{n} ε in [{lo:g}, {hi:g}]" for n, (lo, hi) in
                                                 zip(c.preferences.names, c.preferences.ranges))
                     + " (input 'preference'; default " + c.preferences.describe(c.preferences.centre) + ")")
    if c.reward_machine is not None:
        rm = c.reward_machine
        lines.append(f"reward machine {rm.spec} (labelling {rm.labelling}; machines {', '.join(rm.machines)}; "
                     f"{len(rm.states)} product states, the last observation values; {rm.digest[:19]}…)")
    lines += [
        f"normalizer   {c.observation_normalizer} (inside the graph)",
        f"code         {c.code_version or '(unknown)'}",
        f"model        {info.size_bytes / 1e3:.0f} kB, opset {info.opset}, sha256 {info.sha256[:16]}…",
        f"producer     {info.producer or '?'}",
        f"signature    {signature}",
        "",
        f"observation  {len(c.observation_labels)} values, frame stack {c.frame_stack}",
    ]
    width = max(len(x) for x in c.observation_labels)
    lines += [f"  {i:3d}  {lab:<{width}}  {unit}" for i, (lab, unit) in
              enumerate(zip(c.observation_labels, c.observation_units))]
    relative = ("; changes of the position targets from the measured positions" if c.action_mode == "delta" else "")
    lines += ["", f"action       {len(c.action_labels)} values (robot units; normalised -1 -> low, +1 -> high{relative})"]
    width = max(len(x) for x in c.action_labels)
    lines += [f"  {i:3d}  {lab:<{width}}  [{lo:+.6g}, {hi:+.6g}] {unit}" for i, (lab, unit, lo, hi) in
              enumerate(zip(c.action_labels, c.action_units, c.action_low, c.action_high))]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from morl_robot.serving.contract import ContractError
    from morl_robot.serving.runtime import PolicyLoadError, inspect_model

    path = Path(args.policy)
    if not path.is_file():
        raise UsageError(f"POLICY: '{path}' is not a file")
    try:
        info = inspect_model(path.read_bytes())
        info.contract.check_runs_on()  # its robot, control mode and rate are its task's (as every loader checks)
    except PolicyLoadError as exc:
        raise PolicyLoadError(f"{path}: {exc}") from None
    except ContractError as exc:
        raise ContractError(f"{path}: {exc}") from None
    if args.json:
        print(json.dumps({"path": str(path), "bytes": info.size_bytes, "sha256": info.sha256, "opset": info.opset,
                          "inputs": info.inputs, "outputs": info.outputs, "producer": info.producer,
                          "contract": dataclasses.asdict(info.contract)}, ensure_ascii=False, indent=2))
    else:
        print(f"{path}\n{format_info(info)}")
    return 0
