"""Counterfactual experience through the ROS graph: ``morl-robot train --reward-machine`` with a
learner YAML that has ``replay.crm: true``, through the real CLI, as processes (robot node with the
Sawyer MORM task, safety monitor, policy server, learner node) over real DDS.

The robot node runs the task in its product machine; the machine one-hot is part of the policy's
observation, the MORM objectives part of the reward; the machine columns (the environment's own
termination and the propositions of each transition) flow in ``task_step`` and ``experience``; the
learner stores them and relabels its replay counterfactually: its inserts count every
counterfactual experience (|U \\ F| = 9 per real step past ``min_size_to_sample``)."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from morl_robot.resources import config_path

pytestmark = [pytest.mark.ros]

MIN_SIZE, STEPS = 64, 240  # min_size_to_sample of the tiny learner YAML


def crm_learner_yaml() -> str:
    """The graph tests' tiny learner with ``replay.crm`` on and the replay in its checkpoint."""
    from tests.conftest import tiny_learner_yaml

    data = yaml.safe_load(tiny_learner_yaml(4.0, sequence_length=2, log_every=5))
    assert data["replay"]["min_size_to_sample"] == MIN_SIZE
    data["replay"]["crm"] = True
    data["training"].update(checkpoint_replay=True, keep_checkpoints=1)
    return yaml.safe_dump(data)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    pytest.importorskip("rclpy")
    from morl_robot.session.processes import ros_env
    from tests.conftest import _next_domain

    tmp = tmp_path_factory.mktemp("crm_graph")
    (tmp / "crm.yaml").write_text(crm_learner_yaml())
    task = yaml.safe_load(config_path("tasks/sawyer_peg_in_hole.yaml").read_text())
    task["episode_duration"] = 1.0  # 20-step episodes: several finish in a short run
    (tmp / "short.yaml").write_text(yaml.safe_dump(task))
    session = yaml.safe_load(config_path("sessions/train.yaml").read_text())
    session["robot_node"]["task_config"] = session["learner_node"]["task_config"] = str(tmp / "short.yaml")
    session["policy_server"]["chunk_size"] = 16
    session["learner_node"]["snapshot_every"] = 20
    (tmp / "session.yaml").write_text(yaml.safe_dump(session))
    out = tmp / "run"
    domain = _next_domain()
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--session", str(tmp / "session.yaml"),
           "--task", "sawyer_peg_in_hole", "--reward-machine", "sawyer/peg_touch_then_insert",
           "--learner", str(tmp / "crm.yaml"), "--steps", str(STEPS), "--out", str(out), "--no-progress",
           "--namespace", "crm", "--domain-id", str(domain)]
    done = subprocess.run(cmd, env=ros_env(domain), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_policy_acts_in_the_product_of_task_and_machine(run):
    from morl_robot.serving.runtime import OnnxPolicy

    contract = OnnxPolicy.from_file(run / "policy.onnx").contract
    assert contract.objective_names == ["task", "wrist_force", "touch_then_insert", "force_budget"]
    machine = [lab for lab in contract.observation_labels if lab.startswith("rm_state/")]
    assert len(machine) == 12 and machine[0] == "rm_state/approach+clean"
    # the learner node's export records the machine: evaluate / deploy rebuild the product from it
    from morl_robot.reward_machines.env import machine_inputs

    assert contract.reward_machine == machine_inputs("sawyer/peg_touch_then_insert")
    with open(run / "episodes.csv", newline="") as f:
        episodes = list(csv.DictReader(f))
    assert episodes and "return/force_budget" in episodes[0]


def test_evaluate_takes_the_run_directory_of_a_reward_machine_policy(run, capsys):
    """`morl-robot evaluate RUN_DIR` (its policy.onnx): the product rebuilt from the contract, every objective."""
    from morl_robot.cli import main

    assert main(["evaluate", str(run), "--episodes", "1", "--seed", "7", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert list(got["objectives"]) == ["task", "wrist_force", "touch_then_insert", "force_budget"]


def test_the_learner_added_counterfactual_experience(run):
    from morl_robot.learning.checkpoint import (
        latest_checkpoint,
        load_checkpoint,
        run_checkpoint_dir,
    )

    payload = load_checkpoint(latest_checkpoint(run_checkpoint_dir(run)))
    steps = payload["counters"]["env_steps"]
    assert steps >= STEPS
    # every real step past min_size_to_sample counted once more per other non-terminal machine state
    assert payload["limiter"]["inserts"] == steps + 8 * (steps - MIN_SIZE)
    replay = payload["replay"]
    labels = np.asarray(replay["label"])[np.asarray(replay["valid"])]
    assert len(labels) == steps and np.all(labels >= 0)  # each transition stored with its propositions
    with open(run / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and float(rows[-1]["counterfactual_sequences"]) > 0
    assert float(rows[-1]["replay_inserts"]) > steps
