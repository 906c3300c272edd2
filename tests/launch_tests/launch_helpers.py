"""Shared by the launch tests: the repo's launch files included with arguments, on a DDS domain of
this test run's own, discovery on this machine; run under ``launch_testing`` (the ROS convention:
a graph that stays up while active tests look at it) or, for launches that end by themselves,
through ``launch.LaunchService`` until they do.

The launch tests need ROS's ``launch``, ``launch_ros`` and ``launch_testing`` and an installed
morl_robot (a sourced colcon workspace: ``launch_ros`` finds the node executables through the
ament index); elsewhere (the pip-only venv) they are skipped with the reason."""
from __future__ import annotations

import os
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDS = ("ROS 2's launch, launch_ros and launch_testing are not installed (the pip-only venv); "
         "the same graphs are tested through the CLI")


def require_ros_workspace() -> None:
    """Skip (at collection) unless the launch packages and an installed morl_robot are there."""
    pytest.importorskip("launch_testing", reason=NEEDS)
    pytest.importorskip("launch_ros", reason=NEEDS)
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix("morl_robot")
    except PackageNotFoundError:
        pytest.skip("morl_robot is not installed in a sourced workspace (colcon build; source install/setup.bash)",
                    allow_module_level=True)


def domain_for(name: str) -> int:
    """A ROS_DOMAIN_ID for one launch test file: from ``$MORL_TEST_DOMAINS`` (``LO-HI``) when set,
    else from 131-230, spread by the file's name."""
    span = os.environ.get("MORL_TEST_DOMAINS", "")
    lo, _, hi = span.partition("-") if span else ("131", "", "230")
    ids = list(range(int(lo), int(hi or lo) + 1))
    return ids[zlib.crc32(name.encode()) % len(ids)]


def session(launch_file: str, domain: int, **arguments: str) -> list:
    """``ros2 launch morl_robot <launch_file> name:=value…`` as launch actions on ``domain``."""
    from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    return [
        SetEnvironmentVariable("ROS_DOMAIN_ID", str(domain)),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
        SetEnvironmentVariable("PYTHONUNBUFFERED", "1"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(str(ROOT / "launch" / launch_file)),
                                 launch_arguments=list(arguments.items())),
    ]


@dataclass
class LaunchRun:
    """What a launch did, run until it ended by itself (or was stopped at its timeout)."""

    returncode: int
    ended_by_itself: bool
    reasons: list[str]  # the Shutdown events' reasons
    exit_codes: dict[str, int]  # process name (robot_node-1, …) -> exit code
    output: dict[str, str]  # process name -> stdout + stderr

    def process(self, prefix: str) -> str:
        (name,) = [n for n in self.exit_codes if n.rsplit("-", 1)[0] == prefix]
        return name


def run_until_it_ends(launch_file: str, domain: int, timeout: float, **arguments: str) -> LaunchRun:
    """``ros2 launch morl_robot <launch_file> …`` through ``launch.LaunchService`` (what ``ros2
    launch`` runs), left to end by itself; stopped (``ended_by_itself`` false) after ``timeout`` s.

    Launches that end by themselves (training reaching its steps, the safety test's probes
    finishing, a required node failing) are tested this way: ``launch_testing`` counts a launch
    that ends before its active tests as a failure."""
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit, OnProcessIO, OnShutdown

    import launch

    reasons: list[str] = []
    exit_codes: dict[str, int] = {}
    output: dict[str, list[str]] = {}

    def on_io(event) -> None:
        output.setdefault(event.process_name, []).append(event.text.decode(errors="replace"))

    def on_exit(event, context) -> None:
        exit_codes[event.process_name] = int(event.returncode)

    def on_shutdown(event, context) -> None:
        reasons.append(str(event.reason))

    service = launch.LaunchService()
    service.include_launch_description(launch.LaunchDescription([
        RegisterEventHandler(OnProcessIO(on_stdout=on_io, on_stderr=on_io)),
        RegisterEventHandler(OnProcessExit(on_exit=on_exit)),
        RegisterEventHandler(OnShutdown(on_shutdown=on_shutdown)),
        *session(launch_file, domain, **arguments),
    ]))
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        service.shutdown()

    timer = threading.Timer(timeout, stop)
    timer.start()
    try:
        returncode = service.run()
    finally:
        timer.cancel()
    return LaunchRun(returncode, not timed_out.is_set(), reasons, exit_codes,
                     {name: "".join(chunks) for name, chunks in output.items()})
