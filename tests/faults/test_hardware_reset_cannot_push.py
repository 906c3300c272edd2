"""End to end through the real CLI (issue 34): `morl-robot deploy results/demo/seed0/policy.onnx
--backend hardware --emulate …` for two episodes.  Before, the reset after the first episode drove
the inserted peg straight home in joint space: 105-245 N at the wrist, right_j1 at its 80 N·m limit,
an e-stop, and a robot node fault after the 20 s reset timeout.  Now the reset backs the peg out
first: the second episode starts, and the monitor saw no force or effort violation at all."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

POLICY = Path(__file__).resolve().parents[2] / "results" / "demo" / "seed0" / "policy.onnx"


def _deploy_until(tmp_path: Path, domain: int, duration: str, seen: Callable[[], bool],
                  during: Callable[[], None] = lambda: None) -> tuple[int, str, str]:
    """``deploy POLICY --backend hardware --emulate latency=0.02 --duration DURATION`` until ``seen()``
    (what the test checks has happened: it is then ended with SIGINT, the CLI's clean stop, instead of
    idling out its duration), ``during()`` called between polls; returns (rc, stdout, stderr)."""
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", str(POLICY), "--backend", "hardware",
           "--emulate", "latency=0.02", "--duration", duration, "--out", str(tmp_path)]
    from morl_robot.session.processes import ros_env

    proc = subprocess.Popen(cmd, env=ros_env(domain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and not seen():
            if time.monotonic() > deadline:
                pytest.fail(f"deploy ran past 300 s:\n{_logs(tmp_path)}")
            during()
            time.sleep(0.1)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def _logs(tmp_path: Path) -> str:
    return "".join(f"\n----- {p.name} -----\n" + p.read_text(errors="replace")[-2000:]
                   for p in sorted((tmp_path / "logs").glob("*.log")))


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _resets(policy_server_log: str) -> list[float]:
    """Seconds the policy server went without task_step (a reset on hardware) before serving again."""
    out, start = [], None
    for line in policy_server_log.splitlines():
        m = re.search(r"\[(\d+\.\d+)\]", line)
        if m is None:
            continue
        t = float(m.group(1))
        if "holding (missing_input): newest task_step" in line and start is None:
            start = t
        elif "serving again" in line and start is not None:
            out.append(t - start)
            start = None
    return out


def test_the_second_episode_starts_after_a_reset_that_never_pushed(tmp_path: Path, domain_id: int) -> None:
    # ended (SIGINT: rc 130, the status still printed) once the second episode is served, or at 40 s
    rc, out, err = _deploy_until(tmp_path, domain_id, "40",
                                 lambda: bool(_resets(_text(tmp_path / "logs" / "policy_server.log"))))
    assert rc in (0, 130), out[-2000:] + err[-3000:]
    status = json.loads(out[out.index("{"):out.rindex("}") + 1])
    monitor = status["safety_monitor"]
    pushed = {k: v for k, v in monitor.items() if k.startswith(("violations/wrench", "violations/joints.effort"))}
    assert not pushed, f"the monitor saw forces/efforts (force rules at 20/40 N, effort at 80 %/100 %): {pushed}"
    if int(monitor.get("estops", 0)):  # only a watchdog's, for sensor streams the loaded host delivered late
        assert any(k.startswith("violations/stale.") for k in monitor), monitor
        assert int(monitor.get("deadline_misses", 0)) > 0, monitor
    robot_log = (tmp_path / "logs" / "robot_node.log").read_text()
    assert "reset did not reach its start configuration" not in robot_log
    assert "reset stopped, " not in robot_log  # the force guard never had to act
    resets = _resets((tmp_path / "logs" / "policy_server.log").read_text())
    assert resets, "no reset completed: the second episode never started"
    assert all(r < 20.0 for r in resets), resets  # (before: 20 s and a fault)


def test_an_e_stop_engaged_during_the_reset_stops_it(tmp_path: Path, domain_id: int) -> None:
    """``safety/trigger`` while the robot node resets the arm after episode 1: the robot node (its
    executor busy with the reset) hears the latched e-stop on its driver link and stops the reset
    with an error saying so, instead of driving on."""
    from std_srvs.srv import Trigger

    from morl_robot.nodes.probe import GraphProbe

    probe = GraphProbe(domain_id, "estopper")  # the fixture: this run's own block of domain ids
    log = tmp_path / "logs" / "policy_server.log"
    stopped_line = "reset stopped: the safety monitor's e-stop is latched"
    triggered_at: list[float] = []

    def trigger_in_the_retract() -> None:
        # the reset after episode 1 has begun when the policy server stops hearing task_step
        if triggered_at or "newest task_step is" not in _text(log):
            return
        time.sleep(1.0)  # into the retract
        assert probe.call("/morl/safety/trigger", Trigger, Trigger.Request(), timeout=30).success
        triggered_at.append(time.monotonic())

    try:
        # ended (SIGINT: rc 130, the status still printed) once the robot node said it stopped the
        # reset, or at 30 s; the reset's own timeout (20 s) would say "did not reach" much later
        rc, out, err = _deploy_until(tmp_path, domain_id, "30",
                                     lambda: bool(triggered_at) and stopped_line in _text(tmp_path / "logs" / "robot_node.log"),
                                     trigger_in_the_retract)
    finally:
        probe.close()
    assert triggered_at, f"deploy exited {rc} before episode 1 ended:\n{err[-3000:]}"
    assert rc in (0, 130), out[-2000:] + err[-3000:]
    robot_log = (tmp_path / "logs" / "robot_node.log").read_text()
    assert stopped_line in robot_log
    stamp = r"\[(\d+\.\d+)\].*"
    triggered = float(re.search(stamp + "triggered by request",
                                (tmp_path / "logs" / "safety_monitor.log").read_text()).group(1))
    stopped = float(re.search(stamp + "reset stopped: the safety monitor's e-stop is latched", robot_log).group(1))
    # at the next reset period, not after the reset's timeout; the monitor logs its trip after it has
    # published the e-stop, so on a busy host the robot's line may carry the earlier stamp by a few ms
    assert -0.1 <= stopped - triggered < 1.0
    assert "reset did not reach its start configuration" not in robot_log
    monitor = json.loads(out[out.index("{"):out.rindex("}") + 1])["safety_monitor"]
    assert not {k for k in monitor if k.startswith(("violations/wrench", "violations/joints.effort"))}
