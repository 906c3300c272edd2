"""The installed ``morl-robot`` and a user's environment for subprocess tests, in the project's
venv and in a sourced colcon workspace (issue 41).  In a workspace the console script is not
beside ``sys.executable`` but on ``PATH`` (``install/morl_robot/bin``), and morl_robot itself is
found through the workspace's ``PYTHONPATH``: a test that wants "no PYTHONPATH of its own" keeps
that one (:func:`user_env`) instead of dropping it."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

#: PYTHONPATH as this test process got it (empty in the venv; the sourced workspace's in colcon test)
SESSION_PYTHONPATH = os.environ.get("PYTHONPATH", "")


def installed_cli() -> str:
    """The ``morl-robot`` console script a user runs: the venv's (beside ``sys.executable``), else
    the one on ``PATH`` (a sourced workspace's ``install/morl_robot/bin/morl-robot``)."""
    beside = Path(sys.executable).with_name("morl-robot")
    if beside.is_file():
        return str(beside)
    return shutil.which("morl-robot") or str(beside)


def user_env(drop: tuple[str, ...] = (), pythonpath: tuple[str, ...] = ()) -> dict[str, str]:
    """``os.environ`` without the variables ``drop`` and with ``PYTHONPATH`` = ``pythonpath`` then
    the session's own (never this process's later additions)."""
    env = {k: v for k, v in os.environ.items() if k not in (*drop, "PYTHONPATH")}
    path = os.pathsep.join(p for p in (*pythonpath, SESSION_PYTHONPATH) if p)
    if path:
        env["PYTHONPATH"] = path
    return env
