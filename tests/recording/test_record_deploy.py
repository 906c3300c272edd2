"""``--record``: a real deploy through the CLI writes ``<out>/session.mcap``, read back with
``rosbags`` (an independent reader): every topic of the session, the right types, every step of
the counted episodes, timestamps in order, drops reported (issue 39).  One recording per module."""
from __future__ import annotations

import itertools
import json
import shutil
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.test_launch_files import ROOT, _nodes, fake_launch  # noqa: F401 - fake_launch is a fixture

POLICY = ROOT / "results/demo/seed0/policy.onnx"  # as docs/howto/record.md writes it
NS = "/morl"
#: The topics a deployed sim session must have in its recording (wire.TOPICS names).
EXPECTED = ("joint_states", "wrench", "task_step", "command", "command_safe", "safety/estop", "safety/violations",
            "episode", "session", "heartbeat", "scene")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    pytest.importorskip("rclpy")
    out = tmp_path_factory.mktemp("record") / "deploy"
    # docs/howto/record.md's command (its fence is parse-only, run here), in a named context (issue 37:
    # the recording says which; the same context in process)
    proc = run_cli(["deploy", str(POLICY), "--backend", "sim", "--episodes", "2", "--record", "--out", str(out),
                    "--set", "task.contexts=heavy_tool"], timeout=240, out=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc.stderr


def _read(path: Path) -> tuple[dict[str, str], list[tuple[str, int, object]]]:
    from rosbags.highlevel import AnyReader

    with AnyReader([path]) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        msgs = [(c.topic, t, reader.deserialize(raw, c.msgtype)) for c, t, raw in reader.messages()]
    return types, msgs


def test_every_topic_recorded_with_its_type(recorded: tuple[Path, str]) -> None:
    from morl_robot.nodes.wire import TOPICS

    out, stderr = recorded
    types, msgs = _read(out / "session.mcap")
    contract = {t.name: t.type for t in TOPICS}
    for name in EXPECTED:
        assert f"{NS}/{name}" in types, f"{name} not recorded; recorded: {sorted(types)}"
        assert types[f"{NS}/{name}"] == contract[name]
    assert types["/diagnostics"] == "diagnostic_msgs/msg/DiagnosticArray"
    assert not any(t.endswith(("/experience", "/policy_snapshot")) for t in types)
    seen = Counter(topic for topic, _, _ in msgs)
    for topic, _, msg in msgs:  # each decodes to its contract's type
        assert type(msg).__name__.split("__")[-1] == types[topic].rsplit("/", 1)[-1]
    summary = json.loads((out / "session.recording.json").read_text())
    assert summary["dropped"] == 0, summary["dropped_by_topic"]
    assert sum(seen.values()) == summary["messages"]
    assert "recording: " in stderr and "0 dropped" in stderr


def test_counted_episodes_complete_and_in_order(recorded: tuple[Path, str]) -> None:
    out, _ = recorded
    _, msgs = _read(out / "session.mcap")
    summary = json.loads((out / "session.recording.json").read_text())
    ends = [json.loads(m.data) for topic, _, m in msgs if topic == f"{NS}/episode"]
    ends = [e for e in ends if e["event"] == "end"]
    assert len(ends) >= 2, ends
    steps: dict[int, list[int]] = defaultdict(list)
    for topic, _, m in msgs:
        if topic == f"{NS}/task_step":
            steps[int(m.data[0])].append(int(m.data[1]))  # labels "episode,step,…" (wire.TaskStep)
    dropped = summary["dropped_by_topic"].get(f"{NS}/task_step", 0)
    for e in ends[-2:]:  # the counted episodes: every step the robot took is in the recording
        got = steps[int(e["episode"])]
        assert e["steps"] - dropped <= len(set(got)) <= e["steps"] + 1, (e, len(got))
        assert got == sorted(got)
    report = json.loads((out / "deploy_report.json").read_text())
    assert all(report["graph_success"])
    assert report["recording"]["dropped"] == 0 and report["recording"]["messages"] > 0


def test_the_recording_names_every_episodes_context(recorded: tuple[Path, str]) -> None:
    """Issue 37: each ``episode`` event names its context; ``task_step`` carries the ``context``
    column (-1: the one context the task key names)."""
    out, _ = recorded
    _, msgs = _read(out / "session.mcap")
    events = [json.loads(m.data) for topic, _, m in msgs if topic == f"{NS}/episode"]
    assert events and all(e["context"] == "heavy_tool" for e in events), events
    steps = [m for topic, _, m in msgs if topic == f"{NS}/task_step"]
    labels = steps[0].layout.dim[0].label.split(",")
    assert {m.data[labels.index("context")] for m in steps} == {-1.0}


def test_timestamps_monotonic_per_topic(recorded: tuple[Path, str]) -> None:
    """In file order (the writer's receive order), per topic: log_time never goes back, and the
    header stamp (publish_time) of the robot's stamped streams neither."""
    from mcap.reader import NonSeekingReader

    out, _ = recorded
    last_log: dict[str, int] = {}
    last_pub: dict[str, int] = {}
    with open(out / "session.mcap", "rb") as f:
        for _, channel, message in NonSeekingReader(f).iter_messages(log_time_order=False):
            t = channel.topic
            assert message.log_time >= last_log.get(t, 0), t
            last_log[t] = message.log_time
            if t in (f"{NS}/joint_states", f"{NS}/wrench"):
                assert message.publish_time >= last_pub.get(t, 0), t
                last_pub[t] = message.publish_time
    assert last_pub, "no stamped stream recorded"


def test_reader_helper(recorded: tuple[Path, str]) -> None:
    from morl_robot.recording import read_messages, topics_of

    out, _ = recorded
    counts = topics_of(out)
    steps = list(read_messages(out, topics=[f"{NS}/task_step"]))
    assert len(steps) == counts[f"{NS}/task_step"][1] > 0
    assert steps[0].type == "std_msgs/msg/Float64MultiArray"
    assert all(a.log_time <= b.log_time for a, b in itertools.pairwise(steps))
    assert steps[0].message.layout.dim[0].label.startswith("episode,step")


# --- the writer alone: drops and a file cut short ---------------------------------------------

def _cdr(i: int) -> bytes:
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray

    return serialize_message(Float64MultiArray(data=[float(i)]))


def test_full_queue_drops_and_counts(tmp_path: Path) -> None:
    from morl_robot.recording import read_messages
    from morl_robot.recording.writer import RecordingWriter

    w = RecordingWriter(tmp_path / "a.mcap", queue_size=4)
    data = _cdr(1)
    accepted = sum(w.put("/x/task_step", "std_msgs/msg/Float64MultiArray", data) for _ in range(20000))
    stats = w.close()
    assert stats.dropped["/x/task_step"] == 20000 - accepted > 0
    assert len(list(read_messages(tmp_path / "a.mcap"))) == accepted == stats.written["/x/task_step"]


def test_unfinished_file_is_readable_up_to_the_last_flush(tmp_path: Path) -> None:
    """A recorder killed with SIGKILL leaves a file with no summary: what was flushed (every
    flush_period) is read back, by our reader and by rosbags' MCAP reader, if it can."""
    from morl_robot.recording import read_messages
    from morl_robot.recording.writer import RecordingWriter

    w = RecordingWriter(tmp_path / "a.mcap", flush_period=0.05)
    for i in range(50):
        w.put("/x/task_step", "std_msgs/msg/Float64MultiArray", _cdr(i))
    deadline = time.monotonic() + 10
    while w.stats.written["/x/task_step"] < 50 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # a flush after the last write
    shutil.copy(tmp_path / "a.mcap", tmp_path / "killed.mcap")  # the bytes a SIGKILL would leave
    w.close()
    notes: list[str] = []
    got = [m.message.data[0] for m in read_messages(tmp_path / "killed.mcap", on_truncated=notes.append)]
    assert got == [float(i) for i in range(50)], notes


# --- launch: record:=true ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["train", "deploy", "safety_test"])
def test_launch_record_argument_starts_the_recorder(fake_launch, kind: str, tmp_path: Path) -> None:  # noqa: F811
    args = {"out": str(tmp_path), "record": "true"}
    if kind == "deploy":
        args["policy"] = str(POLICY)
    nodes = [e for e in _nodes(ROOT / "launch" / f"{kind}.launch.py", **args) if type(e).__name__ == "Node"]
    rec = [n for n in nodes if n.kwargs["executable"] == "recorder"]
    assert len(rec) == 1 and nodes[0] is rec[0]  # first up
    assert rec[0].kwargs["parameters"][0]["path"] == str(tmp_path / "session.mcap")
    plain = [e for e in _nodes(ROOT / "launch" / f"{kind}.launch.py", **{**args, "record": "false"})
             if type(e).__name__ == "Node"]
    assert not any(n.kwargs["executable"] == "recorder" for n in plain)


def test_foxglove_without_live_view_is_a_clear_error_or_starts_it() -> None:
    import importlib.util

    from morl_robot.errors import UsageError
    from morl_robot.session.graph import observer_specs

    if importlib.util.find_spec("morl_robot.nodes.live_view") is None:
        with pytest.raises(UsageError, match="live_view"):
            observer_specs("/morl", "/tmp/x", False, 8765)
    else:
        (spec,) = observer_specs("/morl", "/tmp/x", False, 8765)
        assert spec.executable == "live_view" and spec.parameters["port"] == 8765


def test_an_earlier_recording_is_kept(tmp_path: Path) -> None:
    """A resumed run records into the same ``--out``: the earlier file becomes session.1.mcap."""
    from morl_robot.recording.writer import keep_previous

    (tmp_path / "session.mcap").write_bytes(b"first")
    (tmp_path / "session.recording.json").write_text("{}")
    assert keep_previous(tmp_path / "session.mcap") == tmp_path / "session.1.mcap"
    (tmp_path / "session.mcap").write_bytes(b"second")
    assert keep_previous(tmp_path / "session.mcap") == tmp_path / "session.2.mcap"
    assert (tmp_path / "session.1.mcap").read_bytes() == b"first"
    assert (tmp_path / "session.1.recording.json").is_file() and not (tmp_path / "session.mcap").exists()
    assert keep_previous(tmp_path / "session.mcap") is None


def test_a_type_without_its_definition_is_dropped_not_fatal(tmp_path: Path) -> None:
    from morl_robot.recording import read_messages
    from morl_robot.recording.writer import RecordingWriter

    w = RecordingWriter(tmp_path / "a.mcap")
    w.put("/x/odd", "no_such_msgs/msg/Thing", b"\x00\x01\x00\x00")
    w.put("/x/task_step", "std_msgs/msg/Float64MultiArray", _cdr(3))
    stats = w.close()
    assert stats.dropped["/x/odd"] == 1 and "no_such_msgs" in stats.errors["/x/odd"]
    assert [m.topic for m in read_messages(tmp_path / "a.mcap")] == ["/x/task_step"]
