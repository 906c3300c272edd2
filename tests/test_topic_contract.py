"""The documented topic contract (docs/reference/topics.md, generated from morl_robot/nodes/wire.py,
the one place it lives) names every topic and service, and the labelled-array layouts round-trip."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rclpy")
from morl_robot.nodes import wire

DOCS_EXT = Path(__file__).resolve().parents[1] / "docs" / "_ext"


def test_every_topic_and_service_is_documented_with_its_type():
    import sys

    sys.path.insert(0, str(DOCS_EXT))
    try:
        from morl_docs import topics
        page = topics.render()
    finally:
        sys.path.remove(str(DOCS_EXT))
    for t in wire.TOPICS:
        assert t.name in page and t.type in page, f"docs/reference/topics.md lacks {t.name} ({t.type})"
    for name, srv_type, _ in wire.SERVICES:
        assert name in page and srv_type in page, f"docs/reference/topics.md lacks {name} ({srv_type})"


labels_st = st.lists(st.text(alphabet="abcxyz_/-0123456789", min_size=1, max_size=8), min_size=1, max_size=12,
                     unique=True)


@settings(max_examples=50, deadline=None)
@given(labels_st, st.data())
def test_labelled_array_round_trip(labels, data):
    values = np.asarray(data.draw(st.lists(st.floats(allow_nan=False, width=64), min_size=len(labels),
                                           max_size=len(labels))))
    out, names = wire.read_labelled(wire.labelled_array(values, labels))
    assert names == tuple(labels) and np.array_equal(out, values)


def test_malformed_arrays_are_named():
    with pytest.raises(wire.WireError, match="3 values but 2 labels"):
        wire.labelled_array([1, 2, 3], ["a", "b"])
    with pytest.raises(wire.WireError, match="comma"):
        wire.labelled_array([1], ["a,b"])
    msg = wire.labelled_array([1, 2], ["a", "b"])
    msg.data = [1.0]
    with pytest.raises(wire.WireError, match="names 2 elements"):
        wire.read_labelled(msg)


def test_experience_table_round_trip():
    obs, act, obj = ("o1", "o2"), ("vx",), ("task", "force")
    cols = wire.experience_columns(obs, act, obj)
    rows = np.arange(3 * len(cols), dtype=float).reshape(3, len(cols))
    rows[:, 0] = 7  # one actor
    rows[:, -2:] = [[0, 0], [0, 1], [1, 0]]
    table, names = wire.read_table(wire.labelled_table(rows, cols))
    chunk = wire.split_experience(table, names)
    assert chunk.actor == 7 and chunk.objectives == obj
    assert chunk.obs.shape == (3, 2) and chunk.next_obs.shape == (3, 2) and chunk.action.shape == (3, 1)
    assert chunk.truncated.tolist() == [False, True, False] and chunk.terminated.tolist() == [False, False, True]
    rows[1, 0] = 8
    with pytest.raises(wire.WireError, match="one actor"):
        wire.split_experience(rows, cols)


def test_task_step_split():
    labels = wire.task_step_labels(("task", "force"), ("q0", "q1", "q2"))
    values = np.array([3, 17, 0, 1, 0.85, 0.5, -2.0, 1, 2, 3], float)
    ts = wire.split_task_step(values, labels)
    assert (ts.episode, ts.step, ts.terminated, ts.truncated) == (3, 17, False, True)
    assert ts.objectives == ("task", "force") and ts.reward.tolist() == [0.5, -2.0]
    assert ts.observation.tolist() == [1, 2, 3] and ts.stamp == 0.85
