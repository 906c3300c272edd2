"""ε-conditioned MO-MPO on the ROS graph: a learner_node with ``preferences:`` in its config, a
policy_server actor (mode train) that samples a preference per episode, and a lockstep robot_node.
The actor's experience (observation + preference features) fits the learner, which updates and
publishes conditioned snapshots (a ``preference`` input) that the actor picks up."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray, UInt8MultiArray

from morl_robot.nodes import wire
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.session.processes import NodeSpec

pytestmark = pytest.mark.ros
NS = "/morl"
TASK = "sawyer_peg_in_hole"
CONFIG = """\
algorithm: mo_mpo
num_samples: 4
batch_size: 8
sequence_length: 4
target_update_period: 10
networks:
  policy_hidden: [32, 32]
  critic_hidden: [32, 32]
preferences:
  ranges: [[0.01, 1.0], [0.001, 0.1]]
replay:
  capacity: 10000
  samples_per_insert: 2.0
  min_size_to_sample: 48
  error_buffer: 64.0
training:
  checkpoint_every: 0
  keep_checkpoints: 1
  log_every: 5
  tensorboard: false
"""


def test_conditioned_actor_feeds_a_conditioned_learner(ros_session, tmp_path: Path) -> None:
    s = ros_session
    (tmp_path / "learner.yaml").write_text(CONFIG)
    snapshots = s.probe.subscribe(f"{NS}/policy_snapshot", UInt8MultiArray, wire.LATCHED_QOS)
    experience = s.probe.subscribe(f"{NS}/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
    s.probe.diagnostics()
    s.group.start(NodeSpec("learner_node", "learner_node", NS, {
        "task": TASK, "config": str(tmp_path / "learner.yaml"), "out_dir": str(tmp_path / "run"), "seed": 1,
        "snapshot_every": 5}))
    s.group.start(NodeSpec("robot_node", "robot_node", NS, {"task": TASK, "timing": "lockstep", "seed": 3}))
    s.group.start(NodeSpec("policy_server", "policy_server", NS, {"mode": "train", "timing": "lockstep",
                                                                  "chunk_size": 16, "seed": 4},
                           {"command": "command_safe"}))

    def learner() -> dict[str, str]:
        return s.probe.diagnostics("learner")

    s.probe.wait_for(lambda: float(learner().get("updates", "0")) >= 10, 90, "learner updates from the actor's experience")
    status = learner()
    assert status.get("rejected_chunks") == "0", status
    s.probe.wait_for(lambda: float(s.probe.diagnostics("policy").get("policy_version", "-1")) >= 2, 30,
                     "the actor serving a newer snapshot")
    policy = OnnxPolicy.from_bytes(bytes(snapshots[-1][1].data))
    assert policy.conditioned and policy.contract.preferences.ranges == [[0.01, 1.0], [0.001, 0.1]]
    assert policy.info.inputs["preference"][1] == 2
    table, columns = wire.read_table(experience[-1][1])
    assert columns[4 + 99:4 + 101] == ("obs/preference/task", "obs/preference/wrist_force")
    features = wire.split_experience(table, columns).obs[:, 99:]
    assert np.all(np.abs(features) <= 1.0)
    assert int(s.probe.diagnostics("policy")["preference_samples"]) >= 1
    for rc in s.group.stop().values():
        assert rc == 0, s.logs()
