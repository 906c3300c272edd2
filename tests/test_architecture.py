"""The architecture docs/explanation/architecture.md describes, checked against the code.

* The core (every package but ``nodes/``, ``cli/`` and ``bench/``) is importable without ROS: importing
  all of it, in a fresh interpreter, loads no ``rclpy`` (tests/test_package.py checks the source text;
  this checks what an import actually pulls in, transitively).
* The page names every package and top-level module of ``morl_robot/``, so a new one cannot go
  undocumented.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanation" / "architecture.md"

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


def test_the_architecture_page_names_every_package():
    """docs/explanation/architecture.md has a row for each package and top-level module of morl_robot/."""
    text = PAGE.read_text()
    pkg = ROOT / "morl_robot"
    names = sorted({p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
                   | {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"})
    missing = [n for n in names if not re.search(rf"`{n}(/|\.py)?`", text)]
    assert not missing, f"docs/explanation/architecture.md does not describe: {missing}"
