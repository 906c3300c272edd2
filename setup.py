"""ament_python package definition for morl_robot.

Works both in a ROS 2 colcon workspace (``colcon build``; rclpy and the message packages come
from the ROS install) and standalone on plain Python 3.11 (``pip install -e .[ros,test]``; ROS 2
comes from the ``ros-*`` wheels on PyPI).  Versions are pinned to a set known to work together.
"""
import os
import sys
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "morl_robot"


def share_tree(folder: str, pattern: str = "*") -> list[tuple[str, list[str]]]:
    """Every file under ``folder`` matching ``pattern`` (sub-folders kept) as ament share data_files entries."""
    entries: dict[str, list[str]] = {}
    for path in glob(os.path.join(folder, "**", pattern), recursive=True):
        if os.path.isfile(path):
            target = os.path.join("share", PACKAGE, os.path.dirname(path))
            entries.setdefault(target, []).append(path)
    return sorted(entries.items())


def pip_only_requirements() -> list[str]:
    """requirements/pip_only.txt: torch, onnx, onnxruntime, mujoco, gymnasium, tensorboard (pinned;
    a ROS workspace installs them with pip, everything else comes from rosdep)."""
    here = os.path.dirname(os.path.realpath(__file__))  # colcon --symlink-install runs a symlink of setup.py
    with open(os.path.join(here, "requirements", "pip_only.txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]


# numpy is a range, not a pin: in a ROS workspace the message packages' C extensions are built
# against the distribution's numpy (1.26 on Ubuntu Noble), which pip must not replace.
CORE_REQUIRES = [
    "numpy>=1.26,<3",
    "pyyaml==6.0.3",
    "matplotlib==3.11.2",
    "tqdm==4.70.1",
    "scipy==1.17.1",
    # generalisation metrics (morl_robot/evaluation/generalization.py): exact hypervolume, and rliable's
    # IQM / optimality gap with stratified bootstrap CIs; rliable's arch 7.x fails to import with pandas 3
    "moocore==0.3.2",
    "rliable==1.2.0",
    "pandas==2.3.3",
] + pip_only_requirements()

# ROS 2 (Kilted-era) from the PyPI wheels; in a colcon workspace these come from the ROS install.
ROS_REQUIRES = [
    "ros-rclpy==9.1.2",
    "ros-rmw-fastrtps-cpp==9.3.3",
    "ros-std-msgs==5.5.1",
    "ros-sensor-msgs==5.5.1",
    "ros-geometry-msgs==5.5.1",
    "ros-std-srvs==5.5.1",
    "ros-diagnostic-msgs==5.5.1",
    "ros-trajectory-msgs==5.5.1",
    "ros-visualization-msgs==5.5.1",  # the scene as a MarkerArray for RViz/Foxglove
    "ros-rosgraph-msgs==2.3.0",
    "ros-lifecycle-msgs==2.3.0",
    "ros-builtin-interfaces==2.3.0",
]

# pytest 8.x: ROS's launch_testing pytest plugin (loaded by `colcon test` wherever ROS is installed)
# declares the `path` hook argument that pytest 9 removed (PluginValidationError at start-up).
TEST_REQUIRES = [
    "pytest==8.4.2",
    "pytest-xdist==3.8.0",  # make test: two workers (most graph tests wait on DDS and processes, not on a core)
    "hypothesis==6.170.15",
    "pymoo==0.6.2",
    "mo-gymnasium==1.3.2",
    "rosbags==0.11.9",  # an independent MCAP/CDR reader: the recordings are read back with it
    "ruff==0.17.6",
    "sphinx==9.0.4",  # make docs; tests/docs build the documentation with warnings as errors
    "myst-parser==5.2.0",
]

# pip (wheels, editable wheels) puts the console scripts on PATH itself; colcon runs `setup.py
# install|develop` with scripts under lib/morl_robot (setup.cfg, for `ros2 run`), so a workspace
# also gets bin/morl-robot, a forwarder colcon's setup.bash puts on PATH (scripts/morl-robot), and
# the committed policies under share/morl_robot/results/ (launch's policy:=results/…, 18 MB).
PIP_BUILD = {"bdist_wheel", "editable_wheel", "dist_info", "sdist", "bdist_egg"}
WORKSPACE_ONLY = [] if PIP_BUILD & set(sys.argv[1:]) else [("bin", ["scripts/morl-robot"])] + share_tree("results", "*.onnx")

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["tests", "tests.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ]
    + share_tree("launch")
    + share_tree("config")
    + share_tree("sim")
    + WORKSPACE_ONLY,
    python_requires=">=3.10",
    install_requires=CORE_REQUIRES,
    # sac: the single-objective learner of `experiment hopper-dynamics` (issue 37); it keeps the venv's torch
    extras_require={"ros": ROS_REQUIRES, "test": TEST_REQUIRES, "sac": ["stable-baselines3==2.9.2"]},
    zip_safe=False,
    maintainer="morl_robot maintainers",
    maintainer_email="morl-robot@example.org",
    description="Multi-objective RL (MO-MPO) on real and simulated robots with ROS 2 and MuJoCo",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "morl-robot = morl_robot.cli:main",
            # nodes (`ros2 run morl_robot <name>`); morl_robot.session.processes.EXECUTABLES
            "robot_node = morl_robot.nodes.robot_node:main",
            "learner_node = morl_robot.nodes.learner_node:main",
            "policy_server = morl_robot.nodes.policy_server:main",
            "safety_monitor = morl_robot.nodes.safety_monitor:main",
            "driver_emulator = morl_robot.nodes.driver_emulator:main",
            "vector_actor = morl_robot.nodes.vector_actor:main",
            "recorder = morl_robot.nodes.recorder:main",
            "live_view = morl_robot.nodes.live_view:main",
        ],
        # tasks (morl_robot.tasks.registry; a plugin package declares its own the same way:
        # docs/howto/add_task.md)
        "morl_robot.tasks": [
            "sawyer_peg_in_hole = morl_robot.tasks.sawyer_peg_in_hole:SawyerPegInHole",
            "shadow_touch = morl_robot.tasks.shadow_hand:ShadowTouch",
            "shadow_turn = morl_robot.tasks.shadow_hand:ShadowTurn",
            "shadow_orient = morl_robot.tasks.shadow_hand:ShadowOrient",
        ],
    },
)
