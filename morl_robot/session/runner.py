"""Running a session's node graph as processes from the CLI: start, watch, stop cleanly.

:class:`SessionRunner` starts the :class:`~morl_robot.session.processes.NodeSpec` list of a
session on one DDS domain, gives the caller a :class:`~morl_robot.nodes.probe.GraphProbe` on the
same domain, notices a node that dies (and shows the end of its log), and on Ctrl-C or the end
of the session stops every node with SIGINT, so each runs its own clean shutdown (the learner
writes its checkpoint), escalating to SIGKILL only after a timeout.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Self

from morl_robot.errors import GraphStalled, MorlRobotError
from morl_robot.session.processes import (
    NodeProcess,
    NodeSpec,
    ProcessGroup,
    pick_domain_id,
    ros_env,
)


def first_error_line(log: str) -> str:
    """The first error a node logged (rclpy's ``[ERROR]`` / ``[FATAL]`` lines, or ``error: …``
    from its process), without the logger's prefix; "" if none."""
    for line in log.splitlines():
        if line.startswith("error: "):
            return line[len("error: "):].strip()
        for tag in ("[ERROR]", "[FATAL]"):
            if tag in line:
                return line.split("]: ", 1)[-1].strip() if "]: " in line else line.strip()
    return ""


class NodeDiedError(MorlRobotError):
    """A node of the session exited unexpectedly; the message has the end of its log."""


def session_env(domain_id: int | None, localhost: bool = True) -> tuple[int, dict[str, str]]:
    """Domain and environment for a session: ``domain_id`` if given, else ``$ROS_DOMAIN_ID`` if
    set, else a random free-ish one.  ``localhost=False`` keeps the caller's discovery range (for
    actors on other machines) instead of forcing ``LOCALHOST``."""
    if domain_id is None:
        env_id = os.environ.get("ROS_DOMAIN_ID")
        domain_id = int(env_id) if env_id else pick_domain_id()
    env = ros_env(domain_id)
    if not localhost:
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    return domain_id, env


def release_estop(probe: Any, namespace: str, timeout: float = 60.0,
                  check: Callable[[], None] | None = None) -> str:
    """Call ``<namespace>/safety/reset`` until the monitor accepts it, i.e. until its own checks
    pass (sensors fresh and finite, no active violation); returns the monitor's answer.  Raises
    :class:`NodeDiedError` with the last refusal after ``timeout`` s.  ``check`` runs before every
    try (the CLI: a dead node ends the wait at once)."""
    from std_srvs.srv import Trigger

    service = f"{namespace.rstrip('/')}/safety/reset"
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        try:
            reply = probe.call(service, Trigger, timeout=5.0)
        except TimeoutError:
            reply = None
        if reply is not None and reply.success:
            return str(reply.message)
        if time.monotonic() > deadline:
            why = reply.message if reply is not None else "service not available"
            raise NodeDiedError(f"the safety monitor in {namespace} did not release within {timeout:.0f} s: {why}")
        time.sleep(0.5)


@contextlib.contextmanager
def _stop_signals_deferred() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP for the body: their Python handlers are replaced by one
    that only notes the signal, and the first one noted is raised again once the handlers are back
    (Python runs signal handlers in the main thread whichever thread the kernel picked, so this
    works where blocking the signal mask of one thread would not)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in stops}
    caught: list[int] = []
    for sig in stops:
        signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught:
            signal.raise_signal(caught[0])


class SessionRunner:
    def __init__(self, specs: Sequence[NodeSpec], log_dir: str | os.PathLike[str], domain_id: int | None = None,
                 localhost: bool = True) -> None:
        self.specs = list(specs)
        self.domain_id, self.env = session_env(domain_id, localhost)
        self.log_dir = Path(log_dir)
        self.group = ProcessGroup(self.env, self.log_dir)
        self.probe: Any = None
        self._interrupted = False

    def start(self) -> None:
        """Start every node process, then the CLI's graph probe.  Ctrl-C, SIGTERM and SIGHUP are
        held back while the probe is being created (and delivered right after), so an interrupted
        start-up leaves no half-made probe that :meth:`stop` cannot reach: one whose DDS threads
        outlive the interpreter aborts it at exit."""
        from morl_robot.nodes.probe import GraphProbe

        for spec in self.specs:  # (not deferred: a child process would inherit the blocked signals)
            self.group.start(spec)
        with _stop_signals_deferred():
            self.probe = GraphProbe(self.domain_id, name=f"morl_robot_cli_{os.getpid()}")
        self.probe.check = self.check_failed  # every wait on the graph ends at once when a node fails

    def check_failed(self) -> None:
        """:meth:`check_alive` for nodes that exited with an error of their own (status > 0: a
        configure that failed, a crash), with the end of the node's log; a node that finished
        (0) or was stopped by a signal (< 0, e.g. a benchmark's injected fault) is left to
        :meth:`wait`."""
        self.check_alive(lambda p: (p.returncode or 0) <= 0)

    def process(self, executable: str, namespace: str | None = None) -> NodeProcess:
        for p in self.group.processes:
            if p.spec.executable == executable and (namespace is None or p.spec.namespace == namespace):
                return p
        raise KeyError(f"no {executable} in {namespace or 'the session'}")

    def check_alive(self, allowed_to_exit: Callable[[NodeProcess], bool] = lambda p: False) -> None:
        for p in self.group.dead():
            if not allowed_to_exit(p):
                text = p.log_text()
                tail = "\n".join(text.splitlines()[-15:])
                first = first_error_line(text)
                raise NodeDiedError(
                    f"{p.spec.namespace.rstrip('/')}/{p.spec.name} exited with status {p.returncode}"
                    + (f": {first}" if first else "") + f"\nlog {p.log_path}, last lines:\n{tail}"
                )

    def release_safety(self, namespaces: Sequence[str], timeout: float = 60.0,
                       allowed_to_exit: Callable[[NodeProcess], bool] = lambda p: False) -> None:
        """Ask each namespace's safety monitor to release its start-up e-stop (``safety/reset``).
        A node that exits meanwhile is an error unless ``allowed_to_exit`` (as in :meth:`wait`: a
        learner that reached its total_steps on a tiny budget may finish before the release is
        through).  (Another session on the same names: this session's nodes give way at start,
        naming it, ``nodes.base.SessionGuard``.)"""
        for ns in namespaces:
            release_estop(self.probe, ns, timeout, lambda: self.check_alive(allowed_to_exit))

    def wait_for_first_episode(self, timeout: float = 120.0) -> None:
        """Until the robot node has started its first episode (on hardware that start is a reset
        motion of seconds, made under the start-up e-stop: a release before it ends lets one late
        sensor sample latch an e-stop that stops the reset, and no episode would ever begin).
        No episode by ``timeout`` is an error naming the robot's log."""
        assert self.probe is not None
        give_up = time.monotonic() + timeout
        while "episode" not in (status := self.probe.diagnostics("robot_node: robot")):
            self.check_alive()
            if time.monotonic() > give_up:
                raise GraphStalled(f"the robot started no episode in {timeout:.0f} s (faults: "
                                   f"{status.get('faults', 'no status')}); see {self.log_dir / 'robot_node.log'}")
            time.sleep(0.1)

    def wait(self, done: Callable[[], bool], tick: Callable[[], None] | None = None, period: float = 0.2,
             allowed_to_exit: Callable[[NodeProcess], bool] = lambda p: False) -> bool:
        """Until ``done()`` (True) or Ctrl-C, SIGTERM or SIGHUP (False: the caller then stops the
        nodes cleanly and writes what it writes at the end), calling ``tick`` every ``period`` s."""
        stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.getsignal(sig) for sig in stops}

        def on_stop(signum: int, frame: Any) -> None:
            self._interrupted = True

        for sig in stops:
            signal.signal(sig, on_stop)
        try:
            while not self._interrupted and not done():
                self.check_alive(allowed_to_exit)
                if tick is not None:
                    tick()
                time.sleep(period)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return not self._interrupted

    def stop(self, timeout: float = 30.0) -> dict[str, int | None]:
        codes = self.group.stop(timeout)
        if self.probe is not None:
            self.probe.close()
            self.probe = None
        return codes

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
