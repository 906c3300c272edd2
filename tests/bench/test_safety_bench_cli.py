"""`morl-robot bench safety` through the real CLI parser on a tiny budget: the in-process core, the
inner layer (its exact report line) and the monitor in its own process on a test domain."""
from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize("robot", ["sawyer", "shadow_hand"])
def test_bench_safety_reports_the_inner_layer(robot, capsys) -> None:
    from morl_robot.cli import main

    assert main(["bench", "safety", "--robot", robot, "--trips", "5", "--skip-processes"]) == 0
    out = capsys.readouterr().out
    line = re.search(r"^inner layer: sample -> hold p50 (\S+) ms p99 (\S+) ms$", out, re.MULTILINE)
    assert line, out
    p50, p99 = float(line.group(1)), float(line.group(2))
    assert 0.0 < p50 <= p99
    assert "5 trips" in out and "0 trips held after the first sample at the threshold" in out


@pytest.mark.ros
def test_bench_safety_across_processes(domain_id, capfd) -> None:
    from morl_robot.cli import main

    assert main(["bench", "safety", "--trips", "3", "--domain-id", str(domain_id)]) == 0
    out = capfd.readouterr().out
    assert re.search(r"^inner layer: sample -> hold p50 \S+ ms p99 \S+ ms$", out, re.MULTILINE), out
    assert "stamp -> hold command published" in out and "(3 trips" in out, out
