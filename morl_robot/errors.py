"""The project's exception types: one place, so callers can catch by meaning."""


class MorlRobotError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(MorlRobotError, ValueError):
    """A configuration file or value is invalid; the message names the file, the key and what
    is allowed."""


class CommandError(MorlRobotError, ValueError):
    """A robot command is wrong-sized, non-finite, or not valid in the active control mode."""


class UnknownNameError(MorlRobotError, KeyError):
    """A name (task, robot, objective, sensor) is not known; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly instead.
        return str(self.args[0]) if self.args else ""


class UsageError(MorlRobotError, ValueError):
    """A command-line argument is invalid; the message names the option and what is allowed."""


class WireError(MorlRobotError, ValueError):
    """A message or an experience table does not follow the wire contract (wrong layout, size or labels)."""


class GraphStalled(MorlRobotError, RuntimeError):
    """A ROS graph stopped making progress (no step, no episode end) for longer than allowed; the
    message gives the newest status of each node."""
