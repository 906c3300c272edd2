"""``morl-robot replay``: the safety rules re-run over a recorded session (issue 39).

One real recording per module: a simulated Sawyer safety test recorded with ``--record`` (the force
gauge trips ``wrench.force_norm`` at 40 N, among the other probes).  The replay must find the trip
the live monitor published, at its time within one sample and with the same value; a looser safety
config finds no force trip, a stricter one finds it earlier; a bad file is one clear error (rc 2).
"""
from __future__ import annotations

import copy
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from morl_robot.cli import main
from morl_robot.safety.replay import Record, match, replay
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
STRICT = ROOT / "docs" / "howto" / "post_mortem" / "sawyer_30N.yaml"


def _replay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["replay", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    rc, out, err = _replay(capsys, *argv, "--json")
    assert rc in (0, 1), err
    return rc, json.loads(out)


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """(out folder, finished process) of one recorded simulated Sawyer safety test at the deployed
    configuration's two presses: the command of docs/howto/post_mortem.md and, with ``--record``, of
    README.md and docs/tutorials/safety_test.md, whose fences this module runs instead of the docs
    harness (one Sawyer safety-test graph per suite run, ~45 s under load)."""
    pytest.importorskip("rclpy")
    for attempt in range(2):  # a probe aborted by a sensor-stream watchdog the loaded host tripped (exit 5): once more
        out = tmp_path_factory.mktemp("replay") / "safety_sawyer"
        proc = run_cli(["safety-test", "--robot", "sawyer", "--backend", "sim", "--record", "--out", str(out)],
                       timeout=240, out=out)
        if proc.returncode != 5:
            break
    return out, proc


@pytest.fixture(scope="module")
def recorded(recorded_run: tuple[Path, subprocess.CompletedProcess]) -> tuple[Path, dict]:
    """(session.mcap, report.json) of :func:`recorded_run`."""
    out, proc = recorded_run
    if proc.returncode == 1 and (out / "report.json").is_file():  # failed: only latencies a loaded host may miss
        failed = [c for c in json.loads((out / "report.json").read_text())["checks"] if c["status"] == "FAIL"]
        assert all(c["detail"].startswith("latency ") for c in failed), failed  # (the recording is still whole)
    else:
        assert proc.returncode in (0, 3, 4), proc.stderr[-3000:]
    path = out / "session.mcap"
    assert path.is_file(), f"no recording in {out}: {sorted(p.name for p in out.iterdir())}"
    return path, json.loads((out / "report.json").read_text())


def test_the_recorded_sawyer_safety_test_passes(recorded_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    """README.md's and docs/tutorials/safety_test.md's ``morl-robot safety-test --robot sawyer``
    (here with ``--record``), judged as tests/faults/test_sawyer_safety_test_passes.py judges its
    one-press run (kept there for make test-extended): every rule trips at both default press
    speeds, none is 'not reached', the exit code is the result's."""
    from tests.faults.test_sawyer_safety_test_passes import judge_sawyer_run

    out, proc = recorded_run
    judge_sawyer_run(out, proc, [0.02, 0.2])


def _first(events: list[dict], rule: str, level: str) -> dict:
    return next(e for e in events if e["rule"] == rule and e["level"] == level)


def test_replay_finds_the_recorded_trip(recorded: tuple[Path, dict], capsys: pytest.CaptureFixture[str]) -> None:
    path, report = recorded
    rc, data = _json(capsys, str(path))
    assert rc == 1 and data["would_trip"]
    trip = _first(data["violations"], "wrench.force_norm", "collision")
    assert trip["response"] == "estop" and trip["threshold"] == 40.0 and trip["unit"] == "N" and trip["exact"]
    # the live monitor's event for it, matched within one wrench sample, with the same reading
    ns = trip["namespace"]
    comparison = data["comparison"][ns]
    live = [e for e in _recorded(path, ns) if e.rule == "wrench.force_norm" and e.level == "collision"]
    assert live, "the recording has no live wrench.force_norm collision event"
    tol = comparison["tolerance_ms"]["wrench"] / 1e3
    assert abs(live[0].time - trip["time"]) <= tol
    assert trip["value"] == pytest.approx(live[0].value, rel=1e-6)
    # and the safety test's own report measured that very sample
    check = next(c for c in report["checks"] if c["rule"] == "wrench.force_norm" and c["level"] == "collision")
    assert trip["value"] == pytest.approx(check["tripped_value"], rel=1e-6)
    # every threshold rule on readings (replayed exactly) matches the live monitor's
    for side in ("recorded_only", "replayed_only"):
        assert not [e for e in comparison[side] if e["exact"]], comparison[side]
    assert comparison["exact_matched"] == comparison["exact_recorded"] > 0
    assert data["first_trip"]["t"] <= trip["t"]


def _recorded(path: Path, ns: str) -> list:
    from morl_robot.safety.replay import post_mortem

    return next(s for s in post_mortem(path).streams if s.namespace == ns).recorded


def test_text_report_and_summary_line(recorded: tuple[Path, dict], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = recorded
    rc, out, _ = _replay(capsys, str(path), "--rule", "wrench.force_norm")
    assert rc == 1
    lines = out.splitlines()
    assert lines[-1].startswith("WOULD TRIP: first e-stop at t=") and "wrench.force_norm [norm]" in lines[-1]
    assert "wrench.force_norm/collision (estop)" in lines[-1]
    assert any("live monitor" in line and "matched within one sample" in line for line in lines)
    row = next(line for line in lines if "wrench.force_norm" in line and "collision" in line and "Z " in line)
    assert " 40 N " in row and "estop" in row


def test_looser_limits_find_no_force_trip(recorded: tuple[Path, dict], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = recorded
    loose = copy.deepcopy(yaml.safe_load((ROOT / "config" / "safety" / "sawyer.yaml").read_text()))
    w = loose["wrench"]
    w["force_norm"].update(contact=90.0, collision=130.0)
    w["force_axis"].update(contact=[90.0] * 3, collision=[130.0] * 3)
    w["torque_norm"].update(contact=8.0, collision=9.5)
    w["accelerating"]["force_norm"].update(contact=95.0, collision=135.0)
    config = tmp_path / "sawyer_loose.yaml"
    config.write_text(yaml.safe_dump(loose, sort_keys=False, allow_unicode=True))
    rc, data = _json(capsys, str(path), "--safety", str(config), "--rule", "wrench.")
    assert rc == 0 and not data["would_trip"] and data["first_trip"] is None
    assert not [e for e in data["violations"] if e["response"] == "estop"]
    rc, out, _ = _replay(capsys, str(path), "--safety", str(config), "--rule", "wrench.")
    assert rc == 0 and out.splitlines()[-1].startswith("NO TRIP")


def test_stricter_limits_trip_earlier(recorded: tuple[Path, dict], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = recorded
    _, base = _json(capsys, str(path), "--rule", "wrench.")
    rc, strict = _json(capsys, str(path), "--safety", str(STRICT), "--rule", "wrench.")
    assert rc == 1
    before = _first(base["violations"], "wrench.force_norm", "collision")
    now = _first(strict["violations"], "wrench.force_norm", "collision")
    assert now["threshold"] == 30.0 and 30.0 <= now["value"] < 40.0
    assert now["t"] < before["t"] - 0.1  # the gauge ramps at 20 N/s: 10 N is ~0.5 s
    assert strict["first_trip"]["t"] <= now["t"]


def test_out_writes_the_report_and_a_plot_per_trip(recorded: tuple[Path, dict], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = recorded
    rc, _, _ = _replay(capsys, str(path), "--rule", "wrench.force_norm", "--out", str(tmp_path / "pm"))
    assert rc == 1
    data = json.loads((tmp_path / "pm" / "replay.json").read_text())
    plots = [Path(p) for p in data["plots"]]
    assert plots and all(p.is_file() and p.stat().st_size > 5000 for p in plots)
    assert any("wrench.force_norm_norm_collision" in p.name for p in plots)


def test_a_truncated_recording_replays_what_it_holds(recorded: tuple[Path, dict], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A session killed before the recorder finished leaves no summary: the chunks written are
    still replayed; one cut inside its first chunk is a clear error."""
    path, _ = recorded
    cut = tmp_path / "cut.mcap"
    raw = path.read_bytes()
    cut.write_bytes(raw[:-64])  # the footer and the end of the summary gone
    _, data = _json(capsys, str(cut))
    assert data["violations"] and data["recording"]["truncated"]
    cut.write_bytes(raw[:200])
    rc, _, err = _replay(capsys, str(cut))
    assert rc == 2 and "ends before its first complete chunk" in err


# --- bad files: one clear line, rc 2 (no graph needed) ----------------------------------------
@pytest.mark.parametrize("content, said", [
    (None, "no such file"),
    (b"", "empty"),
    (b"\x89MCAP0\r\n" + bytes(range(256)) * 4, "not a readable MCAP file"),
    (b"this is not a recording\n" * 50, "not a readable MCAP file"),
], ids=["missing", "empty", "mcap-magic-then-garbage", "text"])
def test_bad_recordings_are_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None,
                                          said: str) -> None:
    path = tmp_path / "session.mcap"
    if content is not None:
        path.write_bytes(content)
    rc, out, err = _replay(capsys, str(path))
    assert rc == 2 and not out
    assert err.count("\n") == 1 and said in err and str(path) in err, err


def test_a_recording_without_the_safety_topics_is_a_clear_error(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from mcap_ros2.writer import Writer

    path = tmp_path / "other.mcap"
    with open(path, "wb") as f:
        w = Writer(f)
        schema = w.register_msgdef("std_msgs/msg/String", "string data")
        w.write_message("/chatter", schema, {"data": "hello"}, log_time=1, publish_time=1)
        w.finish()
    rc, _, err = _replay(capsys, str(path))
    assert rc == 2 and "none of the topics the safety rules read" in err and "/chatter" in err


# --- the core on hand-made readings ------------------------------------------------------------
def test_core_replays_a_force_ramp_to_the_sample() -> None:
    """The wrist force ramps 0 → 60 N at 20 Hz: the 40 N stop is the first sample at or above it,
    dated by its own time; the live monitor's event there matches; a stricter config trips sooner."""
    t0 = 1_000.0
    recs = [Record("/r", "safety/estop", t0, (False,))]
    for i in range(61):
        t = t0 + 0.05 * (i + 1)
        recs.append(Record("/r", "wrench", t, (np.array([0.0, 0.0, float(i), 0.0, 0.0, 0.0]), t)))
    live = {"rule": "wrench.force_norm", "key": "norm", "level": "collision", "value": "40", "threshold": "40",
            "unit": "N", "response": "estop", "decided_at": f"{t0 + 0.05 * 41 + 0.001:.9f}"}
    recs.append(Record("/r", "safety/violations", t0 + 0.05 * 41 + 0.002, ("sawyer", live)))
    [stream] = replay(recs, "sawyer", start=t0, watchdogs=False)
    trip = next(e for e in stream.replayed if e.rule == "wrench.force_norm" and e.level == "collision")
    assert trip.value == 40.0 and trip.t == pytest.approx(0.05 * 41) and trip.response == "estop"
    m = match(stream)
    assert [(a.rule, b.rule) for a, b in m.pairs] == [("wrench.force_norm", "wrench.force_norm")]
    [strict] = replay(recs, STRICT, start=t0, watchdogs=False)
    early = next(e for e in strict.replayed if e.rule == "wrench.force_norm" and e.level == "collision")
    assert early.value == 30.0 and early.t == pytest.approx(0.05 * 31)
    assert math.isclose(early.threshold, 30.0)
