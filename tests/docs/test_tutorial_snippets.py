"""The Python snippets of the tutorials run as written (the doc-command test runs their shell commands)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_snippets(page: Path) -> list[str]:
    """The bodies of the ```python fences of ``page``, dedented."""
    import textwrap

    text = page.read_text(encoding="utf-8")
    fence = re.compile(r"^(\s*)```python\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
    return [textwrap.dedent(m.group(2)) for m in fence.finditer(text)]


def test_the_checklists_calibration_snippet_computes_the_simulated_home_tip_pose() -> None:
    """real_robot_checklist.md: the peg tip's pose from measured joint positions, with the project's
    kinematics model; at the simulated home it is 120 mm above the simulated hole (0.65, 0, -0.10)."""
    snippets = python_snippets(ROOT / "docs" / "tutorials" / "real_robot_checklist.md")
    assert len(snippets) == 1
    proc = subprocess.run([sys.executable, "-c", snippets[0]], capture_output=True, text=True, check=False,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "peg tip [x, y, z, qw, qx, qy, qz]: [0.65, -0.0, 0.02, 0.0, 0.7142, 0.7, 0.0]" in proc.stdout
