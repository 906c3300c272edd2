"""Training recipes: which learner profile and session learn each task, and what else there is.

Each task YAML (``config/tasks/<task>.yaml``) names its recipe under ``recipe:`` (the learner
profile and the session that learn it, plus the task's other profiles, what each is for and its
committed result).  ``morl-robot train --task T`` with no other flag trains
:func:`default_recipe`; ``morl-robot tasks --recipes`` prints :func:`recipes`.  How to choose:
``docs/howto/choose_learner.md``.  No torch here: the CLI imports this module to pick its defaults.
"""
from __future__ import annotations

from dataclasses import dataclass

from morl_robot.configuration import from_mapping, load_yaml
from morl_robot.errors import ConfigError
from morl_robot.tasks.recipe_schema import TaskRecipe


@dataclass(frozen=True)
class Recipe:
    """One way to train a task: learner profile, session (``""``: not through ``train``; see
    ``command``), what it is for and its committed result (a path under ``results/`` or None)."""

    task: str
    learner: str
    session: str
    about: str
    result: str | None
    goal: str = "learn"
    command: str = ""  # the command that trains it
    measured: str = ""  # its result in one line
    default: bool = False  # what ``morl-robot train --task TASK`` trains


def learner_about(learner: str) -> str:
    """The ``about:`` line of a learner profile (``""`` when it has none)."""
    from morl_robot.resources import resolve_config

    about = load_yaml(resolve_config("learner", learner)).get("about", "")
    return " ".join(str(about).split())


def task_recipe(task: str) -> TaskRecipe:
    """The ``recipe:`` mapping of ``task``'s YAML (a task name, a plugin task's too, or a task YAML
    path), validated (errors name the file and the key)."""
    from morl_robot.resources import is_config_path, resolve_config
    from morl_robot.tasks.registry import task_config_file

    # a plugin task's YAML too (docs/howto/add_task.md)
    path = resolve_config("tasks", task) if is_config_path(task) else task_config_file(task)
    data = load_yaml(path)
    if "recipe" not in data:
        raise ConfigError(f"{path}: key 'recipe': missing: a task YAML names the learner profile and session "
                          "that learn it (recipe: {learner: NAME, session: NAME})")
    return from_mapping(TaskRecipe, data["recipe"], source=str(path), prefix="recipe")


def default_recipe(task: str) -> Recipe:
    """The recipe that learns ``task``: what ``morl-robot train --task TASK`` trains with no other flag."""
    r = task_recipe(task)
    command = f"morl-robot train --task {task}"
    return Recipe(task=task, learner=r.learner, session=r.session, about=r.about or learner_about(r.learner),
                  result=r.result, goal="learn", command=command, measured=r.measured, default=True)


def recipes(task: str | None = None) -> list[Recipe]:
    """Each task's profiles (the default recipe first), what each is for and its committed result."""
    if task is None:
        from morl_robot.tasks.registry import task_names

        names = list(task_names())
    else:
        names = [task]
    out: list[Recipe] = []
    for name in names:
        out.append(default_recipe(name))
        for p in task_recipe(name).profiles:
            command = p.command or f"morl-robot train --task {name} --learner {p.learner} --session {p.session}"
            out.append(Recipe(task=name, learner=p.learner, session=p.session, about=p.about or learner_about(p.learner),
                              result=p.result, goal=p.goal, command=command, measured=p.measured))
    return out
