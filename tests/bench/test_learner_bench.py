"""`morl-robot bench learner` through the real CLI parser (tiny sizes), plain and ε-conditioned."""
import pytest

from morl_robot.cli import main


@pytest.mark.parametrize("extra", [[], ["--conditioned"]])
def test_the_learner_bench_prints_its_rate(capsys, extra):
    argv = ["bench", "learner", "--obs-dim", "5", "--batch-size", "16", "--num-samples", "4", "--sequence-length", "2",
            "--updates", "2", "--warmup", "1", "--threads", "1", *extra]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "updates/s:" in out and "time in torch kernels" in out
    assert ("ε-conditioned" in out) == bool(extra)
