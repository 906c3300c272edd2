"""The ``recorder`` node as a process: what a clean stop (SIGINT) and a SIGKILL leave behind."""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.conftest import ros_session  # noqa: F401 - a fixture

N = 200


def _record(session, tmp_path: Path):
    pytest.importorskip("rclpy")
    from std_msgs.msg import Float64MultiArray

    from morl_robot.nodes import wire
    from morl_robot.recording.live import wait_recording
    from morl_robot.session.processes import NodeSpec

    path = tmp_path / "session.mcap"
    proc = session.group.start(NodeSpec("recorder", "recorder", "/t", {
        "path": str(path), "namespaces": ["/t"], "flush_period": 0.2}))
    pub = session.probe.publisher("/t/task_step", Float64MultiArray, wire.SENSOR_QOS)
    wait_recording(session.probe, ["/t/task_step"], timeout=60)
    for i in range(N):
        pub.publish(Float64MultiArray(data=[float(i)]))
        time.sleep(0.002)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and int(session.probe.diagnostics("recorder").get("messages", 0)) < N:
        time.sleep(0.1)
    time.sleep(0.6)  # the writer's next flush
    return proc, path


def test_sigint_finishes_the_file(ros_session, tmp_path: Path) -> None:  # noqa: F811
    from rosbags.highlevel import AnyReader

    proc, path = _record(ros_session, tmp_path)
    assert proc.stop(timeout=20, sig=signal.SIGINT) == 0, proc.log_text()
    with AnyReader([path]) as reader:
        data = [reader.deserialize(raw, c.msgtype).data[0] for c, _, raw in reader.messages()
                if c.topic == "/t/task_step"]
    assert data == [float(i) for i in range(N)]
    assert "recording finished: " in proc.log_text() and "0 dropped" in proc.log_text()


def test_sigkill_keeps_what_was_flushed(ros_session, tmp_path: Path) -> None:  # noqa: F811
    from morl_robot.recording import read_messages

    proc, path = _record(ros_session, tmp_path)
    proc.stop(timeout=1, sig=signal.SIGKILL)
    assert not (tmp_path / "session.recording.json").exists()  # it never got to finish
    notes: list[str] = []
    data = [m.message.data[0] for m in read_messages(path, topics=["/t/task_step"], on_truncated=notes.append)]
    assert data == [float(i) for i in range(N)], notes
