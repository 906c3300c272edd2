"""Safety thresholds and watchdogs between the policy and the robot (pure core, no rclpy).

* :mod:`morl_robot.safety.config` — ``config/safety/<robot>.yaml`` as typed dataclasses with units;
* :mod:`morl_robot.safety.rules` — the rules (threshold, range, staleness, non-finite) and the
  command-shaping maths;
* :mod:`morl_robot.safety.monitor` — :class:`SafetyMonitor`, the latched state machine every
  command passes; :func:`build_monitor` makes one for a robot.

The ROS node is ``morl_robot/nodes/safety_monitor.py``.
"""
from morl_robot.safety.config import SafetyConfig, load_safety_config
from morl_robot.safety.monitor import Command, Outcome, SafetyMonitor, build_monitor
from morl_robot.safety.rules import Response, RuleLimit, Violation

__all__ = ["Command", "Outcome", "Response", "RuleLimit", "SafetyConfig", "SafetyMonitor", "Violation",
           "build_monitor", "load_safety_config"]
