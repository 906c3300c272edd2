"""Fault (issue 33, item 10): a flood of invalid preference messages wrote 1 006 ERROR lines in
6 s.  Repeated bad input is now logged at most once a second per kind, the next line saying how
many were suppressed; every message is still counted."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from policy_models import SAWYER, model_bytes

from morl_robot.acting.server import PolicyServerCore
from morl_robot.session.config import PolicyServerSettings
from morl_robot.throttle import RateLimitedLog


def test_a_preference_flood_is_one_line_a_second_with_the_count(tmp_path):
    path = tmp_path / "p.onnx"
    model_bytes(SAWYER, version=2, seed=1, path=path)
    now = [0.0]
    logs: list[tuple[str, str]] = []
    core = PolicyServerCore(PolicyServerSettings(mode="deploy", timing="realtime", rate=20.0, policy=str(path)),
                            lambda *a: None, lambda v: None, lambda t, c: None,
                            lambda level, msg: logs.append((level, msg)), clock=lambda: now[0])
    core.open_model()
    logs.clear()
    for k in range(1006):  # 6 s of invalid preference messages (the policy is not ε-conditioned)
        now[0] = 6.0 * k / 1006
        assert core.preference_message(np.array([0.1, 0.2]), ()) is None
    assert core.counters["rejected_preferences"] == 1006
    assert 1 <= len(logs) <= 7, len(logs)
    assert all(level == "error" and "ignored preference message" in msg for level, msg in logs)
    assert "like it in the last" in logs[1][1]
    suppressed = sum(int(msg.split("(+")[1].split()[0]) for _, msg in logs[1:])
    assert suppressed + len(logs) <= 1006 and suppressed >= 1006 - len(logs) - 200  # the rest in the tail


@given(st.lists(st.floats(min_value=0.0, max_value=0.5), min_size=1, max_size=200),
       st.floats(min_value=0.1, max_value=2.0))
def test_at_most_one_line_per_interval_and_nothing_uncounted(gaps, interval):
    lines: list[str] = []
    t = [0.0]
    log = RateLimitedLog(lambda level, msg: lines.append(msg), interval=interval, clock=lambda: t[0])
    out_times = []
    for g in gaps:
        t[0] += g
        if log("x", "error", "bad"):
            out_times.append(t[0])
    assert all(b - a >= interval for a, b in itertools.pairwise(out_times))
    reported = sum(int(m.split("(+")[1].split()[0]) for m in lines if "(+" in m)
    assert len(lines) + reported + log.suppressed.get("x", 0) == len(gaps)
