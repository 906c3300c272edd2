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


#: The kinds of configuration under ``config/`` (the folder of each kind, relative to ``config/``)
#: and what one file of the kind is called in messages.
CONFIG_KINDS: dict[str, str] = {
    "robots": "robot",
    "tasks": "task",
    "learner": "learner config",
    "sessions": "session",
    "safety": "safety config",
    "reward_machines": "reward machine",
    "reward_machines/labels": "labelling function",
    "prism": "PRISM config",
    "prism/mirror": "mirror map",
}
YAML_SUFFIXES = (".yaml", ".yml")


def config_names(kind: str) -> tuple[str, ...]:
    """The names of the shipped configs of ``kind``: the ``.yaml`` files under ``config/<kind>/``
    without the suffix, subfolders included (``sawyer/force_budget``) except those that are
    kinds of their own (``reward_machines/labels``)."""
    folder = config_path(_check_kind(kind))
    others = [config_path(k) for k in CONFIG_KINDS if k != kind and k.startswith(f"{kind}/")]
    names = []
    for path in folder.rglob("*.yaml"):
        if not any(other in path.parents for other in others):
            names.append(path.relative_to(folder).with_suffix("").as_posix())
    return tuple(sorted(names))


def is_config_path(ref: str | os.PathLike[str]) -> bool:
    """Whether ``ref`` is a file path rather than a config name: a ``Path``, or text ending in
    ``.yaml``/``.yml``, absolute, or starting with ``.`` or ``~``.  Anything else is a name (names
    of kinds with subfolders carry them: reward machine ``sawyer/force_budget``)."""
    if isinstance(ref, os.PathLike):
        return True
    text = str(ref)
    return text.endswith(YAML_SUFFIXES) or os.path.isabs(text) or text.startswith((".", "~"))


def resolve_config(kind: str, ref: str | os.PathLike[str]) -> Path:
    """The YAML file of a config of ``kind`` (a key of :data:`CONFIG_KINDS`) named by ``ref``.

    One contract for every kind:

    * a **name** (see :func:`is_config_path`) is ``config/<kind>/<name>.yaml`` in the package
      share; an unknown name is a :class:`~morl_robot.errors.UnknownNameError` naming the kind,
      the name and the available names;
    * a **path** is used as given (``~`` expanded); a relative path that does not exist in the
      current folder is also looked up under the share's ``config/<kind>/`` and ``config/`` (so
      ``learner/sawyer_front_demos.yaml`` keeps naming the shipped file); a missing file is a
      :class:`~morl_robot.errors.ConfigError` naming the kind and the places looked in.

    Whether the file parses and fits its dataclass is :func:`morl_robot.configuration.load_config`'s
    business; this only finds it.
    """
    from morl_robot.errors import ConfigError, UnknownNameError

    what = CONFIG_KINDS[_check_kind(kind)]
    text = os.fspath(ref)
    if not text:
        raise UnknownNameError(f"no {what} given; available: {', '.join(config_names(kind))} "
                               f"(config/{kind}/<name>.yaml), or a path to a .yaml file")
    if not is_config_path(ref):
        path = config_path(kind) / f"{text}.yaml"
        if path.is_file():
            return path
        raise UnknownNameError(f"unknown {what} '{text}'; available: {', '.join(config_names(kind))} "
                               f"(config/{kind}/<name>.yaml), or a path to a .yaml file")
    path = Path(text).expanduser()
    looked = [path]
    if not path.is_absolute():
        looked += [config_path(kind) / path, config_path(path)]
    for candidate in looked:
        if candidate.exists():  # a directory too: loading it says so
            return candidate
    raise ConfigError(f"{what} file '{text}' not found (looked in: {', '.join(str(p) for p in looked)})")


def _check_kind(kind: str) -> str:
    if kind not in CONFIG_KINDS:
        raise ValueError(f"unknown config kind '{kind}'; kinds: {', '.join(CONFIG_KINDS)}")
    return kind
