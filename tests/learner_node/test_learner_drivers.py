"""Both drivers of the learner core — ``learner_node`` (a real node process fed over DDS) and
in-process ``train()`` (a real Python process on the MuJoCo task) — killed with SIGKILL at an
arbitrary moment after their periodic checkpoints, restarted over a run directory whose newest
checkpoint is truncated: both name the corrupt file in their log, move it aside, resume from the
previous checkpoint with its counters and go on checkpointing (the same behaviour, one test)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from morl_robot.learning.checkpoint import (
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
)

sys.path.insert(0, str(Path(__file__).parent))
from experience_actor import RandomWalkActor
from test_learner_node import SMALL_CONFIG, TASK, Learner, _labels

EVERY = 64  # training.checkpoint_every of the learner YAML: the one cadence key of both drivers

TRAIN_SCRIPT = textwrap.dedent("""
    import functools, json, logging, sys
    import torch
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="[%(levelname)s] %(message)s")
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.training import train
    config, run, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
    r = train(functools.partial(MORobotEnv, sys.argv[4]), config, total_steps=total, seed=1, out_dir=run,
              progress=False)
    print(json.dumps({"env_steps": r.env_steps, "updates": r.updates, "resumed_from": str(r.resumed_from)}))
""")


class TrainDriver:
    """``train()`` in its own process (so it can be SIGKILLed), output to a log file."""

    def __init__(self, run: Path, config: Path) -> None:
        self.run, self.config, self.proc, self.log = run, config, None, run.parent / "train.log"

    def start(self, total_steps: int) -> None:
        self.log.write_text("")
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, "-c", TRAIN_SCRIPT, str(self.config), str(self.run),
                                          str(total_steps), TASK], stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONWARNINGS": "always"})

    def wait_for(self, what: str, predicate, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert self.proc.poll() is None or predicate(), f"train() ended before {what}:\n{self.log_text()[-3000:]}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{self.log_text()[-3000:]}"
            time.sleep(0.05)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(10) == -signal.SIGKILL

    def log_text(self) -> str:
        return self.log.read_text()


@pytest.mark.parametrize("driver", ["learner_node", "train"])
def test_sigkill_then_a_corrupt_newest_checkpoint_is_named_skipped_and_the_previous_resumed(
        driver, request, tmp_path):
    run = tmp_path / "run"
    ckpts = run / "checkpoints"
    first_two = [checkpoint_path(ckpts, EVERY).name, checkpoint_path(ckpts, 2 * EVERY).name]
    if driver == "learner_node":
        node = Learner(request.getfixturevalue("ros_session"), run, checkpoint_every=EVERY).start()
        actor = RandomWalkActor(0, *_labels(node), seed=6)
        node.feed(actor, 8)  # 128 transitions
        node.wait("the periodic checkpoints", lambda: checkpoint_path(ckpts, 2 * EVERY).exists(), 60)
        assert [p.name for p in list_checkpoints(ckpts)] == first_two
        node.process.send_signal(signal.SIGKILL)
        node.process.proc.wait(10)
        assert node.process.returncode == -signal.SIGKILL
    else:
        config = tmp_path / "learner.yaml"
        config.write_text(SMALL_CONFIG.format(checkpoint_every=EVERY))
        train = TrainDriver(run, config)
        train.start(total_steps=100_000)
        train.wait_for("two periodic checkpoints", lambda: len(list_checkpoints(ckpts)) >= 2)
        train.kill()  # wherever it is: acting, learning, or writing the next checkpoint

    newest = list_checkpoints(ckpts)[-1]
    saved = load_checkpoint(newest)["counters"]
    assert saved["env_steps"] % EVERY == 0 and saved["env_steps"] >= 2 * EVERY
    corrupt = checkpoint_path(ckpts, 10**9)  # newer, truncated (e.g. a disk that filled up): never trusted
    corrupt.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])

    resumed_at = saved["env_steps"]
    if driver == "learner_node":
        node.snapshots.clear()
        node.start()
        node.wait("the resumed state", lambda: node.value("env_steps") == resumed_at)
        assert int(node.value("policy_version")) == saved["policy_version"]
        assert int(node.value("updates")) == saved["updates"]
        node.feed(actor, EVERY // 16)
        node.wait("the next periodic checkpoint", lambda: checkpoint_path(ckpts, resumed_at + EVERY).exists())
        log = node.process.log_text()
    else:
        train.start(total_steps=resumed_at + EVERY)
        assert train.proc.wait(240) == 0, train.log_text()[-3000:]
        log = train.log_text()
        result = json.loads(log.strip().splitlines()[-1])
        assert result["resumed_from"] == str(newest) and result["env_steps"] == resumed_at + EVERY
        assert result["updates"] > saved["updates"]
    # the same log lines from both drivers
    assert "skipping unreadable checkpoint" in log and corrupt.name in log and "truncated" in log, log[-3000:]
    assert f"moved aside to {corrupt.name}.corrupt" in log
    assert f"resumed from {newest} at {resumed_at} env steps (update {saved['updates']}, " \
           f"policy version {saved['policy_version']}" in log
    assert not corrupt.exists() and corrupt.with_name(corrupt.name + ".corrupt").exists()
    assert list_checkpoints(ckpts)[-1] == checkpoint_path(ckpts, resumed_at + EVERY)
    after = load_checkpoint(checkpoint_path(ckpts, resumed_at + EVERY))["counters"]
    assert after["env_steps"] == resumed_at + EVERY and after["updates"] >= saved["updates"]
    assert after["episodes"] >= saved["episodes"]
