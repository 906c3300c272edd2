"""The safety rules as small pure pieces: each evaluates one reading and returns violations, and
the command-shaping maths (clamp, rate limit, slow down, workspace and joint-limit clamps).

What the rules model (the promises of the most trusted arms):

* two force/torque levels — *contact* (warn / slow) and *collision* (stop) — with separate
  acceleration-phase values (Franka, libfranka ``Robot::setCollisionBehavior``);
* soft and hard joint position limits, velocity and effort limits as fractions of the robot's own
  limits, and rate-of-change limits on commands (ROS ``joint_limits``: ``max_velocity``,
  ``max_acceleration``, soft limits with a margin);
* per-sensor tactile force maxima (Shadow Hand) and an end-effector workspace box (Sawyer);
* non-finite values and stale streams are faults (ROS 2 ``sw_watchdog``: a missed deadline is a
  fault, not a pause).

A rule *trips when a value reaches its threshold*: ``|x| ≥ threshold`` (or, for ranges,
``x ≤ lower`` or ``x ≥ upper``); below it, it never trips.  Thresholds are SI (N, N·m, m, rad,
s); ``inf`` disables one component.  Shapes: ``(n,)`` per rule component (axes, joints, sensors).
"""
from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import mujoco
import numpy as np


class Response(enum.IntEnum):
    """What a violation makes the monitor do, in rising order."""

    NONE = 0
    WARN = 1  # report only
    CLAMP = 2  # limit the command (to the soft limit, slowed down, or away from a limit)
    HOLD = 3  # replace commands by the hold command while the violation lasts
    ESTOP = 4  # latched stop: hold until an explicit reset, refused while the cause persists

    @classmethod
    def of(cls, name: str) -> Response:
        return cls[name.upper()]

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Violation:
    """One rule reaching one threshold: everything a report or an event needs.

    ``value`` and ``threshold`` are SI in ``unit``; ``sensor_stamp`` is the stamp of the reading
    that tripped (s; for a watchdog, the last message's stamp; NaN when there is none);
    ``decided_at`` is the monitor clock when the response was decided, so ``decided_at −
    sensor_stamp`` is the detection latency when both come from the same clock."""

    rule: str  # e.g. "wrench.force_norm", "joints.velocity", "stale.wrench", "command.limit"
    key: str  # component: "norm", "fz", a joint / actuator / sensor / stream / command label
    level: str  # contact | collision | soft | hard | fault | deadline | manual (+ "/accelerating")
    value: float
    threshold: float
    unit: str
    response: Response
    sensor_stamp: float
    decided_at: float
    detail: str = ""  # free text where a number does not say it (why command labels were refused)

    @property
    def ident(self) -> tuple[str, str, str]:
        """Identity for edge detection: the same rule, component and level."""
        return (self.rule, self.key, self.level)

    def describe(self) -> str:
        if self.detail:
            what = self.detail
        elif self.level == "fault":
            what = f"non-finite value ({self.value})"
        elif self.rule == "startup":
            return "e-stop engaged at start-up (reset to release)"
        elif self.level == "manual":
            what = "triggered by request"
        elif self.level == "deadline":
            what = f"no message for {self.value:.3g} s (deadline {self.threshold:.3g} s)"
        else:
            what = f"{self.value:.4g} {self.unit} reached the {self.level} limit {self.threshold:.4g} {self.unit}"
        return f"{self.rule} [{self.key}]: {what} -> {self.response.label}"


@dataclass(frozen=True)
class RuleLimit:
    """One configured threshold, for reports (``morl-robot safety-test``) and diagnostics."""

    rule: str
    key: str
    level: str
    threshold: float
    unit: str
    response: Response


# --- threshold rules --------------------------------------------------------------------------
@dataclass(frozen=True)
class Level:
    """One level of a magnitude rule: thresholds (n,) SI (``inf`` = off) and its response."""

    name: str
    thresholds: np.ndarray
    response: Response


class MagnitudeRule:
    """``|x_i| ≥ threshold_i`` at any level → one violation per component and level."""

    def __init__(self, rule: str, keys: Sequence[str], unit: str, levels: Sequence[Level]) -> None:
        self.rule, self.keys, self.unit = rule, tuple(keys), unit
        self.levels = tuple(levels)
        for lv in self.levels:
            if lv.thresholds.shape != (len(self.keys),):
                raise ValueError(f"{rule}: {lv.name} thresholds have shape {lv.thresholds.shape}, "
                                 f"expected ({len(self.keys)},)")
        # (n,) the lowest threshold per component: one comparison rejects a reading below all levels
        self._lowest = np.min([lv.thresholds for lv in self.levels], axis=0) if self.levels else None

    def evaluate(self, values: np.ndarray, stamp: float, now: float, suffix: str = "") -> list[Violation]:
        """``values`` (n,) → violations (empty when every |x_i| is below every threshold)."""
        mags = np.abs(values)
        if self._lowest is None or not (mags >= self._lowest).any():
            return []
        out: list[Violation] = []
        for lv in self.levels:
            for i in np.flatnonzero(mags >= lv.thresholds):
                out.append(Violation(self.rule, self.keys[i], lv.name + suffix, float(values[i]),
                                     float(lv.thresholds[i]), self.unit, lv.response, stamp, now))
        return out

    def limits(self) -> list[RuleLimit]:
        return [RuleLimit(self.rule, k, lv.name, float(t), self.unit, lv.response)
                for lv in self.levels for k, t in zip(self.keys, lv.thresholds) if np.isfinite(t)]


@dataclass(frozen=True)
class RangeLevel:
    """One level of a range rule: the value trips at ``x ≤ lower`` or ``x ≥ upper`` (n,)."""

    name: str
    lower: np.ndarray
    upper: np.ndarray
    response: Response


class RangeRule:
    """A two-sided range per component (joint positions, a workspace box)."""

    def __init__(self, rule: str, keys: Sequence[str], unit: str, levels: Sequence[RangeLevel]) -> None:
        self.rule, self.keys, self.unit, self.levels = rule, tuple(keys), unit, tuple(levels)
        # (n,), (n,) the narrowest range over the levels: a reading strictly inside it trips none
        n = len(self.keys)
        self._inner_lower = np.max([lv.lower for lv in self.levels], axis=0) if self.levels else np.full(n, -np.inf)
        self._inner_upper = np.min([lv.upper for lv in self.levels], axis=0) if self.levels else np.full(n, np.inf)

    def evaluate(self, values: np.ndarray, stamp: float, now: float) -> list[Violation]:
        """``values`` (n,) → violations (empty, after one comparison, inside every level's range)."""
        if not ((values <= self._inner_lower) | (values >= self._inner_upper)).any():
            return []
        out: list[Violation] = []
        for lv in self.levels:
            low, high = values <= lv.lower, values >= lv.upper
            for i in np.flatnonzero(low | high):
                bound = lv.lower[i] if low[i] else lv.upper[i]
                out.append(Violation(self.rule, self.keys[i], lv.name, float(values[i]), float(bound), self.unit,
                                     lv.response, stamp, now))
        return out

    def limits(self) -> list[RuleLimit]:
        rows = []
        for lv in self.levels:
            for k, lo, hi in zip(self.keys, lv.lower, lv.upper):
                rows.append(RuleLimit(self.rule, f"{k}<=", lv.name, float(lo), self.unit, lv.response))
                rows.append(RuleLimit(self.rule, f"{k}>=", lv.name, float(hi), self.unit, lv.response))
        return rows


def two_levels(low: float | Sequence[float] | None, high: float | Sequence[float] | None, n: int,
               low_name: str, high_name: str, low_response: Response, high_response: Response,
               scale: float | np.ndarray = 1.0) -> list[Level]:
    """The (up to) two levels of a threshold pair, each broadcast to (n,) and multiplied by
    ``scale`` (a unit factor, or per-component robot limits for fractions)."""
    levels = []
    for value, name, response in ((low, low_name, low_response), (high, high_name, high_response)):
        if value is None:
            continue
        t = np.broadcast_to(np.asarray(value, np.float64), (n,)) * scale
        levels.append(Level(name, np.where(np.isnan(t), np.inf, t), response))
    return levels


def non_finite(rule: str, labels: Sequence[str], values: np.ndarray, stamp: float, now: float) -> Violation | None:
    """A fault violation naming the first non-finite component, or None if all are finite."""
    finite = np.isfinite(values)
    if finite.all():
        return None
    i = int(np.flatnonzero(~finite)[0])
    key = labels[i] if i < len(labels) else str(i)
    return Violation(rule, key, "fault", float(values[i]), math.nan, "", Response.ESTOP, stamp, now)


def staleness(stream: str, age: float, deadline: float, response: Response, stamp: float,
              now: float) -> Violation | None:
    """A deadline violation when ``age ≥ deadline`` (s)."""
    if age < deadline:
        return None
    return Violation(f"stale.{stream}", stream, "deadline", float(age), float(deadline), "s", response, stamp, now)


class WrenchRule:
    """Force norm, per-axis force, torque norm and per-axis torque levels; the accelerating-phase
    set replaces a family while the robot accelerates (Franka's nominal vs. acceleration)."""

    FAMILIES: ClassVar[tuple[str, ...]] = ("force_norm", "force_axis", "torque_norm", "torque_axis")
    KEYS: ClassVar[dict[str, tuple[str, ...]]] = {"force_norm": ("norm",), "force_axis": ("fx", "fy", "fz"),
            "torque_norm": ("norm",), "torque_axis": ("tx", "ty", "tz")}

    def __init__(self, nominal: dict[str, MagnitudeRule], accelerating: dict[str, MagnitudeRule]) -> None:
        self.nominal, self.accelerating = nominal, accelerating
        # the lowest threshold of every family in force (inf: none) as (‖f‖, ‖τ‖, (6,) per axis),
        # nominal and accelerating: one comparison each rejects a reading below every level
        self._lowest = {phase: self._lowest_thresholds(phase) for phase in (False, True)}

    def _lowest_thresholds(self, accelerating: bool) -> tuple[float, float, np.ndarray]:
        lowest = {}
        for family, keys in self.KEYS.items():
            rule = self.accelerating.get(family) if accelerating else None
            rule = rule if rule is not None else self.nominal.get(family)
            low = rule._lowest if rule is not None else None
            lowest[family] = low if low is not None else np.full(len(keys), np.inf)
        return (float(lowest["force_norm"][0]), float(lowest["torque_norm"][0]),
                np.concatenate([lowest["force_axis"], lowest["torque_axis"]]))

    @staticmethod
    def derived(wrench: np.ndarray) -> dict[str, np.ndarray]:
        """wrench (6,) [fx fy fz tx ty tz] → the values each family checks."""
        f, t = wrench[:3], wrench[3:]
        return {"force_norm": np.array([math.sqrt(float(f @ f))]), "force_axis": f,
                "torque_norm": np.array([math.sqrt(float(t @ t))]), "torque_axis": t}

    def evaluate(self, wrench: np.ndarray, accelerating: bool, stamp: float, now: float) -> list[Violation]:
        """``wrench`` (6,) → violations of the families in force (empty, after one comparison per
        norm and one on the axes, below every level)."""
        force_norm, torque_norm, axes = self._lowest[bool(accelerating)]
        f, t = wrench[:3], wrench[3:]
        if not (math.sqrt(float(f @ f)) >= force_norm or math.sqrt(float(t @ t)) >= torque_norm
                or (np.abs(wrench) >= axes).any()):
            return []
        values = self.derived(wrench)
        out: list[Violation] = []
        for family in self.FAMILIES:
            rule = self.accelerating.get(family) if accelerating else None
            if rule is not None:
                out += rule.evaluate(values[family], stamp, now, suffix="/accelerating")
            elif family in self.nominal:
                out += self.nominal[family].evaluate(values[family], stamp, now)
        return out

    def limits(self) -> list[RuleLimit]:
        rows = [r for rule in self.nominal.values() for r in rule.limits()]
        for rule in self.accelerating.values():
            rows += [RuleLimit(r.rule, r.key, r.level + "/accelerating", r.threshold, r.unit, r.response)
                     for r in rule.limits()]
        return rows


class SiteKinematics:
    """Position (3,) of one MJCF site in the robot base frame for joint positions q (J,):
    MuJoCo forward kinematics (``mj_kinematics``) on a private ``MjData``."""

    def __init__(self, model: mujoco.MjModel, site: str, joint_names: Sequence[str], base_body: str | None) -> None:
        self.model, self.data = model, mujoco.MjData(model)
        self.site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        if self.site < 0:
            raise KeyError(site)
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joint_names]
        self.qadr = model.jnt_qposadr[np.array(jids)].copy()
        self.base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, base_body) if base_body else -1
        # views into the private MjData (every attribute read of MjData builds a new array object)
        d = self.data
        self._qpos, self._site_pos = d.qpos, d.site_xpos[self.site]
        self._base_rot = d.xmat[self.base].reshape(3, 3) if self.base > 0 else None  # (3, 3)
        self._base_pos = d.xpos[self.base] if self.base > 0 else None  # (3,)

    def position(self, q: np.ndarray) -> np.ndarray:
        self._qpos[self.qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        p = self._site_pos.copy()
        if self._base_rot is not None:  # express in the base body's frame
            p = self._base_rot.T @ (p - self._base_pos)
        return p


# --- command shaping --------------------------------------------------------------------------
def clamp(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values clipped into [lower, upper], mask (n,) of the components that were changed)."""
    out = np.minimum(np.maximum(values, lower), upper)
    return out, out != values


def rate_limit(values: np.ndarray, previous: np.ndarray, max_step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Limit the change from ``previous`` to ``max_step`` per component (a slew-rate limiter);
    returns (limited values, mask of the limited components)."""
    step = values - previous
    limited = previous + np.minimum(np.maximum(step, -max_step), max_step)
    return limited, np.abs(step) > max_step


def slow_down(values: np.ndarray, previous: np.ndarray | None, scale: float, absolute: bool) -> np.ndarray:
    """The ``clamp`` response of a contact-level rule.  Velocity-like commands (``absolute``:
    twist, joint velocity, effort) are scaled by ``scale``; position targets move only ``scale``
    of the way from the previous target (unchanged when there is none)."""
    if absolute:
        return values * scale
    if previous is None:
        return values
    return previous + scale * (values - previous)


def away_from_limits(velocity: np.ndarray, position: np.ndarray, lower: np.ndarray,
                     upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zero the velocity components that move a coordinate further beyond its soft bound:
    ``v_i > 0`` where ``p_i ≥ upper_i``, ``v_i < 0`` where ``p_i ≤ lower_i`` (n,).  Used for the
    workspace box (Cartesian linear velocity) and joint soft limits (joint velocity commands)."""
    outward = ((position >= upper) & (velocity > 0)) | ((position <= lower) & (velocity < 0))
    return np.where(outward, 0.0, velocity), outward



def tool_box_separation(tip: np.ndarray, lower: np.ndarray, upper: np.ndarray, radius: float,
                        length: float) -> tuple[np.ndarray, np.ndarray]:
    """Signed distance (B,) m and unit direction of separation (B, 3) from a vertical cylindrical tool
    to each axis-aligned box ``lower``/``upper`` (B, 3): the tool's lower face is centred at ``tip``
    (3,), it has radius ``radius`` and extends ``length`` upward (a peg held straight down).  The
    horizontal gap is the disk's distance to the box's footprint, the vertical gap that of the z
    ranges; where both are open the distance is their Euclidean combination, where one is open it is
    that one (its axis the direction), and where the tool overlaps the box it is the shallower
    (less negative) of the two, with that one's direction: so distance and direction change
    continuously as the tool touches a surface."""
    centre = np.minimum(np.maximum(tip[:2], lower[:, :2]), upper[:, :2]) - tip[:2]  # (B, 2) to the footprint
    to_rect = np.sqrt((centre * centre).sum(axis=1))  # (B,)
    h_gap = to_rect - radius  # (B,) ≤ 0: the footprints overlap
    below = lower[:, 2] - (tip[2] + length)  # box above the tool's top
    above = tip[2] - upper[:, 2]  # box below the tool's face
    v_gap = np.maximum(below, above)  # (B,) ≤ 0: the z ranges overlap
    v_dir = np.where(above >= below, -1.0, 1.0)  # the box is below (−z) or above (+z)
    h_dir = np.where(to_rect[:, None] > 1e-12, centre / np.maximum(to_rect, 1e-12)[:, None], 0.0)  # (B, 2)
    both = (h_gap > 0) & (v_gap > 0)
    hp, vp = np.maximum(h_gap, 0.0), np.maximum(v_gap, 0.0)
    # one axis separates (or, overlapping, the shallower penetration): vertical unless the horizontal
    # gap is the larger one and has a direction
    vertical = ~both & ((v_gap >= h_gap) | (to_rect <= 1e-12))
    dist = np.where(both, np.sqrt(hp * hp + vp * vp), np.where(vertical, v_gap, h_gap))
    direction = np.zeros((len(lower), 3))
    direction[:, :2] = np.where(both[:, None], h_dir * hp[:, None], np.where(vertical[:, None], 0.0, h_dir))
    direction[:, 2] = np.where(both, v_dir * vp, np.where(vertical, v_dir, 0.0))
    norm = np.sqrt((direction * direction).sum(axis=1))
    direction = direction / np.maximum(norm, 1e-12)[:, None]
    return dist, direction


def project_halfspaces(v: np.ndarray, normals: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The point (3,) nearest ``v`` (3,) with ``normals[b] · x ≤ bounds[b]`` for every b (normals (B, 3),
    bounds (B,) > 0, so 0 is feasible): the Euclidean projection onto a polyhedron, solved exactly by
    its active sets (in 3-D at most three constraints are active at the projection: each subset of up
    to three, projected onto where they hold with equality, and the nearest feasible candidate is the
    projection, since the projection itself is one of the candidates).  B is a handful of obstacle
    boxes: at most 1 + B + B(B−1)/2 + B(B−1)(B−2)/6 small solves."""
    x0 = np.asarray(v, dtype=np.float64)
    normals = np.asarray(normals, dtype=np.float64)
    bounds = np.asarray(bounds, dtype=np.float64)
    if np.all(normals @ x0 <= bounds):
        return x0.copy()
    from itertools import combinations

    best, best_d = np.zeros(3), float(x0 @ x0)  # 0 is feasible
    violated = np.flatnonzero(normals @ x0 > bounds)
    for k in (1, 2, 3):
        for subset in combinations(range(len(normals)), k):
            if not set(subset) & set(violated.tolist()):
                continue  # an active set holds at least one constraint v breaks
            n_s = normals[list(subset)]  # (k, 3)
            gram = n_s @ n_s.T
            if abs(np.linalg.det(gram)) < 1e-12:
                continue
            lam = np.linalg.solve(gram, n_s @ x0 - bounds[list(subset)])  # (k,) multipliers
            x = x0 - n_s.T @ lam
            if np.all(normals @ x <= bounds + 1e-9):
                d = float((x - x0) @ (x - x0))
                if d < best_d:
                    best, best_d = x, d
    return best


def approach_limit(velocity: np.ndarray, tip: np.ndarray, lower: np.ndarray, upper: np.ndarray, radius: float,
                   length: float, margin: float, contact_speed: float, braking_time: float,
                   sliding_gap: float = 0.0, sliding_speed: float = math.inf, age: float = 0.0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Speed and separation: the linear velocity nearest ``velocity`` (3,) m/s whose speed toward
    each obstacle box ``lower``/``upper`` (B, 3) is at most max(contact_speed, (d − margin) /
    braking_time), d the vertical cylindrical tool's signed distance to the box
    (:func:`tool_box_separation`; config :class:`~morl_robot.safety.config.Approach`): the exact
    projection onto those half-spaces (:func:`project_halfspaces`), so motion along a surface
    survives a push into it (a peg pressed on a rim can still slide toward the hole).  Near a box the
    whole speed is limited too, to sliding_speed + max(d − sliding_gap, 0) / braking_time (a peg in
    its hole is 1.5 mm from the walls, and a tool tilted by a degree turns motion along a wall into
    an impact on its rim); that cap scales the velocity.  Every bound changes continuously with the
    tool's position, so readings that differ in the last bit do not switch a limit on or off.

    ``age`` (s): how old the reading ``tip`` is (a driver link's latency: :attr:`RobotState.age`).  The tool
    keeps moving for that long before a limit decided on the reading can act, so it adds to the
    stopping time as the reaction time does in ISO/TS 15066's protective separation distance: speeds
    bounded by (d − margin) / (braking_time + age) still stop within d − margin of where the reading put it.

    Returns (limited velocity (3,), the allowed speed of each box that limited it (B,), inf
    elsewhere)."""
    v = np.array(velocity, dtype=np.float64)
    dists, directions = tool_box_separation(np.asarray(tip, np.float64), lower, upper, radius, length)
    stopping = braking_time + max(float(age), 0.0)  # s
    allowed = np.maximum(contact_speed, (dists - margin) / stopping)  # (B,)
    over = directions @ v > allowed  # (B,) boxes approached too fast
    out = project_halfspaces(v, directions, allowed) if over.any() else v
    report = np.where(over, allowed, np.inf)
    if math.isfinite(sliding_speed):
        caps = max(contact_speed, sliding_speed) + np.maximum(dists - sliding_gap, 0.0) / stopping  # (B,)
        b = int(np.argmin(caps))
        speed = float(np.sqrt(out @ out))
        if speed > caps[b]:
            out = out * (caps[b] / speed)
            report[b] = min(report[b], caps[b])
    return out, report
