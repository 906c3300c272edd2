"""The YAML schemas of every config kind, from the config dataclasses."""
from __future__ import annotations

from . import md, schema


def task_configs() -> list[tuple[str, type]]:
    """(task name, its config dataclass) for every registered task."""
    from morl_robot.tasks import registry

    out = []
    for name in registry.task_names():
        if hasattr(registry, "config_class"):
            cfg_cls = registry.config_class(registry.task_class(name))
        else:  # the registry before tasks became data-driven
            cfg_cls = registry.TASKS[name][1]
        out.append((name, cfg_cls))
    return out


def _section(title: str, intro: str, cls: type, level: str = "##") -> str:
    return f"{level} {title}\n\n{intro}\n\n{schema.render(cls)}"


def render() -> str:
    import dataclasses

    from morl_robot import configuration
    from morl_robot.learning import config as learner_config
    from morl_robot.learning.config import MPOConfig
    from morl_robot.reward_machines.env import RMTaskSpec
    from morl_robot.reward_machines.labelling import LabellingSpec
    from morl_robot.reward_machines.machine import MachineSpec
    from morl_robot.robots.config import RobotConfig
    from morl_robot.safety.config import SafetyConfig
    from morl_robot.session.config import SessionConfig
    from morl_robot.tasks import registry

    comments = schema.module_comments(configuration)
    lcomments = schema.module_comments(learner_config)
    class_key = next((f.default for f in dataclasses.fields(registry.TaskEntry) if f.name == "key"), "class")
    keys = [(md.code(configuration.EXTENDS), "every kind", md.text(
                comments.get("EXTENDS", "").rstrip(".") + "; the child states only what it changes (a name of the "
                "same kind or a path relative to the child's folder)"))]
    keys += [(md.code(k), "learner profiles", md.text(lcomments.get("LEARNER_METADATA", ""))) for k in
             getattr(learner_config, "LEARNER_METADATA", ())]
    keys.append((md.code(class_key), "task configs", md.text(
        "the task class, `module:Class`, for a task that is not built in") + " ([add a task](../howto/add_task.md))"))
    parts = ["## Keys of every kind\n", md.table(("key", "where", "meaning"), keys)]
    parts += ["## Task configs\n",
             ("One YAML per task, `config/tasks/<task>.yaml` (a task config name or a path: "
             "`--task-config`). Keys common to every task come first in each table.\n")]
    for name, cls in task_configs():
        parts.append(_section(f"Task `{name}`", f"`config/tasks/{name}.yaml` ({md.code(cls.__name__)}).", cls, "###"))
    parts.append(_section("Learner profiles", "`config/learner/<name>.yaml` (`--learner NAME|PATH`; "
                          f"{md.code(MPOConfig.__name__)}).", MPOConfig))
    parts.append(_section("Session", "`config/sessions/<name>.yaml` (`--session NAME|PATH`; "
                          f"{md.code(SessionConfig.__name__)}). Each node section holds that node's "
                          "ROS parameters (see [topics and parameters](topics.md)).", SessionConfig))
    parts.append(_section("Robot", f"`config/robots/<robot>.yaml` ({md.code(RobotConfig.__name__)}).", RobotConfig))
    parts.append(_section("Safety", f"`config/safety/<robot>.yaml` ({md.code(SafetyConfig.__name__)}).", SafetyConfig))
    parts.append("## Reward machines\n")
    parts.append(_section("Reward-machine task spec", "`config/reward_machines/<group>/<name>.yaml` naming a task, "
                          f"its labelling function and machines ({md.code(RMTaskSpec.__name__)}).", RMTaskSpec, "###"))
    parts.append(_section("Reward machine", f"A machine's YAML ({md.code(MachineSpec.__name__)}).", MachineSpec, "###"))
    parts.append(_section("Labelling function", "`config/reward_machines/labels/<task>.yaml` "
                          f"({md.code(LabellingSpec.__name__)}).", LabellingSpec, "###"))
    return "\n".join(parts)
