"""Where the package's share files (``sim/`` MJCF, ``config/`` YAML, ``launch/``) live.

Looked up in order: ``$MORL_ROBOT_SHARE``; the source tree (editable/dev install); the ament
share directory of an installed ROS 2 package; ``<sys.prefix>/share/morl_robot`` (pip install).
"""
from __future__ import annotations

import contextlib
import os
import sys
from functools import lru_cache
from pathlib import Path

PACKAGE = "morl_robot"


def _is_share_root(path: Path) -> bool:
    return (path / "sim").is_dir() and (path / "config").is_dir()


@lru_cache(maxsize=1)
def share_dir() -> Path:
    """The folder holding ``sim/``, ``config/`` and ``launch/``."""
    candidates: list[Path] = []
    if os.environ.get("MORL_ROBOT_SHARE"):
        candidates.append(Path(os.environ["MORL_ROBOT_SHARE"]))
    candidates.append(Path(__file__).resolve().parent.parent)
    # an installed ROS 2 package (colcon); skipped when the ament index is absent or lacks the package
    with contextlib.suppress(Exception):
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory(PACKAGE)))
    candidates.append(Path(sys.prefix) / "share" / PACKAGE)
    for candidate in candidates:
        if _is_share_root(candidate):
            return candidate
    raise FileNotFoundError(
        "cannot find the morl_robot share folder (sim/ and config/); looked in: "
        + ", ".join(str(c) for c in candidates)
        + ". Set MORL_ROBOT_SHARE to the folder that holds them."
    )


def sim_path(relative: str | os.PathLike[str]) -> Path:
    """Absolute path of an MJCF file given relative to ``sim/``."""
    return share_dir() / "sim" / relative


def config_path(relative: str | os.PathLike[str]) -> Path:
    """Absolute path of a YAML file given relative to ``config/``."""
    return share_dir() / "config" / relative
