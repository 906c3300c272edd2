"""Fault: bad learner/session configs and arguments started the whole graph and ended with rc 1
and "see …/learner_node.log" (or a traceback); a session YAML typo was silently ignored.  Every
config and argument is checked before any node starts: exit 2 and one line naming the problem."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from morl_robot.cli import main
from morl_robot.resources import config_path


def _learner(tmp_path, **changes):
    data = yaml.safe_load(config_path("learner/mo_mpo_cpu_small.yaml").read_text())
    data.update(changes)
    path = tmp_path / "learner.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _session(tmp_path, node: str, **params):
    data = yaml.safe_load(config_path("sessions/train.yaml").read_text())
    data[node].update(params)
    path = tmp_path / "session.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("make, words", [
    (lambda t: ["--learner", str(_learner(t, default_epsilon=-0.1))], "default_epsilon"),
    (lambda t: ["--learner", str(_learner(t, policy_lr=float("nan")))], "policy_lr"),
    (lambda t: ["--learner", str(_learner(t, epsilons=[0.1, float("nan")]))], "finite"),
    (lambda t: ["--learner", str(_learner(t, not_a_key=1))], "not_a_key"),
    (lambda t: ["--learner", "no_such_profile"], "unknown learner config 'no_such_profile'; available: "),
    (lambda t: ["--session", str(_session(t, "learner_node", snapshot_every=0))], "snapshot_every"),
    (lambda t: ["--learner", str(_learner(t, training={"checkpoint_every": -5}))], "training.checkpoint_every"),
    (lambda t: ["--session", str(_session(t, "learner_node", snapshot_evry=10))], "snapshot_evry"),
    (lambda t: ["--session", str(_session(t, "policy_server", chunk_sise=10))], "allowed"),
    (lambda t: ["--steps", str(10**23)], "total_steps"),
    (lambda t: ["--learner", str(_learner(t, replay={"crm": True}))], "replay.crm is true but"),
    (lambda t: ["--task", "shadow_touch", "--reward-machine", "sawyer/peg_touch_then_insert"],
     "written for task 'sawyer_peg_in_hole', not 'shadow_touch'"),
    (lambda t: ["--reward-machine", "sawyer/no_such_machine"], "no_such_machine"),
])
def test_bad_configs_are_refused_before_any_node_starts(tmp_path, capsys, make, words):
    out = tmp_path / "run"
    rc = main(["train", "--task", "sawyer_peg_in_hole", "--out", str(out), "--no-progress", *make(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert not (out / "logs").exists()  # no node was started


def test_every_node_declares_exactly_the_fields_of_its_settings_dataclass():
    rclpy = pytest.importorskip("rclpy")
    from morl_robot.node_settings import NODE_SETTINGS
    from morl_robot.nodes.learner_node import LearnerNode
    from morl_robot.nodes.policy_server import PolicyServer
    from morl_robot.nodes.robot_node import RobotNode
    from morl_robot.nodes.safety_monitor import SafetyMonitorNode
    from morl_robot.nodes.vector_actor import VectorActorNode

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=0)
    try:
        for name, cls in (("robot_node", RobotNode), ("safety_monitor", SafetyMonitorNode),
                          ("policy_server", PolicyServer), ("learner_node", LearnerNode),
                          ("vector_actor", VectorActorNode)):
            node = cls(context=context)
            try:
                declared = {p for p in node._parameters  # minus the ones rclpy declares on every node
                            if p not in ("use_sim_time", "start_type_description_service")}
                assert declared == {f.name for f in dataclasses.fields(NODE_SETTINGS[name])}, name
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_unreadable_or_mismatched_configs_get_one_clear_line(tmp_path, capsys):
    from morl_robot.resources import config_path as cp

    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("task: sawyer_peg_in_hole  # caf\xe9\n".encode("latin-1"))
    wrong_robot = tmp_path / "peg_on_the_hand.yaml"
    wrong_robot.write_text(cp("tasks/sawyer_peg_in_hole.yaml").read_text().replace("robot: sawyer", "robot: shadow_hand"))
    cases = [(["train", "--session", str(latin1)], "not UTF-8"),
             (["train", "--session", str(tmp_path)], "is a directory"),
             (["rollout", "--task", "sawyer_peg_in_hole", "--steps", "1", "--task-config", str(wrong_robot)],
              "runs on robot 'sawyer'")]
    for argv, words in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
