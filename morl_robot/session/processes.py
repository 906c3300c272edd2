"""Starting morl_robot nodes as real processes on one DDS domain, and stopping them cleanly.

The CLI (``morl-robot train|deploy|safety-test``), the benchmarks and the end-to-end tests all
start nodes through :class:`NodeProcess`, the same way ``ros2 launch`` does: ``python -m
morl_robot.nodes.<executable> --ros-args -r __ns:=… -r __node:=… -p key:=value -r from:=to``.
Each process's output goes to ``<log_dir>/<name>.log``.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import yaml

from morl_robot.errors import ConfigError
from morl_robot.node_settings import looks_numeric

#: Executables (console scripts in setup.py, modules in morl_robot.nodes).
EXECUTABLES = ("robot_node", "learner_node", "policy_server", "safety_monitor", "driver_emulator", "vector_actor",
               "recorder", "live_view")


#: ``LO-HI``: the range :func:`pick_domain_id` draws from (default 1-100), e.g. one block per
#: test worker or per user on a shared machine, so automatically picked domains never meet.
DOMAIN_RANGE_ENV = "MORL_DOMAIN_IDS"


def domain_range() -> tuple[int, int]:
    """The ``(lo, hi)`` of ``$MORL_DOMAIN_IDS`` (default ``(1, 100)``), checked."""
    text = os.environ.get(DOMAIN_RANGE_ENV, "").strip()
    if not text:
        return 1, 100
    lo_text, _, hi_text = text.partition("-")
    try:
        lo, hi = int(lo_text), int(hi_text or lo_text)
    except ValueError:
        raise ConfigError(f"${DOMAIN_RANGE_ENV}={text!r}: expected LO-HI, e.g. 101-150") from None
    if not 0 <= lo <= hi <= 232:  # Fast DDS's port arithmetic ends at 232
        raise ConfigError(f"${DOMAIN_RANGE_ENV}={text!r}: expected 0 <= LO <= HI <= 232")
    return lo, hi


def pick_domain_id() -> int:
    """A ROS_DOMAIN_ID for one run, drawn at random from :func:`domain_range` (random per
    process, so parallel runs rarely meet; discovery is also kept on localhost)."""
    return random.Random(os.getpid() * 7919 + time.monotonic_ns()).randint(*domain_range())


#: Set for node processes started here: the pid of the process that started them (``run_node``
#: stops the node when that process ends; see :func:`morl_robot.nodes.base.stop_with_parent`).
PARENT_ENV = "MORL_ROBOT_PARENT_PID"


def ros_env(domain_id: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for node processes: one domain, discovery on this machine, Fast DDS, unbuffered."""
    env = dict(os.environ if base is None else base)
    env.update({
        PARENT_ENV: str(os.getpid()),
        "ROS_DOMAIN_ID": str(domain_id),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "RMW_IMPLEMENTATION": env.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"),
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
    })
    return env


def format_parameter(value: Any) -> str:
    """A parameter value as ``-p name:=value`` expects it (YAML).  A string is quoted unless YAML
    reads it back as the same string: ``792757145550`` (a session id of decimal digits only),
    ``true`` or ``1e5`` would otherwise arrive as a number or a boolean."""
    if isinstance(value, str):
        return value if _reads_back(value) else yaml.safe_dump(value, default_style='"').strip()
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _reads_back(text: str) -> bool:
    """Whether ``text`` unquoted is read as the same string both by YAML and by ROS's own parameter
    parser (rcl_yaml_param_parser), which takes anything ``strtod``/``strtol`` reads in full as a
    number: ``0e5123`` (a hex session id, 0.0 to rcl though PyYAML keeps it a string), ``.5``, ``0x1f``."""
    if text == "" or ":" in text or " " in text or looks_numeric(text):
        return False
    try:
        return yaml.safe_load(text) == text
    except yaml.YAMLError:
        return False



@dataclass
class NodeSpec:
    executable: str  # one of EXECUTABLES
    name: str  # node name (also the log file name)
    namespace: str = "/"
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # on top of the session's environment

    def argv(self) -> list[str]:
        if self.executable not in EXECUTABLES:
            raise ValueError(f"unknown executable '{self.executable}'; known: {', '.join(EXECUTABLES)}")
        args = [sys.executable, "-m", f"morl_robot.nodes.{self.executable}", "--ros-args",
                "-r", f"__node:={self.name}", "-r", f"__ns:={self.namespace}"]
        for key, value in self.parameters.items():
            args += ["-p", f"{key}:={format_parameter(value)}"]
        for src, dst in self.remappings.items():
            args += ["-r", f"{src}:={dst}"]
        return args


class NodeProcess:
    """One node in its own process (own session, so Ctrl-C in a terminal reaches only us)."""

    def __init__(self, spec: NodeSpec, env: dict[str, str], log_dir: str | os.PathLike[str]) -> None:
        self.spec, self.env = spec, env
        self.log_path = Path(log_dir) / f"{spec.name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> NodeProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        try:
            self.proc = subprocess.Popen(self.spec.argv(), env={**self.env, **self.spec.env}, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def wait_exit(self, timeout: float) -> int:
        """The exit status once the process has ended by itself; ``TimeoutError`` (with the end of
        its log) if it still runs after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.alive:
            raise TimeoutError(f"{self.spec.name} still running after {timeout:g} s:\n{self.log_text()[-3000:]}")
        return int(self.returncode or 0)

    def send_signal(self, sig: int) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(sig)

    def stop(self, timeout: float = 20.0, sig: int = signal.SIGINT) -> int | None:
        """Send ``sig`` (default SIGINT: the node's clean shutdown), escalate to SIGKILL after
        ``timeout`` s; returns the exit code."""
        if self.proc is None:
            return None
        if self.alive:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def kill(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(5)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class ProcessGroup:
    """The processes of one session; stops them in reverse start order."""

    def __init__(self, env: dict[str, str], log_dir: str | os.PathLike[str]) -> None:
        self.env, self.log_dir = env, Path(log_dir)
        self.processes: list[NodeProcess] = []

    def start(self, spec: NodeSpec) -> NodeProcess:
        p = NodeProcess(spec, self.env, self.log_dir).start()
        self.processes.append(p)
        return p

    def dead(self) -> list[NodeProcess]:
        return [p for p in self.processes if not p.alive]

    def stop(self, timeout: float = 20.0) -> dict[str, int | None]:
        return {p.spec.name: p.stop(timeout) for p in reversed(self.processes)}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
