"""A required node's failure ends the launch with its reason: ``deploy.launch.py backend:=hardware``
with no robot driver running (the robot node gets no driver state and exits 2)."""
import tempfile
from pathlib import Path

from launch_helpers import domain_for, require_ros_workspace, run_until_it_ends

require_ros_workspace()

NS = "/launch_nodriver"


def test_a_failing_required_node_shuts_the_launch_down_with_the_reason():
    from morl_robot.bench.graph import _export_policy

    policy = Path(tempfile.mkdtemp()) / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", policy)
    run = run_until_it_ends("deploy.launch.py", domain_for(__file__), timeout=180, policy=str(policy),
                            backend="hardware", namespace=NS.strip("/"))
    assert run.ended_by_itself, run.output
    assert run.reasons[0] == f"{NS}/robot_node exited with code 2; a required node of the deploy session has ended"
    robot = run.process("robot_node")
    assert run.exit_codes.pop(robot) == 2 and "no usable driver state" in run.output[robot]
    assert set(run.exit_codes.values()) == {0}, run.exit_codes  # the others stopped cleanly
