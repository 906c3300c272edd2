"""Every node executable answers ``--help`` (``ros2 run morl_robot robot_node --help``) with its
usage and documentation and exits 0, instead of starting the node."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from morl_robot.session.processes import EXECUTABLES


@pytest.mark.parametrize("executable", EXECUTABLES)
def test_node_executable_answers_help(executable):
    done = subprocess.run([sys.executable, "-m", f"morl_robot.nodes.{executable}", "--help"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: ros2 run morl_robot {executable} [--ros-args"), done.stdout[:300]
    first_line = importlib.import_module(f"morl_robot.nodes.{executable}").__doc__.strip().splitlines()[0]
    assert first_line in done.stdout
