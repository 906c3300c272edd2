"""`morl-robot bench train` through the real CLI on a tiny budget: three real training sessions
(per-step graph, one and two vectorized actors) and in-process train() measured, ending with the ratio lines."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.ros]


@pytest.mark.extended  # make test-extended: a benchmark of three sessions, 46 s
def test_the_train_bench_measures_three_sessions_and_prints_the_ratio(domain_id):
    pytest.importorskip("rclpy")
    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "bench", "train", "--duration", "1", "--warmup", "20",
           "--envs", "2", "--min-size-to-sample", "64", "--in-process-steps", "100"]
    done = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    rates = {}
    for label in ("(a) per-step", "(b) vectorized, 1 actor", "(c) vectorized, 2 actors"):
        line = next(x for x in lines if label in x)
        steps, _updates = re.search(r"env steps/s\s+([\d.]+)\s+learner updates/s\s+([\d.]+)", line).groups()
        rates[label] = float(steps)
        assert float(steps) > 0, line  # every session stepped and its experience reached the learner
    ratio = next(m for x in lines if (m := re.fullmatch(r"vectorized/per-step ratio: ([\d.]+)", x)))
    assert float(ratio.group(1)) == pytest.approx(rates["(b) vectorized, 1 actor"] / rates["(a) per-step"], rel=0.01)
    local = float(re.search(r"\(d\) in-process train\(\)\s+env steps/s\s+([\d.]+)", done.stdout).group(1))
    graph = re.fullmatch(r"graph/in-process training ratio: ([\d.]+) \(train's default actors here: vectorized; "
                         r"per-step ([\d.]+), vectorized ([\d.]+)\)", lines[-1])
    assert graph and local > 0, lines[-1]
    assert float(graph.group(1)) == pytest.approx(rates["(b) vectorized, 1 actor"] / local, rel=0.02)
