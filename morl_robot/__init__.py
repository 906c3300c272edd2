"""morl_robot: multi-objective RL (MO-MPO) on the Rethink Sawyer and the Shadow Dexterous Hand.

Importing the package registers the Gymnasium environments (``morl_robot/SawyerPegInHole-v0``,
``morl_robot/ShadowTouch-v0``, ``morl_robot/ShadowTurn-v0``, ``morl_robot/ShadowOrient-v0``).
The core (everything but ``morl_robot.nodes`` and ``morl_robot.cli``) never imports rclpy.
"""
__version__ = "0.1.0"

from morl_robot.envs.registration import register_envs as _register_envs

_register_envs()
