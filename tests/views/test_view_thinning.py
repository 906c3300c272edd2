"""The robot node's views (morl_robot/nodes/views.py) in-process: thinned to view_rate (an episode's
last step always goes out), nothing published without a subscriber, no scene at scene_rate 0."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy")


def test_views_are_thinned_but_every_episode_end_is_sent():
    import rclpy
    from rclpy.context import Context
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64

    from morl_robot.envs.robot_session import open_runner
    from morl_robot.nodes import wire
    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.nodes.views import RobotViews
    from morl_robot.session.config import RobotNodeSettings
    from tests.conftest import _next_domain

    domain = _next_domain()
    ctx = Context()
    rclpy.init(context=ctx, domain_id=domain)
    probe = GraphProbe(domain, "thinning_probe")
    try:
        node = rclpy.create_node("robot_node", namespace="/thin", context=ctx)
        runner = open_runner(RobotNodeSettings(task="sawyer_peg_in_hole"))
        views = RobotViews(node, runner, scene_rate=0.0, view_rate=1e-4)  # one view per ~3 h, and the ends
        assert views.pub_scene is None
        runner.reset()
        hold = np.zeros(len(runner.action_labels))

        def steps(n: int) -> list:
            ends = []
            for _ in range(n):
                rec = runner.step(hold, runner.action_labels)
                views.on_task_step(rec)
                if rec.done:
                    ends.append(rec)
                    runner.reset()
            return ends

        steps(5)  # nobody listens: nothing is sent (and the first view is still due)
        obs = probe.subscribe("/thin/view/observation", JointState, wire.VIEW_QOS)
        ret = probe.subscribe("/thin/view/return/task", Float64, wire.VIEW_QOS)
        probe.wait_for_publishers("/thin/view/observation")
        probe.wait_for_publishers("/thin/view/return/task")
        probe.wait_for(lambda: views.pub_observation.get_subscription_count() > 0, 30, "the probe matched")
        views._checked = -np.inf  # re-check the listeners now rather than in LISTENER_CHECK s
        ends = steps(170)  # one 160-step episode ends in here
        assert len(ends) == 1
        probe.wait_for(lambda: len(ret) >= 2, 10, "the first view and the episode end's")
        assert len(obs) == 2 and len(ret) == 2  # the first step after listening, and the end
        assert ret[-1][1].data == pytest.approx(float(ends[0].returns[0]))
        assert list(obs[-1][1].position) == pytest.approx(ends[0].observation.tolist())
    finally:
        probe.close()
        rclpy.shutdown(context=ctx)
