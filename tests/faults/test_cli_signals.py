"""Fault: SIGTERM or SIGHUP to a session CLI left its nodes running under PID 1 (train kept
training, no violations file).  Every way a CLI ends must stop its nodes: SIGTERM and SIGHUP like
Ctrl-C (clean stop, checkpoint, violations file), and SIGKILL of the CLI through the nodes' own
parent-death signal."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ros]


def _processes_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and "morl_robot.nodes." in cmd:
                pids.append(int(entry.name))
    return pids


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=["TERM", "HUP", "KILL"])
def test_ending_the_train_cli_ends_its_nodes(tmp_path, domain_id, sig):
    from morl_robot.session.processes import ros_env

    out = tmp_path / "run"
    marker = f"sigtest{os.getpid()}x{int(sig)}"
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", "sawyer_peg_in_hole", "--steps", "1000000",
           "--out", str(out), "--no-progress", "--namespace", marker, "--domain-id", str(domain_id)]
    cli = subprocess.Popen(cmd, env=ros_env(domain_id), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # the recipe trains on the vectorized actor (actors_kind auto): learner + vector actor
        assert _wait(lambda: len(_processes_with(marker)) >= 2, 60), "the session's nodes did not start"
        assert _wait(lambda: (out / "metrics.csv").exists() or (out / "episodes.csv").exists(), 90), \
            "the session did not get going"
        cli.send_signal(sig)
        cli.wait(timeout=90)
        assert _wait(lambda: not _processes_with(marker), 30), f"nodes survived {sig.name}: {_processes_with(marker)}"
        if sig != signal.SIGKILL:  # a clean stop: the learner's checkpoint and the CLI's own files
            assert list((out / "checkpoints").glob("ckpt-*.pt"))
            assert (out / "safety_violations.json").is_file()
            assert cli.returncode == 130
        else:  # the learner still got SIGINT from the parent-death signal and wrote its checkpoint
            assert _wait(lambda: list((out / "checkpoints").glob("ckpt-*.pt")), 30)
    finally:
        if cli.poll() is None:
            cli.kill()
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_sigterm_during_start_up_still_ends_cleanly(tmp_path, domain_id):
    """The signal can land before the session's wait loop (while the monitors are being released): the
    CLI must still stop its nodes, write its violations file and exit 130, not die with a traceback."""
    from morl_robot.session.processes import ros_env

    out = tmp_path / "run"
    marker = f"sigstart{os.getpid()}"
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", "sawyer_peg_in_hole", "--steps", "1000000",
           "--out", str(out), "--no-progress", "--namespace", marker, "--domain-id", str(domain_id)]
    cli = subprocess.Popen(cmd, env=ros_env(domain_id), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert _wait(lambda: len(_processes_with(marker)) >= 1, 60), "the session's nodes did not start"
        cli.send_signal(signal.SIGTERM)
        cli.wait(timeout=90)
        assert _wait(lambda: not _processes_with(marker), 30), f"nodes survived: {_processes_with(marker)}"
        assert cli.returncode == 130, cli.stdout.read().decode(errors="replace")[-2000:]
        assert (out / "safety_violations.json").is_file()
    finally:
        if cli.poll() is None:
            cli.kill()
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_stop_signal_during_the_probe_start_up_waits_until_it_is_whole(monkeypatch, tmp_path):
    """The CLI's graph probe (an rclpy context, an executor and its spin thread) is made with the stop
    signals held back: an interrupt that lands while it is being made arrives once it is assigned, so
    the clean stop can close it (a half-made probe's DDS threads abort the interpreter at exit)."""
    from morl_robot.nodes import probe as probe_module
    from morl_robot.session.runner import SessionRunner

    seen: list[str] = []

    class SlowProbe:
        def __init__(self, domain_id: int, name: str = "probe") -> None:
            os.kill(os.getpid(), signal.SIGTERM)  # lands in the middle of construction
            time.sleep(0.05)
            seen.append("constructed")

        def close(self) -> None:
            seen.append("closed")

    def on_term(signum, frame):
        seen.append("signal")
        raise KeyboardInterrupt

    monkeypatch.setattr(probe_module, "GraphProbe", SlowProbe)
    previous = signal.signal(signal.SIGTERM, on_term)
    runner = SessionRunner([], tmp_path / "logs", domain_id=0)
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.start()
        assert seen == ["constructed", "signal"] and isinstance(runner.probe, SlowProbe)
        runner.stop()
        assert seen[-1] == "closed"
    finally:
        signal.signal(signal.SIGTERM, previous)
