"""The architecture docs/explanation/architecture.md describes, checked against the code.

* The core (every package but ``nodes/``, ``cli/`` and ``bench/``) is importable without ROS: importing
  all of it, in a fresh interpreter, loads no ``rclpy`` (tests/test_package.py checks the source text;
  this checks what an import actually pulls in, transitively).
* The imports the page states as rules (every import, also one inside a function): the core never
  imports ``nodes/``, ``cli/`` or ``bench/``; the foundation (``errors``, ``throttle``, ``resources``,
  ``configuration``, ``robots/``, ``tasks/``) imports only what lies below it.
* The page names every package and top-level module of ``morl_robot/``, so a new one cannot go
  undocumented.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanation" / "architecture.md"
PACKAGE = ROOT / "morl_robot"

#: The entry points and ROS wrappers: nothing else imports them.
ENTRY = {"nodes", "cli", "bench"}
#: The foundation, each with what it may import (besides itself).
FOUNDATION: dict[str, set[str]] = {
    "errors": set(),
    "throttle": set(),
    "resources": {"errors"},
    "configuration": {"errors", "resources"},
    "robots": {"errors", "throttle", "resources", "configuration"},
    "tasks": {"errors", "throttle", "resources", "configuration", "robots"},
}


def _package_of(path: Path) -> str:
    """``morl_robot/<package>/…`` or ``morl_robot/<module>.py`` → the package or module name."""
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[str, int]]:
    """(morl_robot package imported, line) for every import in ``path``, inside functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = ([f"{node.module}.{a.name}" for a in node.names] if node.module == "morl_robot"
                     else [node.module])
        else:
            continue
        found += [(n.split(".")[1], node.lineno) for n in names
                  if n.startswith("morl_robot.") and not n.split(".")[1].startswith("__")]
    return found


def _violations(allowed: Callable[[str, str], bool]) -> list[str]:
    """Every import of a morl_robot package that ``allowed(importer, imported)`` refuses, with its place."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        pkg = _package_of(path)
        for target, line in _imports(path):
            if target != pkg and not allowed(pkg, target):
                out.append(f"{path.relative_to(ROOT)}:{line}: {pkg} imports {target}")
    return out

_IMPORT_ALL_CORE = """
import importlib, pkgutil, sys
import morl_robot
skip = ("morl_robot.nodes", "morl_robot.cli", "morl_robot.bench",
        "morl_robot.session.launch_actions")  # launch_ros actions: only inside a launch file
for m in pkgutil.walk_packages(morl_robot.__path__, "morl_robot."):
    if not m.name.startswith(skip):
        importlib.import_module(m.name)
print(sorted({k.split('.')[0] for k in sys.modules if k.split('.')[0] in ('rclpy', 'rcl_interfaces', 'launch_ros')}))
"""


def test_the_core_imports_no_ros():
    """Importing every core module (all but nodes/, cli/, bench/) loads no rclpy, also transitively."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL_CORE], check=False, cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", (
        f"the core pulled in ROS modules: {out.stdout.strip()} (keep rclpy imports in morl_robot/nodes)")


def test_the_core_never_imports_the_nodes_or_the_entry_points():
    """No module outside nodes/, cli/, bench/ and session/ (which starts nodes) imports them, even lazily."""
    bad = _violations(lambda pkg, target: target not in ENTRY or pkg in ENTRY | {"session"})
    assert not bad, ("the core must not depend on the ROS nodes or the entry points "
                     "(docs/explanation/architecture.md): " + "; ".join(bad))


def test_the_foundation_imports_only_what_lies_below_it():
    """errors, throttle, resources, configuration, robots/, tasks/ import only lower layers, even lazily."""
    bad = _violations(lambda pkg, target: pkg not in FOUNDATION or target in FOUNDATION[pkg])
    assert not bad, ("a foundation package imports upward (docs/explanation/architecture.md: pass what it "
                     "needs in, or move it down): " + "; ".join(bad))


def test_the_architecture_page_names_every_package():
    """docs/explanation/architecture.md has a row for each package and top-level module of morl_robot/."""
    text = PAGE.read_text()
    pkg = ROOT / "morl_robot"
    names = sorted({p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
                   | {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"})
    missing = [n for n in names if not re.search(rf"`{n}(/|\.py)?`", text)]
    assert not missing, f"docs/explanation/architecture.md does not describe: {missing}"
