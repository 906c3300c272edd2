"""The policy server's model loader: models open on a worker thread, the newest request wins, and
closing waits for a model being opened (a half-built onnxruntime session on a daemon thread at
interpreter exit aborts the node process instead of letting it exit 0)."""
from __future__ import annotations

import time

from morl_robot.acting.policy import ModelLoader
from morl_robot.bench.graph import _export_policy


def test_close_waits_for_the_model_being_opened_and_takes_no_more(tmp_path):
    path = tmp_path / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", path)
    data = path.read_bytes()
    loader = ModelLoader(lambda: None)
    loader.request(data, "snapshot 0")
    deadline = time.monotonic() + 10
    while loader._queue is not None:  # the worker has taken it: a model is being opened
        assert time.monotonic() < deadline
        time.sleep(0.001)
    for i in range(1, 5):  # a burst of snapshots, as a fast learner publishes them
        loader.request(data, f"snapshot {i}")
    worker = loader._thread
    assert worker is not None
    loader.close()
    assert not worker.is_alive()  # the open in flight finished before close returned
    opened = loader.take()
    assert 1 <= len(opened) <= 2 and all(x.policy is not None for x in opened)  # the queued ones were dropped
    loader.request(data, "after close")
    time.sleep(0.2)
    assert not loader.ready() and loader._thread is worker  # no new worker after close
