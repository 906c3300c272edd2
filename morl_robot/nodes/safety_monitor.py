"""``safety_monitor``: thresholds and watchdogs between the policy and the robot (a managed node).

A thin wrapper of :class:`morl_robot.safety.monitor.SafetyMonitor` (the rules and the latched
state machine live there).  What it publishes when, the watchdog profiles and its clock (system
time; arrival time under ``use_sim_time``): docs/explanation/nodes.md.
"""
from __future__ import annotations

import math
import sys
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, Header, String
from std_srvs.srv import Trigger

from morl_robot.errors import ConfigError, WireError
from morl_robot.node_settings import SafetyMonitorSettings
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    ManagedNode,
    diagnostic_status,
    log_at,
    run_node,
    steady_timer,
    uses_sim_time,
)
from morl_robot.safety.monitor import Outcome, SafetyMonitor, build_monitor
from morl_robot.safety.rules import Response, Violation
from morl_robot.throttle import RateLimitedLog


def _seconds(stamp: Any) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def _fmt_time(t: float) -> str:
    return "nan" if math.isnan(t) else f"{t:.9f}"


class SafetyMonitorNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("safety_monitor", **kwargs)
        self.declare_settings(SafetyMonitorSettings)
        self.monitor: SafetyMonitor | None = None
        self._active = False
        self._estop_published: bool | None = None
        self._pub_estop: Any = None
        self._last_trip_latency = math.nan
        self._sim_time = uses_sim_time(self)
        self._foreign_commands = 0
        self._bad_input = RateLimitedLog(lambda level, message: log_at(self.get_logger(), level, message))

    @staticmethod
    def _now() -> float:
        return time.time()

    def _stamp(self, stamp: Any, now: float) -> float:
        """A reading's time on the monitor's clock: its header stamp, or its arrival ``now`` under
        ``use_sim_time`` (docs/explanation/nodes.md, "Clock")."""
        return now if self._sim_time else _seconds(stamp)

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        source = self.settings.config or self.settings.robot
        if not source:
            raise ConfigError("parameter robot: give a robot (sawyer, shadow_hand) or parameter config (a YAML path)")
        self._watchdogs = self.settings.watchdogs
        actions = [a for a in self.settings.action_labels.split(",") if a]
        self.monitor = build_monitor(source, self.settings.control_mode or None, self._watchdogs,
                                     now=self._now(), action_labels=actions)
        spec = self.monitor.spec
        own = self.own
        self._pub_command = own(self.create_publisher(Float64MultiArray, "command_safe", wire.COMMAND_QOS))
        if self._pub_estop is None:  # not owned, kept across cleanup: late joiners still see the latched state
            self._pub_estop = self.create_publisher(Bool, "safety/estop", wire.LATCHED_QOS)
        self._pub_events = own(self.create_publisher(DiagnosticStatus, "safety/violations", wire.EVENT_QOS))
        # Sensors first: rclpy's executor takes ready subscriptions in creation order, so a reading
        # and a command waiting together are handled reading first, as the in-process shield does
        # (observe, then filter).  The state-dependent clamps (approach speed, workspace) then act
        # on the state the command answers, and a lockstep deploy matches its in-process twin.
        # The episode's placement before everything (latched: a late joiner gets the newest): the
        # approach boxes where its context put the fixture before the episode's first command.
        own(self.create_subscription(String, "placement", self._on_placement, wire.LATCHED_QOS))
        own(self.create_subscription(JointState, "joint_states", self._on_joint_state, wire.SENSOR_QOS))
        if spec.has_sensor("wrench"):
            own(self.create_subscription(WrenchStamped, "wrench", self._on_wrench, wire.SENSOR_QOS))
        if spec.has_sensor("tactile"):
            own(self.create_subscription(Float64MultiArray, "tactile", self._on_tactile, wire.SENSOR_QOS))
        own(self.create_subscription(Float64MultiArray, "command", self._on_command, wire.COMMAND_QOS))
        own(self.create_subscription(Header, "heartbeat", self._on_heartbeat, wire.COMMAND_QOS))
        own(self.create_service(Trigger, "safety/reset", self._srv_reset))
        own(self.create_service(Trigger, "safety/trigger", self._srv_trigger))
        own(DiagnosticsPublisher(self, f"{self.get_name()}: safety", self._status, self.settings.diagnostics_period,
                                 spec.name))
        self._publish_estop()
        for rule, why in self.monitor.opted_out.items():
            self.get_logger().warning(f"required rule '{rule}' left out by {self.monitor.source}: {why}")
        for wk in self.monitor.weakened:  # each opted out with its reason (morl_robot/safety/weakening.py)
            self.get_logger().warning(f"weakened on purpose by {self.monitor.source}: {wk.describe()}; "
                                      f"reason: {wk.reason}")
        self.get_logger().info(
            f"{spec.name}: {len(self.monitor.describe_rules())} thresholds from {self.monitor.source}; "
            f"watchdogs {'on' if self._watchdogs else 'off (lockstep profile)'}; e-stop engaged until safety/reset")

    def activate(self) -> None:
        self._active = True
        if self._watchdogs:
            self.own(steady_timer(self, self.settings.check_period, self._on_timer), "deactivate")

    def deactivate(self) -> None:  # (the watchdog timer: ManagedNode)
        self._active = False
        if self.monitor is not None:  # not supervising: engage the e-stop, forward nothing
            self._handle(self.monitor.trigger("safety monitor deactivated", self._now()), unsolicited=False)

    def cleanup(self) -> None:  # (its entities: ManagedNode)
        self.monitor = None

    def close(self) -> None:
        """Process exit (run_node): engage and publish the e-stop, so the last word is 'stopped'
        (not when giving way to an earlier session: its robot listens on the same names)."""
        if self.monitor is not None and not self.refused:
            self.monitor.trigger("safety monitor shutting down", self._now())
            self._publish_estop()

    # --- publishing ----------------------------------------------------------------------------
    def _handle(self, outcome: Outcome, unsolicited: bool, key: float | None = None) -> None:
        """Publish what the monitor decided: the command first (it is what stops the robot), then
        the e-stop state if it changed, then the violation events.  ``key``: the lockstep step key
        the checked command answered, passed on with it."""
        published_at = math.nan
        if outcome.command is not None and self._active and (not unsolicited or self._watchdogs):
            self._pub_command.publish(wire.command_message(outcome.command.values, outcome.command.labels, key,
                                                           self.session_token))
            published_at = self._now()
        self._publish_estop()
        stops = []
        for v in outcome.violations:
            self._pub_events.publish(self._event(v, published_at))
            if v.response >= Response.HOLD:
                stops.append(v.describe())
            if v.response == Response.ESTOP and not math.isnan(v.sensor_stamp) and not math.isnan(published_at):
                self._last_trip_latency = published_at - v.sensor_stamp
        if stops:  # one line per decision: rclpy's logger costs ~0.4 ms a call
            self.get_logger().warning("; ".join(stops))

    def _publish_estop(self) -> None:
        if self.monitor is None or self._pub_estop is None:
            return
        state = self.monitor.estopped
        if state != self._estop_published:
            self._pub_estop.publish(Bool(data=state))
            self._estop_published = state

    def _event(self, v: Violation, published_at: float = math.nan) -> DiagnosticStatus:
        level = "error" if v.response == Response.ESTOP else ("warn" if v.response >= Response.CLAMP else "ok")
        assert self.monitor is not None
        return diagnostic_status(v.rule, self.monitor.spec.name, level, v.describe(), {
            "rule": v.rule, "key": v.key, "level": v.level, "value": f"{v.value:.9g}",
            "threshold": f"{v.threshold:.9g}", "unit": v.unit, "response": v.response.label,
            "sensor_stamp": _fmt_time(v.sensor_stamp), "decided_at": _fmt_time(v.decided_at),
            "command_published_at": _fmt_time(published_at), "detail": v.detail})

    # --- callbacks -----------------------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        if self.monitor is None:
            return
        now = self._now()
        key = None
        try:
            cmd = wire.split_command(*wire.read_labelled(msg))
            values, labels, key = cmd.values, cmd.labels, cmd.key
        except wire.WireError as exc:
            self._bad_input("malformed_command", "error", f"malformed command, holding: {exc}")
            values, labels = [math.nan], ("?",)
        else:
            theirs = wire.foreign_sender(cmd, self.session_token)
            if theirs:  # another session's policy (or none): not ours to check
                self._foreign_commands += 1
                self._bad_input("foreign_command", "warning",
                                f"ignored a command of {theirs} on {self.get_namespace()}: this monitor checks "
                                f"only session {self.settings.session}'s commands")
                return
        if key is not None and wire.step_of_key(key) == 0:
            self.monitor.new_episode()  # step 0: a (simulated) reset has put the robot at rest
        placed = self.monitor.placement_episode
        if key is not None and placed is not None and wire.episode_of_key(key) > placed:
            self.monitor.counters["placement_late"] += 1  # judged with the previous episode's boxes
            self._bad_input("placement_late", "warning",
                            f"a command of episode {wire.episode_of_key(key)} before its placement (the newest is of "
                            f"episode {placed}): judged with the approach boxes of episode {placed}")
        # a lockstep command stands for one control period of simulated time; others for the wall
        # time since the previous command (the monitor caps it at one period)
        elapsed = self.monitor.command_period if key is not None else None
        self._handle(self.monitor.on_command(values, labels, now, elapsed), unsolicited=False, key=key)

    def _on_placement(self, msg: String) -> None:
        """The robot's episode placement (issue 37): the approach boxes move with the fixture its
        context moved; anything unreadable leaves them where the YAML puts them, and says so."""
        if self.monitor is None:
            return
        before = self.monitor.describe_placement()
        try:
            p = wire.read_placement(msg.data)
        except WireError as exc:
            self.monitor.refuse_placement(str(exc))
        else:
            try:
                self.monitor.place(p.body_offset, p.context, p.episode, p.approach)
            except ConfigError:
                pass  # refused: the monitor keeps the YAML's boxes and its placement_error says why
        now = self.monitor.describe_placement()
        if self.monitor.placement_error:
            self._bad_input("placement", "error", f"episode placement refused: {self.monitor.placement_error}; "
                                                  "the approach boxes stay where the safety YAML puts them")
        elif self.monitor.placement_mismatch:
            self._bad_input("placement_mismatch", "error", now)
        elif now != before:
            self.get_logger().info(now)

    def _on_joint_state(self, msg: JointState) -> None:
        if self.monitor is not None:
            now = self._now()
            self._handle(self.monitor.on_joint_state(msg.name, msg.position, msg.velocity, msg.effort,
                                                     self._stamp(msg.header.stamp, now), now), unsolicited=True)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        if self.monitor is not None:
            f, t, now = msg.wrench.force, msg.wrench.torque, self._now()
            self._handle(self.monitor.on_wrench((f.x, f.y, f.z, t.x, t.y, t.z), self._stamp(msg.header.stamp, now),
                                                now), unsolicited=True)

    def _on_tactile(self, msg: Float64MultiArray) -> None:
        if self.monitor is None:
            return
        now = self._now()
        try:
            values, labels = wire.read_labelled(msg)
        except wire.WireError:
            values, labels = [math.nan], ("malformed",)
        self._handle(self.monitor.on_tactile(values, labels, now, now), unsolicited=True)

    def _on_heartbeat(self, msg: Header) -> None:
        if self.monitor is not None:
            now = self._now()
            self.monitor.on_heartbeat(self._stamp(msg.stamp, now), now)

    def _on_timer(self) -> None:
        if self.monitor is not None:
            # with its period: a check that runs late is the host's delay, and says so
            self._handle(self.monitor.check_watchdogs(self._now(), self.settings.check_period), unsolicited=True)

    # --- services ------------------------------------------------------------------------------
    def _srv_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.monitor is None or not self._active:
            response.success, response.message = False, "safety monitor is not active"
            return response
        response.success, response.message = self.monitor.reset(self._now())
        self._publish_estop()
        self.get_logger().info(f"safety/reset: {response.message}")
        return response

    def _srv_trigger(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.monitor is None:
            response.success, response.message = False, "safety monitor is not configured"
            return response
        self._handle(self.monitor.trigger("safety/trigger", self._now()), unsolicited=True)
        response.success, response.message = True, "e-stop engaged"
        return response

    # --- diagnostics ---------------------------------------------------------------------------
    def _status(self) -> tuple[str, str, dict[str, Any]]:
        m = self.monitor
        if m is None:
            return "stale", "not configured", {}
        values: dict[str, Any] = dict(m.counters)
        active = m.active_violations()
        values.update({"estop": m.estopped, "holding": m.holding, "accelerating": m.accelerating,
                       "active_violations": len(active), "watchdogs": self._watchdogs,
                       "foreign_commands": self._foreign_commands,
                       "last_trip_latency": self._last_trip_latency})
        values.update({f"opt_out/{rule}": why for rule, why in m.opted_out.items()})
        values.update(m.deadline_miss_values())  # missed deadlines by cause, host delays p50/max
        values.update(m.placement_values())  # where the approach boxes are (the episode's context)
        cause = m.estop_cause
        if cause is not None:
            return "error", f"e-stop: {cause.describe()}", values
        if m.placement_error or m.placement_mismatch:
            return "warn", m.describe_placement()[:500], values
        if m.holding or any(v.response >= Response.CLAMP for v in active):
            return "warn", "; ".join(v.describe() for v in active)[:500], values
        return "ok", "supervising" if self._active else "inactive", values


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: SafetyMonitorNode(), args)


if __name__ == "__main__":
    sys.exit(main())
