"""Helpers for the hardware-backend tests: robot YAML variants and an in-process driver loop
(imported by the test modules of this folder, which pytest puts on sys.path)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from morl_robot.configuration import merge
from morl_robot.resources import config_path
from morl_robot.robots.config import load_robot_config
from morl_robot.robots.driver_codec import DriverCommand
from morl_robot.robots.emulation import DriverEmulatorCore
from morl_robot.robots.hardware import HardwareRobot

SAWYER_JOINTS = [f"right_j{i}" for i in range(7)]


def robot_yaml(tmp_path: Path, robot: str, hardware: dict[str, Any], name: str = "robot.yaml") -> Path:
    """The robot's YAML with its ``hardware:`` section merged with ``hardware`` (lists replace)."""
    data = yaml.safe_load(config_path(f"robots/{robot}.yaml").read_text())
    data["hardware"] = merge(data["hardware"], hardware)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


class DriverLoop:
    """A :class:`HardwareRobot` wired to a :class:`DriverEmulatorCore` without ROS: commands go
    straight to the emulator, every emulator step publishes its state to the robot, and the robot's
    clock is the emulator's time (so freshness and resets run on simulated time)."""

    def __init__(self, config_source: str, control_period: float = 0.05, period: float = 0.01,
                 latency: float = 0.0) -> None:
        config = load_robot_config(config_source)
        self.emu = DriverEmulatorCore(config, period=period)
        self.t = 1000.0
        self.sent: list[DriverCommand] = []
        self.deliver = True  # False: the driver stops answering (stale state)
        self.latency = latency  # s: every state message reaches the robot this late, stamped when measured
        self._in_flight: list[tuple[float, Any]] = []
        self.robot = HardwareRobot(config, control_period, source=config_source, sink=self.sink,
                                   clock=lambda: self.t, sleep=self.sleep, stamp_clock=lambda: self.t)
        self.publish()

    def sink(self, cmd: DriverCommand) -> None:
        self.sent.append(cmd)
        if cmd.kind == "forward":
            self.emu.on_forward(cmd.values)
        elif cmd.kind == "trajectory":
            self.emu.on_trajectory(cmd.joint_names, cmd.values, cmd.time_from_start)
        else:
            empty: list[float] = []
            self.emu.on_joint_state_command(cmd.joint_names, *(cmd.values if cmd.mode == m else empty
                                                               for m in ("position", "velocity", "effort")))

    def publish(self) -> None:
        if not self.deliver:
            return
        self._in_flight.append((self.t, (self.emu.joint_state(), self.emu.wrench(), self.emu.tactile())))
        while self._in_flight and self._in_flight[0][0] + self.latency <= self.t + 1e-9:
            stamp, (js, w, tac) = self._in_flight.pop(0)
            self.robot.on_joint_state(js.names, js.position, js.velocity, js.effort, stamp)
            if w is not None:
                self.robot.on_wrench(w.force, w.torque, stamp, w.frame)
            if tac is not None:
                self.robot.on_tactile(tac.values, tac.labels, stamp)

    def sleep(self, dt: float) -> None:
        for _ in range(max(1, round(dt / self.emu.period))):
            self.emu.step()
            self.t += self.emu.period
            self.publish()
