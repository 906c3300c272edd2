"""Which topics of a session graph the recorder writes.

Every topic under the session's namespace(s) (``/<ns>/…``, so ``/<ns>/actor<i>/…`` of a training
session and ``/<ns>/<mode>/…`` of a safety test too) and ``/diagnostics``, except the ones named in
``exclude``: by default the learner's bulk traffic (``experience`` chunks repeat the task steps;
``policy_snapshot`` is the whole policy, once per update), ``/clock``, and the named views
``view/…`` (the task step's and command's values again, under their names: subscribing to them
makes the robot node build them on its control path; ``task_step`` and ``command`` carry the same
values with their labels).  Entries of ``exclude`` are
absolute names (``/clock``) or the end of a name, glob patterns allowed (``experience``, ``view/*``).
"""
from __future__ import annotations

import fnmatch
from collections.abc import Sequence

#: Topics a session records besides its namespaces' own.
GLOBAL_TOPICS: tuple[str, ...] = ("/diagnostics",)
#: Not recorded unless asked for (see the module docstring).
DEFAULT_EXCLUDE: tuple[str, ...] = ("experience", "policy_snapshot", "experience_allowance", "/clock", "view/*")


def selected(topic: str, namespaces: Sequence[str], exclude: Sequence[str] = DEFAULT_EXCLUDE) -> bool:
    """Whether ``topic`` is recorded for a session in ``namespaces``."""
    if any(topic == e if e.startswith("/") else fnmatch.fnmatchcase(topic, "*/" + e) for e in exclude):
        return False
    if topic in GLOBAL_TOPICS:
        return True
    for ns in namespaces:
        prefix = "/" + ns.strip("/")
        if prefix == "/" or topic.startswith(prefix + "/"):
            return True
    return False

