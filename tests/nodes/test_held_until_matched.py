"""Experience is never lost to DDS discovery: a chunk published before any subscription has
matched the actor's publisher is held and sent, in order, once one has (real DDS, two participants)."""
from __future__ import annotations

import pytest
from std_msgs.msg import Float64MultiArray

from morl_robot.nodes import wire
from morl_robot.nodes.base import HeldUntilMatched
from morl_robot.nodes.probe import GraphProbe

pytestmark = pytest.mark.ros


def test_chunks_before_the_match_are_held_then_sent_in_order(domain_id):
    actor, learner = GraphProbe(domain_id, "actor"), GraphProbe(domain_id, "learner")
    try:
        out = HeldUntilMatched(actor.publisher("/held/experience", Float64MultiArray, wire.EXPERIENCE_QOS), limit=3)
        for i in range(4):  # nobody listens yet: held, the oldest dropped beyond the limit
            out.publish(Float64MultiArray(data=[float(i)]))
        assert out.held == 3 and out.dropped == 1
        received = learner.subscribe("/held/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
        learner.wait_for(lambda: (out.flush(), len(received))[1] == 3, 30, "the held chunks")
        out.publish(Float64MultiArray(data=[4.0]))  # matched now: straight through
        learner.wait_for(lambda: len(received) == 4, 30, "the next chunk")
        assert [m.data[0] for _, m in received] == [1.0, 2.0, 3.0, 4.0] and out.held == 0
    finally:
        actor.close()
        learner.close()
