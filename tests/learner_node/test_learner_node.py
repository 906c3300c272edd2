"""learner_node end to end: real node processes on a private DDS domain.

* two actor PROCESSES (tests/learner_node/experience_actor.py) feed one learner: both are counted,
  the learner updates, snapshot versions rise and every snapshot loads with its contract; chunks
  with the wrong columns or layout are rejected and counted while the node keeps running;
* SIGINT: exit 0 with a checkpoint, policy.onnx and plots; a restart resumes env steps, updates and
  the policy version;
* SIGKILL after a periodic checkpoint and a truncated newer checkpoint: in test_learner_drivers.py,
  the same test for this node and for in-process ``train()``.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from std_msgs.msg import Float64MultiArray, UInt8MultiArray

from morl_robot.learning.checkpoint import (
    checkpoint_path,
    load_checkpoint,
)
from morl_robot.nodes import wire
from morl_robot.serving.contract import PolicyContract
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.session.processes import NodeSpec

sys.path.insert(0, str(Path(__file__).parent))
from experience_actor import RandomWalkActor, snapshot_version

NS = "/morl"
TASK = "sawyer_peg_in_hole"
ROWS = 16  # transitions per chunk

SMALL_CONFIG = """\
algorithm: mo_mpo
num_samples: 4
batch_size: 16
sequence_length: 4
target_update_period: 10
networks:
  policy_hidden: [32, 32]
  critic_hidden: [32, 32]
replay:
  capacity: 10000
  samples_per_insert: 4.0
  min_size_to_sample: 32
  error_buffer: 64.0
training:
  checkpoint_every: {checkpoint_every}
  keep_checkpoints: 2
  log_every: 5
  tensorboard: false
"""


class Learner:
    """One learner_node process plus the probe's view of it (diagnostics, snapshots)."""

    def __init__(self, session, out_dir: Path, checkpoint_every: int = 0, **params) -> None:
        config = out_dir.parent / "learner.yaml"
        config.write_text(SMALL_CONFIG.format(checkpoint_every=checkpoint_every))  # the one cadence key
        self.session = session
        self.spec = NodeSpec("learner_node", "learner_node", NS, {
            "task": TASK, "config": str(config), "out_dir": str(out_dir), "seed": 1, "snapshot_every": 10, **params})
        self.out_dir = out_dir
        probe = session.probe
        self.diags = probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
        self.snapshots = probe.subscribe(f"{NS}/policy_snapshot", UInt8MultiArray, wire.LATCHED_QOS)
        self.pub = probe.publisher(f"{NS}/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
        self.process = None

    def start(self):
        self.diags.clear()
        self.process = self.session.group.start(self.spec)
        self.session.probe.wait_for(lambda: self.status(), 60, "the learner's diagnostics")
        self.session.probe.wait_for_subscribers(self.pub, timeout=30)
        return self

    def status(self) -> dict[str, str]:
        for _, msg in reversed(list(self.diags)):
            for st in msg.status:
                if "learner" in st.name and "morl" in st.name:
                    return {kv.key: kv.value for kv in st.values}
        return {}

    def value(self, key: str) -> float:
        return float(self.status().get(key, "nan"))

    def wait(self, what: str, predicate, timeout: float = 30.0) -> None:
        def check() -> bool:
            assert self.process is not None and self.process.alive, f"learner died:\n{self.process.log_text()[-3000:]}"
            return bool(predicate())

        self.session.probe.wait_for(check, timeout, what)

    def feed(self, actor: RandomWalkActor, chunks: int) -> None:
        for _ in range(chunks):
            self.pub.publish(actor.message(ROWS))


def test_two_actor_processes_feed_one_learner_and_bad_chunks_are_rejected(ros_session, tmp_path):
    s = ros_session
    learner = Learner(s, tmp_path / "run").start()
    learner.wait("the first snapshot", lambda: learner.snapshots)
    first = OnnxPolicy.from_bytes(bytes(learner.snapshots[0][1].data))
    assert snapshot_version(learner.snapshots[0][1]) == first.version == 1
    assert first.contract.task == TASK and first.contract.objective_names == ["task", "wrist_force"]
    assert first.contract.observation_normalizer == "running"
    c = first.contract

    # (4) a chunk for another layout, and a message that is not a table: rejected, node keeps running
    wrong = RandomWalkActor(9, c.observation_labels[:-1], c.action_labels, c.objective_names)
    learner.feed(wrong, 1)
    learner.pub.publish(wire.labelled_array([1.0, 2.0], ["a", "b"]))
    learner.wait("2 rejected chunks", lambda: learner.value("rejected_chunks") == 2)
    assert learner.value("env_steps") == 0 and "actor/9/transitions" not in learner.status()
    assert "expected a 2-D labelled table" in learner.status()["last_rejection"]  # the newest rejection
    log = learner.process.log_text()
    assert "do not match the learner's task" in log and f"missing ['obs/{c.observation_labels[-1]}'" in log

    # (1) two actor processes on the same domain (cross-process DDS)
    chunks = 25
    actors = [subprocess.Popen([sys.executable, str(Path(__file__).parent / "experience_actor.py"),
                                "--domain", str(s.domain_id), "--namespace", NS, "--actor", str(i),
                                "--chunks", str(chunks), "--rows", str(ROWS)],
                               env=s.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
              for i in (3, 7)]
    try:
        outputs = [a.communicate(timeout=90)[0] for a in actors]
    finally:
        for a in actors:
            if a.poll() is None:
                a.kill()
    assert [a.returncode for a in actors] == [0, 0], outputs
    reports = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert all(r["versions"] and r["versions"][0] >= 1 for r in reports)

    total = chunks * ROWS
    learner.wait("both actors' transitions", lambda: learner.value("actor/3/transitions") == total
                 and learner.value("actor/7/transitions") == total)
    learner.wait("learner updates and new snapshots", lambda: learner.value("updates") > 0
                 and learner.value("policy_version") > 1)
    st = learner.status()
    assert float(st["env_steps"]) == 2 * total and float(st["rejected_chunks"]) == 2
    assert float(st["episodes"]) == 2 * (total // 24)  # the actors end an episode every 24 steps
    assert set(st) >= {"return/task", "return/wrist_force", "replay_size", "transitions_per_s", "updates_per_s"}

    # every snapshot is a loadable policy of the same contract, versions rise
    versions = []
    for _, msg in list(learner.snapshots):
        policy = OnnxPolicy.from_bytes(bytes(msg.data), expected=c)
        assert policy.version == snapshot_version(msg)
        versions.append(policy.version)
    assert versions == sorted(set(versions)) and versions[-1] > 1
    out = policy.act(np.zeros(len(c.observation_labels)), deterministic=True)
    assert np.all(np.abs(out.command) <= 0.2 + 1e-6)  # robot units: the peg task's ±0.2 m/s


def test_sigint_writes_a_checkpoint_and_a_restart_resumes(ros_session, tmp_path):
    s = ros_session
    run = tmp_path / "run"
    learner = Learner(s, run).start()
    actor = RandomWalkActor(0, *_labels(learner), seed=5)
    learner.feed(actor, 10)
    learner.wait("160 env steps and a new snapshot", lambda: learner.value("env_steps") == 160
                 and learner.value("policy_version") >= 2)
    before = learner.status()

    assert learner.process.stop(timeout=30, sig=signal.SIGINT) == 0
    log = learner.process.log_text()
    ckpt = checkpoint_path(run / "checkpoints", 160)
    assert ckpt.exists(), log[-3000:]
    payload = load_checkpoint(ckpt)
    counters = payload["counters"]
    assert counters["env_steps"] == 160 and counters["updates"] >= int(before["updates"])
    assert counters["policy_version"] >= int(before["policy_version"])
    assert set(payload) >= {"learner", "config", "contract", "normalizer", "counters", "limiter", "replay", "rng"}
    final = OnnxPolicy.from_file(run / "policy.onnx")  # the final policy, same version as the checkpoint
    assert final.version == counters["policy_version"]
    assert PolicyContract.from_metadata(dict(payload["contract"])).run_id == final.contract.run_id
    assert (run / "plots" / "learning_curves.png").stat().st_size > 0
    assert (run / "plots" / "pareto_front.png").stat().st_size > 0
    assert (run / "metrics.csv").exists() and (run / "episodes.csv").exists()

    learner.snapshots.clear()
    learner.start()
    learner.wait("the resumed state", lambda: learner.value("env_steps") == 160)
    st = learner.status()
    assert int(st["policy_version"]) == counters["policy_version"]
    assert int(st["updates"]) == counters["updates"]
    assert float(st["actor/0/transitions"]) == 160  # per-actor counters are part of the checkpoint
    assert f"resumed from {ckpt}" in learner.process.log_text()
    learner.wait("the resumed snapshot", lambda: learner.snapshots)
    resumed = OnnxPolicy.from_bytes(bytes(learner.snapshots[-1][1].data))
    assert resumed.version == counters["policy_version"] and resumed.contract.run_id == final.contract.run_id
    obs = np.random.default_rng(0).normal(size=(len(final.contract.observation_labels),))
    assert np.allclose(resumed.act(obs, True).command, final.act(obs, True).command, atol=1e-6)  # same weights

    learner.feed(actor, 10)  # training goes on from there
    learner.wait("more steps, updates and versions", lambda: learner.value("env_steps") == 320
                 and learner.value("updates") > counters["updates"]
                 and learner.value("policy_version") > counters["policy_version"])


def test_the_learner_exits_by_itself_at_total_steps_with_its_final_artefacts(ros_session, tmp_path):
    s = ros_session
    run = tmp_path / "run"
    learner = Learner(s, run, total_steps=96).start()
    actor = RandomWalkActor(0, *_labels(learner), seed=7)
    learner.feed(actor, 6)  # 96 transitions
    s.probe.wait_for(lambda: not learner.process.alive, 30, "the learner to exit at total_steps")
    assert learner.process.returncode == 0, learner.process.log_text()[-3000:]
    counters = load_checkpoint(checkpoint_path(run / "checkpoints", 96))["counters"]
    assert counters["env_steps"] == 96 and counters["updates"] > 0
    assert OnnxPolicy.from_file(run / "policy.onnx").version == counters["policy_version"] > 1
    assert (run / "plots" / "learning_curves.png").exists()
    assert "reached total_steps=96" in learner.process.log_text()

    # the same command again (e.g. `morl-robot train` re-run): the run is complete, the learner says so and exits
    again = s.group.start(learner.spec)
    s.probe.wait_for(lambda: not again.alive, 60, "the restarted learner of a finished run to exit")
    assert again.returncode == 0 and "already has 96 of total_steps=96" in again.log_text()


def _labels(learner: Learner) -> tuple[list[str], list[str], list[str]]:
    learner.wait("the first snapshot", lambda: learner.snapshots)
    c = OnnxPolicy.from_bytes(bytes(learner.snapshots[-1][1].data)).contract
    return c.observation_labels, c.action_labels, c.objective_names
