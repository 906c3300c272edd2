"""``ros2 launch morl_robot deploy.launch.py policy:=… release:=after_checks``: the graph comes up,
the monitor is released once its checks pass (and says so), the policy's commands flow through
it, and every node shuts down cleanly."""
import tempfile
import unittest
from pathlib import Path

import pytest
from launch_helpers import domain_for, require_ros_workspace, session

require_ros_workspace()

import launch_testing
import launch_testing.asserts

import launch

NS = "/launch_deploy"


@pytest.mark.launch_test
def generate_test_description():
    from morl_robot.bench.graph import _export_policy

    policy = Path(tempfile.mkdtemp()) / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", policy)
    domain = domain_for(__file__)
    return launch.LaunchDescription([
        *session("deploy.launch.py", domain, policy=str(policy), release="after_checks", namespace=NS.strip("/")),
        launch_testing.actions.ReadyToTest(),
    ]), {"domain": domain}


class TestDeployGraph(unittest.TestCase):

    def test_released_after_checks_and_commands_flow(self, proc_output, domain):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool, Float64MultiArray

        from morl_robot.nodes import wire
        from morl_robot.nodes.probe import GraphProbe

        with GraphProbe(domain, name="launch_test_deploy") as probe:
            joints = probe.subscribe(f"{NS}/joint_states", JointState, wire.SENSOR_QOS)
            estop = probe.subscribe(f"{NS}/safety/estop", Bool, wire.LATCHED_QOS)
            safe = probe.subscribe(f"{NS}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
            probe.wait_for(lambda: len(joints) > 5, 120, "joint_states")
            probe.wait_for(lambda: estop and not estop[-1][1].data, 120, "the e-stop released after the checks")
            released = len(safe)
            probe.wait_for(lambda: len(safe) > released + 20, 60, "policy commands through the released monitor")
        proc_output.assertWaitFor(f"released the safety monitor in {NS} after its checks passed", timeout=10)


@launch_testing.post_shutdown_test()
class TestDeployShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
