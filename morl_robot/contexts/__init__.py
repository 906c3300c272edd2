"""Environment contexts as data (issue 37): per task, named physical and sensor/link parameters,
a training distribution (domain randomisation, one draw per episode) and named held-out contexts.

``config/contexts/<task>.yaml`` → :func:`load_contexts` → :class:`ContextSet`;
:meth:`ContextSet.sample` (training) and :meth:`ContextSet.named` give a :class:`Context`, whose
:meth:`Context.robot_context` is what a robot backend applies at reset
(:class:`morl_robot.robots.context.RobotContext`).  How-to: docs/howto/generalization.md.
"""
from morl_robot.contexts.schema import (
    CONTEXT_COLUMN,
    FIXED_CONTEXT,
    KINDS,
    Context,
    ContextSet,
    ParameterSpec,
    context_label,
    context_names,
    draw_name,
    load_contexts,
    resolve_contexts,
)

__all__ = ["CONTEXT_COLUMN", "FIXED_CONTEXT", "KINDS", "Context", "ContextSet", "ParameterSpec", "context_label", "context_names", "draw_name", "load_contexts", "resolve_contexts"]
