"""Tampered copies of a committed ONNX policy for the fault tests (issue 33 items 3 and 6): a graph
whose ``action`` output is edited (``mean`` untouched), or a contract whose metadata names another
robot, control mode or rate."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
#: A committed Sawyer peg-in-hole policy (cartesian_velocity vx, vy, vz in [-0.2, 0.2] m/s, 20 Hz).
POLICY = ROOT / "results" / "demo" / "seed0" / "policy.onnx"


def _rewire_action(model: onnx.ModelProto) -> str:
    """Rename the graph's ``action`` producer output to ``action_untampered``; returns that name."""
    for node in model.graph.node:
        for i, name in enumerate(node.output):
            if name == "action":
                node.output[i] = "action_untampered"
    return "action_untampered"


def tamper_action(src: Path, dst: Path, *, scale: float | None = None, constant: list[float] | None = None,
                  offset_above: tuple[int, float, float] | None = None) -> Path:
    """``src`` with its ``action`` output replaced (``mean`` and ``log_std`` unchanged, metadata kept):

    * ``scale``: ``action · scale``;
    * ``constant``: the constant row ``constant`` [D] for every observation;
    * ``offset_above=(i, level, delta)``: ``action + delta`` where observation ``i`` exceeds ``level``
      (a model that is honest on ordinary observations and lies on rare ones)."""
    model = onnx.load(str(src))
    raw = _rewire_action(model)
    g = model.graph

    def const(name: str, value: np.ndarray) -> None:
        g.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))

    if scale is not None:
        const("tamper_scale", np.array(scale))
        g.node.append(helper.make_node("Mul", [raw, "tamper_scale"], ["action"]))
    elif constant is not None:
        const("tamper_zero", np.array(0.0))
        const("tamper_constant", np.asarray(constant).reshape(1, -1))
        g.node.append(helper.make_node("Mul", [raw, "tamper_zero"], ["tamper_zeros"]))
        g.node.append(helper.make_node("Add", ["tamper_zeros", "tamper_constant"], ["action"]))
    elif offset_above is not None:
        index, level, delta = offset_above
        g.initializer.extend([numpy_helper.from_array(np.array([index], np.int64), "tamper_start"),
                              numpy_helper.from_array(np.array([index + 1], np.int64), "tamper_end"),
                              numpy_helper.from_array(np.array([1], np.int64), "tamper_axis")])
        const("tamper_level", np.array(level))
        const("tamper_delta", np.array(delta))
        g.node.extend([
            helper.make_node("Slice", ["observation", "tamper_start", "tamper_end", "tamper_axis"], ["tamper_x"]),
            helper.make_node("Greater", ["tamper_x", "tamper_level"], ["tamper_above"]),
            helper.make_node("Cast", ["tamper_above"], ["tamper_on"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", ["tamper_on", "tamper_delta"], ["tamper_offset"]),
            helper.make_node("Add", [raw, "tamper_offset"], ["action"]),
        ])
    else:
        raise ValueError("say how to tamper: scale, constant or offset_above")
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return dst


def tamper_contract(src: Path, dst: Path, **changes: str) -> Path:
    """``src`` with contract metadata values replaced (JSON-encoded, e.g. ``robot='"shadow_hand"'``)."""
    model = onnx.load(str(src))
    for prop in model.metadata_props:
        if prop.key in changes:
            prop.value = changes[prop.key]
    onnx.save(model, str(dst))
    return dst


def server_node_refuses(ros_session: Any, path: Any, namespace: str) -> str:
    """Start a real policy_server process (deploy, lockstep) on ``path``; it must exit with status 2
    at start; returns its log."""
    from morl_robot.session.processes import NodeSpec

    proc = ros_session.group.start(NodeSpec("policy_server", "policy_server", namespace,
                                            {"mode": "deploy", "timing": "lockstep", "policy": str(path)}))
    ros_session.probe.wait_for(lambda: not proc.alive, 60, "policy_server to refuse the model and exit")
    assert proc.returncode == 2, proc.log_text()
    return proc.log_text()
