"""One teardown for every managed node (``ManagedNode.own``, nodes/base.py): walked through
configure → activate → deactivate → cleanup twice, in-process, each node ends with exactly the
ROS entities it had before configure (the safety monitor keeps its latched e-stop publisher, on
purpose: one, not one per configure), and what activate started is gone after deactivate; ``close``
(run_node at SIGINT) from active does the same (the safety monitor's only publishes its e-stop)."""
from __future__ import annotations

import pytest

pytest.importorskip("rclpy")


def _entities(node) -> dict[str, int]:
    return {kind: len(list(getattr(node, kind))) for kind in ("publishers", "subscriptions", "timers", "services",
                                                             "clients")}


def _cases(tmp_path):
    from morl_robot.nodes.learner_node import LearnerNode
    from morl_robot.nodes.policy_server import PolicyServer
    from morl_robot.nodes.robot_node import RobotNode
    from morl_robot.nodes.safety_monitor import SafetyMonitorNode
    from morl_robot.nodes.vector_actor import VectorActorNode

    return [  # (node class, parameters, publishers kept across cleanup)
        (RobotNode, {"task": "sawyer_peg_in_hole", "timing": "realtime", "scene_rate": 5.0}, 0),
        (SafetyMonitorNode, {"robot": "sawyer"}, 1),  # safety/estop: late joiners still see the latched state
        (PolicyServer, {"mode": "train", "timing": "lockstep"}, 0),
        (VectorActorNode, {"task": "sawyer_peg_in_hole", "envs": 2}, 0),
        (LearnerNode, {"task": "sawyer_peg_in_hole", "out_dir": str(tmp_path / "run")}, 0),
    ]


def test_every_managed_node_destroys_what_it_created(tmp_path):
    import rclpy
    from lifecycle_msgs.msg import State
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from tests.conftest import _next_domain

    ok = TransitionCallbackReturn.SUCCESS
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=_next_domain())
    try:
        for cls, params, kept in _cases(tmp_path):
            overrides = [Parameter(k, value=v) for k, v in {**params, "autostart": False}.items()]
            node = cls(context=context, namespace="/teardown", parameter_overrides=overrides)
            try:
                before = _entities(node)
                for _ in range(2):
                    assert node.trigger_configure() == ok, cls.__name__
                    configured = _entities(node)
                    assert configured["publishers"] > before["publishers"], cls.__name__
                    assert node.trigger_activate() == ok, cls.__name__
                    assert node.is_active
                    assert _entities(node)["timers"] > configured["timers"] or cls.__name__ in (
                        "PolicyServer", "VectorActorNode"), cls.__name__  # (their loops are threads)
                    assert node.trigger_deactivate() == ok, cls.__name__
                    assert _entities(node) == configured, cls.__name__
                    assert node.trigger_cleanup() == ok, cls.__name__
                    assert node._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED
                    assert _entities(node) == {**before, "publishers": before["publishers"] + kept}, cls.__name__
                if cls.__name__ == "SafetyMonitorNode":
                    continue  # its close() engages the e-stop and leaves the rest to destroy_node
                # close() from active: deactivate, then cleanup (run_node at SIGINT)
                assert node.trigger_configure() == ok and node.trigger_activate() == ok, cls.__name__
                node.close()
                assert not node.is_active
                assert _entities(node) == {**before, "publishers": before["publishers"] + kept}, cls.__name__
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_own_refuses_an_unknown_lifetime():
    import rclpy

    from morl_robot.nodes.safety_monitor import SafetyMonitorNode

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=0)
    try:
        node = SafetyMonitorNode(context=context)
        try:
            with pytest.raises(ValueError, match="'cleanup' or 'deactivate'"):
                node.own(object(), "shutdown")
            assert not node.disown(object())
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
