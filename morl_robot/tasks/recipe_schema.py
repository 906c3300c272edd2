"""The ``recipe:`` section of a task YAML (:class:`TaskRecipe`, read into ``TaskConfig.recipe``):
the learner profile and session that learn the task, and its other profiles.  The lookups over
every task are :mod:`morl_robot.tasks.recipes`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from morl_robot.configuration import fail
from morl_robot.errors import ConfigError, UnknownNameError

#: What a profile is for (the rows of docs/howto/choose_learner.md).
GOALS: tuple[str, ...] = ("learn", "front", "every-preference", "worst-case")
Goal = Literal["learn", "front", "every-preference", "worst-case"]


def _check_name(kind: str, key: str, name: str) -> None:
    """``name`` must be a shipped config of ``kind`` (or an existing path); fail naming ``key``."""
    from morl_robot.resources import resolve_config

    if not name:
        fail("", key, f"missing: name a {kind} config (config/{kind}/<name>.yaml)")
    try:
        resolve_config(kind, name)
    except (UnknownNameError, ConfigError) as exc:
        fail("", key, str(exc))


@dataclass
class RecipeProfile:
    """Another profile for the task (``recipe.profiles[i]`` in the task YAML)."""

    learner: str  # learner profile (config/learner/<name>.yaml)
    goal: Goal = "front"
    #: how it is run (the command that trains it); a train profile needs ``session`` instead
    command: str = ""
    session: str = ""  # a session, when the profile trains through ``morl-robot train``
    about: str = ""  # what it is for; "" = the learner YAML's ``about:``
    result: str | None = None  # its committed result (a path under results/)
    measured: str = ""  # the result in one line (e.g. "100 % insertion, 3 seeds")

    def validate(self) -> None:
        _check_name("learner", "learner", self.learner)
        if self.session:
            _check_name("sessions", "session", self.session)
        if not self.session and not self.command:
            fail("", "command", "give the command that trains this profile (or a session for morl-robot train)")


@dataclass
class TaskRecipe:
    """The ``recipe:`` mapping of a task YAML: the profile and session that learn the task."""

    learner: str  # learner profile (config/learner/<name>.yaml)
    session: str  # session (config/sessions/<name>.yaml)
    about: str = ""  # what it does; "" = the learner YAML's ``about:``
    result: str | None = None  # its measured result (results/recipes/<task>/results.json)
    measured: str = ""  # the result in one line
    profiles: list[RecipeProfile] = field(default_factory=list)

    def validate(self) -> None:
        _check_name("learner", "learner", self.learner)
        _check_name("sessions", "session", self.session)
