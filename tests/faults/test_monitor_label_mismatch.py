"""Fault: the safety monitor forwarded commands whose labels were a subset or a superset of the
control mode's (`vx,vy`; `vx,vy,vz,wx`), leaving it to the robot node to reject them.  The monitor
holds them itself; the full command and the task's own action components still pass."""
from __future__ import annotations

import numpy as np

from morl_robot.safety.monitor import build_monitor


def test_partial_or_extra_labels_are_held_by_the_monitor():
    m = build_monitor("sawyer", None, watchdogs=False, action_labels=("vx", "vy", "vz"))
    assert m.reset(0.0)[0]
    for labels in (("vx", "vy"), ("vx", "vy", "vz", "wx"), ("vz", "vy", "vx")):
        out = m.on_command(np.zeros(len(labels)), labels, 0.0)
        assert any(v.rule == "command.labels" for v in out.violations), labels
        assert m.counters["forwarded"] == 0
    for labels in (("vx", "vy", "vz"), ("vx", "vy", "vz", "wx", "wy", "wz")):
        out = m.on_command(np.zeros(len(labels)), labels, 0.0)
        assert out.command is not None and out.command.labels == labels
    assert m.counters["forwarded"] == 2


def test_without_a_task_only_full_commands_pass():
    m = build_monitor("sawyer", None, watchdogs=False)
    assert m.reset(0.0)[0]
    assert any(v.rule == "command.labels" for v in m.on_command(np.zeros(3), ("vx", "vy", "vz"), 0.0).violations)
    joints = m.spec.actuator_names
    assert m.on_command(np.zeros(len(joints)), joints, 0.0).command.labels == tuple(joints)
