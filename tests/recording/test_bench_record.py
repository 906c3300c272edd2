"""`morl-robot bench record` through the real CLI on a tiny budget: both sessions run, the figures
are finite, the recorder dropped nothing (the overhead itself is a benchmark's figure, not a test's)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.bench.test_every_bench_runs import figures


@pytest.mark.ros
def test_bench_record_prints_both_rates_the_overhead_and_the_drops(domain_id: int) -> None:
    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "bench", "record", "--duration", "2", "--repeats", "1",
           "--warmup", "20"]
    proc = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    without, with_record = figures(proc.stdout, r"^median env steps/s: ", 2)[:2]
    assert without > 0 and with_record > 0
    figures(proc.stdout, r"^median CPU per env step: ", 2)
    assert re.search(r"^recorder drops: 0 \(goal 0\)", proc.stdout, re.MULTILINE), proc.stdout
