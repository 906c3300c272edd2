"""Each task's observations, actions and rewards with units, from ``Task.describe()``
(``morl_robot.tasks.registry.describe_task``); a task without a description gets what its built
instance tells (objective and action names)."""
from __future__ import annotations

from typing import Any

from . import md


def _quantities(qs: Any, first: str) -> str:
    return md.table((first, "size", "unit", "range", "meaning"),
                    [(md.code(q.name), str(q.size), md.text(q.unit or "—"), md.text(q.range), md.text(q.meaning))
                     for q in qs])


def _described(d: Any) -> str:
    parts = [md.text(d.summary) + "\n",
             md.table(("property", "value"), [
                 ("robot", md.code(d.robot)),
                 ("control", md.text(f"{d.control_mode} at {d.control_rate_hz:g} Hz")),
                 ("episode", md.text(f"{d.episode_s:g} s ({round(d.episode_s * d.control_rate_hz)} steps)")),
                 ("observation", md.text(f"{d.observation_size} values"
                                         + (f" ({d.frames} stacked frames, newest first)" if d.frames > 1 else ""))),
                 ("action", md.text(f"{d.action_size} values in [-1, 1]")),
                 ("objectives", ", ".join(md.code(n) for n in d.objective_names)),
             ])]
    parts += ["**Observations** (one frame)\n", _quantities(d.observations, "observation")]
    parts += ["**Actions** (normalised to [-1, 1]; the range is what ±1 commands)\n", _quantities(d.actions, "action")]
    parts += ["**Rewards** (one per objective, per step)\n", _quantities(d.rewards, "objective")]
    if d.terminations:
        parts += ["**Early ends**\n", md.table(("termination", "when"),
                                               [(md.code(r), md.text(w)) for r, w in d.terminations])]
    if d.success:
        parts.append(f"**Success**: {md.text(d.success)}\n")
    if d.scripted:
        parts.append(f"**Scripted controller**: {md.text(d.scripted)}\n")
    return "\n".join(parts)


def _undescribed(name: str) -> str:
    from morl_robot.tasks import registry

    task = registry.load_task(name)
    rows = [("robot", md.code(task.robot_name)),
            ("control", md.text(f"{task.control_mode.value} at {task.control_rate:g} Hz")),
            ("actions", ", ".join(md.code(a) for a in task.action_labels)),
            ("objectives", ", ".join(md.code(n) for n in task.objective_names))]
    return "*No description (`describe()`) for this task.*\n\n" + md.table(("property", "value"), rows)


def render() -> str:
    from morl_robot.tasks import registry

    parts = []
    for name in registry.task_names():
        parts.append(f"## `{name}`\n")
        try:
            parts.append(_described(registry.describe_task(name)))
        except NotImplementedError:
            parts.append(_undescribed(name))
    return "\n".join(parts)
