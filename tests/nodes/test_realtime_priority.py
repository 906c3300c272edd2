"""``deploy --realtime-priority N``: the nodes of the real-time loop run ``SCHED_FIFO`` at N, set
before rclpy starts its DDS threads (every thread inherits it); where the host refuses it the node
says so and runs at normal priority; a bad value is an error naming the variable."""
from __future__ import annotations

import os
import time

import pytest

from morl_robot.nodes.base import RT_PRIORITY_ENV
from morl_robot.session.processes import NodeProcess, NodeSpec, ros_env

pytest.importorskip("rclpy")


def _start(tmp_path, domain_id, value: str) -> NodeProcess:
    spec = NodeSpec("driver_emulator", "driver_emulator", parameters={"robot": "sawyer"}, env={RT_PRIORITY_ENV: value})
    return NodeProcess(spec, ros_env(domain_id), tmp_path).start()


def test_a_node_runs_sched_fifo_when_asked_or_says_why_not(tmp_path, domain_id):
    node = _start(tmp_path, domain_id, "7")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "priority 7" not in (log := node.log_text()):
            assert node.alive, log[-2000:]
            time.sleep(0.2)
        assert "priority 7" in log, log[-2000:]
        if "refused" in log:  # a host without CAP_SYS_NICE: normal priority, and how to allow it
            assert "CAP_SYS_NICE" in log and os.sched_getscheduler(node.proc.pid) == os.SCHED_OTHER
        else:  # every thread, the DDS ones included
            threads = os.listdir(f"/proc/{node.proc.pid}/task")
            assert len(threads) > 1
            assert {os.sched_getscheduler(int(t)) for t in threads} == {os.SCHED_FIFO}
            assert os.sched_getparam(node.proc.pid).sched_priority == 7
    finally:
        node.stop()


def test_a_bad_priority_is_an_error_naming_the_variable(tmp_path, domain_id):
    node = _start(tmp_path, domain_id, "120")
    assert node.wait_exit(120) == 2
    assert f"${RT_PRIORITY_ENV}" in node.log_text() and "1-99" in node.log_text()
