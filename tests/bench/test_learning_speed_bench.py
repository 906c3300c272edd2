"""`morl-robot bench learning-speed` through the real CLI on a tiny budget: MO-MPO and CAPQL on
the same environment and steps, and the ratio line."""
import pytest

from morl_robot.cli import main
from tests.bench.test_every_bench_runs import figures


def test_the_learning_speed_bench_prints_both_rates_and_the_ratio(capsys):
    pytest.importorskip("morl_baselines")
    argv = ["bench", "learning-speed", "--steps", "140", "--learning-starts", "130", "--threads", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    mompo = figures(out, r"^MO-MPO .*env steps/s", at_least=4)
    capql = figures(out, r"^CAPQL .*env steps/s", at_least=4)
    assert mompo[0] > 0 and capql[0] > 0
    (ratio,) = figures(out, r"^MO-MPO/CAPQL wall time per env step:")
    assert ratio > 0
    (cpu_ratio,) = figures(out, r"^MO-MPO/CAPQL CPU time per env step:")
    assert cpu_ratio > 0
    assert "140 steps" in out


def test_capql_needs_a_full_batch_before_learning(capsys):
    """CAPQL samples batches of 128: an earlier start is refused by name (rc 2), not a crash."""
    assert main(["bench", "learning-speed", "--steps", "50", "--learning-starts", "20"]) == 2
    assert "--learning-starts" in capsys.readouterr().err
