"""package.xml keys resolve for `rosdep install` on Jazzy and Kilted (Ubuntu Noble); the pinned
pip-only dependencies come from requirements/pip_only.txt; numpy is not pinned hard.

``CHECKED_KEYS`` was checked against rosdistro's database (``jazzy/distribution.yaml``,
``kilted/distribution.yaml``, ``rosdep/base.yaml``, ``rosdep/python.yaml`` at rosdistro commit
8468e88, August 2026).  With ``MORL_ROSDISTRO=<a rosdistro checkout>`` the test below re-checks
every declared key against that database itself."""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DISTROS = ("jazzy", "kilted")
UBUNTU = "noble"

#: key → where rosdep resolves it on Ubuntu Noble (ROS package of the distribution, or apt package)
CHECKED_KEYS = {
    **{name: "ros package" for name in (
        "rclpy", "lifecycle_msgs", "rcl_interfaces", "builtin_interfaces", "std_msgs", "std_srvs",
        "sensor_msgs", "geometry_msgs", "trajectory_msgs", "visualization_msgs", "diagnostic_msgs", "rosgraph_msgs", "launch",
        "launch_ros", "ros2launch", "ament_index_python", "launch_testing", "launch_testing_ros")},
    "python3-numpy": "apt python3-numpy",
    "python3-yaml": "apt python3-yaml",
    "python3-matplotlib": "apt python3-matplotlib",
    "python3-scipy": "apt python3-scipy",
    "python3-tqdm": "apt python3-tqdm",
    "python3-pytest": "apt python3-pytest",
    "python3-hypothesis": "apt python3-hypothesis",
}

#: Keys seen in the wild that must not come back: no rule, not a package, or the wrong version.
REFUSED_KEYS = {
    "python3-pymoo-pip": "no rosdep rule",
    "python3-onnx-pip": "no rosdep rule",
    "rclpy_lifecycle": "not a package (lifecycle is rclpy.lifecycle)",
    "python3-torch": "Ubuntu's torch, not the pinned one (requirements/pip_only.txt)",
    "python3-onnxruntime-pip": "rosdep's pip rule installs the newest release, not the pinned one",
    "python3-mujoco-pip": "rosdep's pip rule installs the newest release, not the pinned one",
}


def declared_keys() -> dict[str, list[str]]:
    tree = ET.parse(ROOT / "package.xml").getroot()
    keys: dict[str, list[str]] = {}
    for tag in ("depend", "exec_depend", "build_depend", "buildtool_depend", "test_depend"):
        for e in tree.findall(tag):
            keys.setdefault(e.text.strip(), []).append(tag)
    return keys


def test_every_declared_key_is_a_checked_one():
    keys = declared_keys()
    unchecked = sorted(set(keys) - set(CHECKED_KEYS))
    assert not unchecked, f"package.xml keys not checked against rosdistro's database: {unchecked}"
    assert not set(keys) & set(REFUSED_KEYS), {k: REFUSED_KEYS[k] for k in set(keys) & set(REFUSED_KEYS)}


def test_pip_only_requirements_are_pinned_and_installed_by_setup():
    lines = [ln.strip() for ln in (ROOT / "requirements" / "pip_only.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    names = {re.split("==", ln)[0] for ln in lines}
    assert names == {"torch", "onnx", "onnxruntime", "mujoco", "gymnasium", "tensorboard",
                     "imageio", "imageio-ffmpeg", "mcap", "mcap-ros2-support", "foxglove-sdk",
                     "numba", "llvmlite"}
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", ln) for ln in lines), lines
    assert "torch==2.13.0" in lines
    setup = (ROOT / "setup.py").read_text()
    assert "pip_only.txt" in setup
    assert not re.search(r'"numpy==', setup), "numpy must not be pinned hard (a workspace's messages use its numpy)"


def _resolves_on_ubuntu(rule: object) -> bool:
    if not isinstance(rule, dict):
        return False
    ubuntu = rule.get("ubuntu", rule.get("*"))
    if isinstance(ubuntu, dict) and ("pip" not in ubuntu and "packages" not in ubuntu):
        ubuntu = ubuntu.get(UBUNTU, ubuntu.get("*"))
    return bool(ubuntu)


@pytest.mark.skipif(not os.environ.get("MORL_ROSDISTRO"),
                    reason="set MORL_ROSDISTRO to a rosdistro checkout to check against the real rosdep database")
def test_declared_keys_resolve_in_the_real_rosdep_database():
    db = Path(os.environ["MORL_ROSDISTRO"])
    rules: dict[str, object] = {}
    for name in ("base.yaml", "python.yaml"):
        rules.update(yaml.safe_load((db / "rosdep" / name).read_text()))
    for distro in DISTROS:
        release = yaml.safe_load((db / distro / "distribution.yaml").read_text())
        packages = set()
        for repo, entry in release["repositories"].items():
            if "release" in entry:
                packages.update(entry["release"].get("packages", [repo]))
        missing = [k for k in declared_keys() if k not in packages and not _resolves_on_ubuntu(rules.get(k))]
        assert not missing, f"{distro}/{UBUNTU}: no rosdep resolution for {missing}"
        for key, why in REFUSED_KEYS.items():  # the refused list stays true of the database
            if why == "no rosdep rule":
                assert key not in rules, key
            if why.startswith("not a package"):
                assert key not in packages and key not in rules, key
