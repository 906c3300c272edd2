"""A bare rclpy relay for ``morl-robot bench safety --baseline``: answers every ``wrench`` with a
zero twist on ``command_safe``, no safety logic, so the benchmark can tell the monitor's cost from
Python rclpy + DDS's own.  Usage: ``python -m morl_robot.nodes.bench_relay NAMESPACE``."""
from __future__ import annotations

import sys

import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Float64MultiArray

from morl_robot.nodes import wire


def main() -> int:
    rclpy.init(args=sys.argv)
    node = rclpy.create_node("relay", namespace=sys.argv[1])
    pub = node.create_publisher(Float64MultiArray, "command_safe", wire.COMMAND_QOS)
    hold = wire.labelled_array([0.0, 0.0, 0.0], ["vx", "vy", "vz"])
    node.create_subscription(WrenchStamped, "wrench", lambda m: pub.publish(hold), wire.SENSOR_QOS)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
