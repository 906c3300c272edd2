"""Thin rclpy nodes: parameters in, topics and services out; the algorithms live in the core.

``wire`` is the topic contract (names, types, QoS, labelled-array layouts); ``base`` holds the
process entry point, lifecycle autostart and diagnostics.  Only this package and ``cli`` import
rclpy.
"""
