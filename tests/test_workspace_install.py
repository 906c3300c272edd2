"""A colcon workspace (issue 41): `morl-robot` is on PATH after `source install/setup.bash`
(bin/morl-robot forwards to the console script under lib/morl_robot that `ros2 run` uses; pip
builds leave it out), and setup.py passes setuptools no unknown option.  The real `colcon build`
is checked by docs/howto/colcon_workspace.md's steps (tests/launch_tests run in that workspace)."""
from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRAPPER = ROOT / "scripts" / "morl-robot"


def setup_kwargs(monkeypatch, *argv: str) -> dict:
    """setup.py's keyword arguments when run as ``setup.py ARGV`` (setuptools.setup captured)."""
    import setuptools

    captured: dict = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.setattr(sys, "argv", ["setup.py", *argv])
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    return captured


# what colcon runs (colcon_core.task.python.build): install, or develop for --symlink-install;
# what pip runs through setuptools.build_meta: bdist_wheel, editable_wheel, dist_info
COLCON = (["egg_info", "build", "install", "--install-scripts", "$base/lib/morl_robot", "install_data"],
          ["develop", "--editable", "--no-deps", "symlink_data"])
PIP = (["bdist_wheel", "--dist-dir", "dist"], ["editable_wheel"], ["dist_info"])


@pytest.mark.parametrize("argv", COLCON + PIP, ids=lambda a: a[0] if a[0] != "egg_info" else "install")
def test_only_a_colcon_install_gets_the_bin_forwarder_and_the_results_policies(monkeypatch, argv):
    kw = setup_kwargs(monkeypatch, *argv)
    bins = [files for target, files in kw["data_files"] if target == "bin"]
    assert bins == ([] if argv in PIP else [["scripts/morl-robot"]])
    policies = {f for target, files in kw["data_files"] if target.startswith("share/morl_robot/results") for f in files}
    assert ("results/demo/seed0/policy.onnx" in policies) is (argv not in PIP)  # launch's policy:=results/…
    assert "tests_require" not in kw  # setuptools: "Unknown distribution option: 'tests_require'"
    assert "morl-robot = morl_robot.cli:main" in kw["entry_points"]["console_scripts"]


def test_setup_cfg_installs_the_console_scripts_where_ros2_run_looks():
    cfg = (ROOT / "setup.cfg").read_text()
    assert "[install]\ninstall_scripts=$base/lib/morl_robot" in cfg
    assert "[develop]\nscript_dir=$base/lib/morl_robot" in cfg


def _prefix(tmp_path: Path, symlink: bool) -> Path:
    """install/morl_robot as colcon leaves it: lib/morl_robot/morl-robot (here a stand-in that
    echoes its arguments) and bin/morl-robot (a copy, or with --symlink-install a symlink)."""
    prefix = tmp_path / "install" / "morl_robot"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "morl_robot").mkdir(parents=True)
    cli = prefix / "lib" / "morl_robot" / "morl-robot"
    cli.write_text('#!/bin/sh\necho "lib/morl_robot/morl-robot $*"\n')
    cli.chmod(0o755)
    if symlink:
        (prefix / "bin" / "morl-robot").symlink_to(WRAPPER)
    else:
        shutil.copy2(WRAPPER, prefix / "bin" / "morl-robot")
    return prefix


@pytest.mark.parametrize("symlink", [False, True], ids=["install", "symlink-install"])
def test_morl_robot_on_path_runs_the_console_script_ros2_run_uses(tmp_path, symlink):
    assert os.access(WRAPPER, os.X_OK), "scripts/morl-robot must be executable (colcon keeps the mode)"
    prefix = _prefix(tmp_path, symlink)
    env = {**os.environ, "PATH": f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["morl-robot", "train", "--task", "two words"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "lib/morl_robot/morl-robot train --task two words"


def test_a_bin_forwarder_without_its_console_script_says_where_it_looked(tmp_path):
    prefix = _prefix(tmp_path, symlink=False)
    (prefix / "lib" / "morl_robot" / "morl-robot").unlink()
    done = subprocess.run([str(prefix / "bin" / "morl-robot"), "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 127
    assert "lib/morl_robot/morl-robot not found" in done.stderr and "colcon build" in done.stderr
