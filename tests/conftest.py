"""Shared test setup: single-threaded torch (2 cores are shared), headless rendering."""
import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from hypothesis import settings as _hypothesis_settings

# No per-example deadline: speed is measured by benchmarks, never by tests, and on a loaded 2-core
# machine a pure property test's example can take 300 ms (a DeadlineExceeded there is noise).
_hypothesis_settings.register_profile("morl_robot", deadline=None)
_hypothesis_settings.load_profile("morl_robot")

try:  # torch is optional for the non-learning tests
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def tiny_learner_yaml(samples_per_insert: float, sequence_length: int = 4, log_every: int = 10,
                      demonstrations: str = "") -> str:
    """A learner YAML small enough for graph tests on shared cores (32-unit networks, batch 16,
    learning from 64 transitions); ``samples_per_insert`` sets how fast the learner consumes
    experience (a large value makes a slow learner, for back-pressure tests); ``demonstrations``:
    a ``training.demonstrations`` flow mapping, e.g. ``{episodes: 2, pretrain_updates: 50}``."""
    demos = f"demonstrations: {demonstrations}, " if demonstrations else ""
    return f"""
algorithm: mo_mpo
default_epsilon: 0.1
temperature_solver: exact
num_samples: 4
batch_size: 16
sequence_length: {sequence_length}
target_update_period: 20
networks: {{policy_hidden: [32], critic_hidden: [32], init_std: 0.5}}
replay: {{capacity: 20000, samples_per_insert: {float(samples_per_insert)}, min_size_to_sample: 64, error_buffer: 256.0}}
training: {{{demos}eval_every: 0, checkpoint_every: 0, keep_checkpoints: 2, log_every: {log_every}, tensorboard: false}}
"""


#: samples per insert of the slow learner (back-pressure tests): 2 updates of batch 16 per env step,
#: slower than a robot node steps on its own, so without back-pressure the actors run ahead.
SLOW_LEARNER_RATIO = 32.0


def slow_learner_yaml(log_every: int = 10) -> str:
    """The back-pressure tests' learner: :func:`tiny_learner_yaml` at :data:`SLOW_LEARNER_RATIO`."""
    return tiny_learner_yaml(SLOW_LEARNER_RATIO, sequence_length=2, log_every=log_every)


def slow_learner_limiter(updates: int) -> "Any":
    """The slow learner's samples-per-insert limiter after ``updates`` updates (batch 16,
    ``min_size_to_sample`` 64, ``error_buffer`` 256 as in :func:`tiny_learner_yaml`)."""
    from morl_robot.learning.replay import SampleToInsertRatio

    limiter = SampleToInsertRatio(SLOW_LEARNER_RATIO, 64, 256.0)
    limiter.samples = 16 * updates
    return limiter


# --- ROS 2 end-to-end fixtures --------------------------------------------------------------
import itertools
from dataclasses import dataclass
from typing import Any

import pytest


def _worker_block() -> list[int]:
    """This pytest process's DDS domain ids: those of ``$MORL_TEST_DOMAINS`` (``LO-HI``, for pytest
    runs that share a machine; default 1-100), split into one contiguous block per pytest-xdist
    worker so that the workers of one run never meet."""
    span = os.environ.get("MORL_TEST_DOMAINS", "") or "1-100"
    lo, _, hi = span.partition("-")
    ids = list(range(int(lo), int(hi or lo) + 1))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    size = len(ids) // workers
    if size < 2:
        raise RuntimeError(f"MORL_TEST_DOMAINS={span}: too few domain ids for {workers} pytest workers")
    return ids[index * size:(index + 1) * size]


_BLOCK = _worker_block()
# automatically picked domains (a CLI run without --domain-id, a benchmark) stay in this block too
os.environ["MORL_DOMAIN_IDS"] = f"{_BLOCK[0]}-{_BLOCK[-1]}"


def run_cli(argv: list[str], timeout: float = 300, env: dict | None = None, out: "Any" = None):
    """``python -m morl_robot.cli ARGV`` in a subprocess on a fresh domain of this worker
    (``env``: instead, e.g. a session's).  A run past ``timeout`` fails the test with the end of
    its stderr and of every node log under ``OUT/logs`` (a hung graph says where it hung)."""
    import subprocess
    import sys
    from pathlib import Path

    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", *argv]
    try:
        return subprocess.run(cmd, env=env if env is not None else ros_env(_next_domain()), capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        logs = "".join(f"\n----- {p.name} -----\n" + p.read_text(errors="replace")[-2000:]
                       for p in sorted(Path(out, "logs").glob("*.log"))) if out is not None else ""
        pytest.fail(f"{' '.join(argv[:3])} ran past {timeout:.0f} s; stderr:\n{err[-3000:]}{logs}")


def _next_domain() -> int:
    """A fresh ROS_DOMAIN_ID per test: consecutive ids of this worker's block from a random start
    per pytest run (a previous run's late leftovers are rarely met).  The cycle lives in one place
    per process: ``from tests.conftest import …`` loads this file a second time as another module,
    whose own cycle would hand out ids this one already gave to a running session."""
    import sys
    import types

    shared = sys.modules.setdefault("_morl_test_domains", types.ModuleType("_morl_test_domains"))
    if getattr(shared, "cycle", None) is None:
        from morl_robot.session.processes import pick_domain_id

        start = pick_domain_id() - _BLOCK[0]
        shared.cycle = itertools.cycle(_BLOCK[start:] + _BLOCK[:start])  # type: ignore[attr-defined]
    return next(shared.cycle)  # type: ignore[attr-defined]


@dataclass
class RosSession:
    domain_id: int
    env: dict
    group: Any  # morl_robot.session.processes.ProcessGroup
    probe: Any  # morl_robot.nodes.probe.GraphProbe
    log_dir: Any

    def logs(self) -> str:
        return "\n".join(f"----- {p.spec.name} (rc={p.returncode}) -----\n{p.log_text()[-4000:]}"
                         for p in self.group.processes)


@pytest.fixture
def domain_id() -> int:
    """A DDS domain id of this pytest run's own (for CLI sessions started by a test)."""
    return _next_domain()


@pytest.fixture
def ros_session(tmp_path, request):
    """Nodes started as real processes on a private DDS domain (discovery on localhost), and an
    in-process probe on the same domain.  Node logs are printed when the test fails."""
    pytest.importorskip("rclpy")
    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.session.processes import ProcessGroup, ros_env

    domain = _next_domain()
    env = ros_env(domain)
    group = ProcessGroup(env, tmp_path / "logs")
    probe = GraphProbe(domain, name=f"probe_{os.getpid()}")
    session = RosSession(domain, env, group, probe, tmp_path / "logs")
    yield session
    group.stop(timeout=15)
    probe.close()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(session.logs())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)
