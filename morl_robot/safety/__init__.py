"""Safety thresholds and watchdogs between the policy and the robot (pure core, no rclpy).

* :mod:`morl_robot.safety.config` — ``config/safety/<robot>.yaml`` as typed dataclasses with units;
* :mod:`morl_robot.safety.rules` — the rules (threshold, range, staleness, non-finite) and the
  command-shaping maths;
* :mod:`morl_robot.safety.compiled` — the config compiled into SI rules for one robot
  (:func:`load_rules`), read by both safety layers;
* :mod:`morl_robot.safety.monitor` — :class:`SafetyMonitor`, the latched state machine every
  command passes; :func:`build_monitor` makes one for a robot.

The ROS node is ``morl_robot/nodes/safety_monitor.py``.
"""
from morl_robot.safety.compiled import CompiledRules, compile_rules, load_rules
from morl_robot.safety.config import SafetyConfig, load_safety_config
from morl_robot.safety.monitor import Command, Outcome, SafetyMonitor, build_monitor
from morl_robot.safety.rules import Response, RuleLimit, Violation

__all__ = ["Command", "CompiledRules", "Outcome", "Response", "RuleLimit", "SafetyConfig", "SafetyMonitor",
           "Violation", "build_monitor", "compile_rules", "load_rules", "load_safety_config"]
