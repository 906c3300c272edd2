"""The ROS 2 wire contract: every topic, service, QoS profile and labelled-array layout, once.

All topic names are relative, so a node started in a namespace (``/sawyer``) speaks
``/sawyer/joint_states`` etc.; ``/clock`` and ``/diagnostics`` are absolute by ROS convention.
Only standard message types are used.  Where a ``Float64MultiArray`` vector needs names, the
layout carries them (see :func:`labelled_array`):

* a vector of N named values has one dimension ``MultiArrayDimension(label="n1,n2,…", size=N,
  stride=N)``;
* a table of R rows × C named columns (an experience chunk) has two dimensions:
  ``dim[0] = ("rows", R, R*C)`` and ``dim[1] = ("c1,c2,…", C, C)``, row-major.

Labels never contain commas.  docs/reference/topics.md is generated from this module.
"""
from __future__ import annotations

import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

# the experience table format and the decoded task step live in the actor core; re-exported here
from morl_robot.acting.experience import (  # noqa: F401
    EXPERIENCE_COLUMNS,
    TASK_STEP_HEADER,
    ExperienceChunk,
    TaskStep,
    experience_columns,
    read_labelled,
    split_experience,
    task_step_layout,
)
from morl_robot.errors import WireError
from morl_robot.reward_machines.columns import (  # noqa: F401
    ENV_TERMINATED,
    LABEL_PREFIX,
    machine_columns,
)

# --- QoS -----------------------------------------------------------------------------------
#: Sensor streams (joint_states, wrench, tactile, task_step): every sample matters to the safety
#: monitor and to lockstep training, so reliable; a short queue bounds latency.
SENSOR_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                        reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: Commands (command, command_safe, heartbeat): reliable, newest wins beyond a short queue.
COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: Latched state (estop, policy snapshot, episode contract): the newest value reaches late joiners.
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: Experience chunks: none may be lost; a deep queue absorbs learner pauses (checkpoints).
EXPERIENCE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=256,
                            reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: Events (episode ends, safety violations): reliable, kept for a while.
EVENT_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                       reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: /clock, as Gazebo and mujoco_ros2_control publish it.
CLOCK_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                       reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
#: Views for people and their tools (scene, view/…): best effort, newest only, published only while
#: someone subscribes, so a slow viewer never holds up the control path (RViz: set the display's
#: reliability to Best Effort).
VIEW_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)


@dataclass(frozen=True)
class Topic:
    name: str
    type: str  # ROS interface name, e.g. "sensor_msgs/msg/JointState"
    qos: str  # name of the profile above
    publisher: str
    description: str


#: The topic contract (names relative to the robot namespace; rendered in docs/reference/topics.md).
TOPICS: tuple[Topic, ...] = (
    Topic("joint_states", "sensor_msgs/msg/JointState", "SENSOR_QOS", "robot_node",
          "joint position (rad), velocity (rad/s), effort (N·m); names in the robot's joint order"),
    Topic("wrench", "geometry_msgs/msg/WrenchStamped", "SENSOR_QOS", "robot_node",
          "wrist force (N) and torque (N·m), raw (not tared), frame in header.frame_id (Sawyer)"),
    Topic("tactile", "std_msgs/msg/Float64MultiArray", "SENSOR_QOS", "robot_node",
          "touch-sensor normal force (N), labels = sensor names (Shadow Hand)"),
    Topic("task_step", "std_msgs/msg/Float64MultiArray", "SENSOR_QOS", "robot_node",
          "one task step: labels 'episode,step,terminated,truncated,stamp,reward/<objective>…,<observation labels>' "
          "(a reward-machine task: the machine columns 'env_terminated,label/<proposition>…' before the observation)"),
    Topic("episode", "std_msgs/msg/String", "EVENT_QOS", "robot_node",
          "JSON episode event: {event: start|end, episode, steps, termination, returns{objective: value}}"),
    Topic("placement", "std_msgs/msg/String", "LATCHED_QOS", "robot_node (with a task)",
          "JSON, before each episode's start event: where its context put the cell's static bodies, "
          "{episode, context (name or null), body_offset{body: [dx, dy, dz]}} (m, base frame, from the scene's "
          "nominal; {}: the nominal cell), approach{box: [[lower xyz], [upper xyz]]} (m: the robot's inner layer's "
          "boxes on a body, as placed); the safety monitor moves the approach boxes of those bodies by it and "
          "checks them against the robot's"),
    Topic("command", "std_msgs/msg/Float64MultiArray", "COMMAND_QOS", "policy_server",
          "command in robot units (control mode's units), labels = action or command component names "
          "(lockstep: + 'answers_task_step', the key of the task_step answered; in a session: + 'session', "
          "the session's id, last)"),
    Topic("command_safe", "std_msgs/msg/Float64MultiArray", "COMMAND_QOS", "safety_monitor",
          "the checked command the robot node executes (same layout as command, key passed through, "
          "'session' = the monitor's session: the robot node executes only its own session's)"),
    Topic("session", "std_msgs/msg/String", "LATCHED_QOS", "every node of a session",
          "JSON announcement {session, started, node, pid, host}: a second session on the same names "
          "gives way to the first (its nodes exit naming it)"),
    Topic("heartbeat", "std_msgs/msg/Header", "COMMAND_QOS", "policy_server",
          "policy liveness at the control rate; frame_id = model version"),
    Topic("safety/estop", "std_msgs/msg/Bool", "LATCHED_QOS", "safety_monitor",
          "true while the latched e-stop is engaged"),
    Topic("safety/violations", "diagnostic_msgs/msg/DiagnosticStatus", "EVENT_QOS", "safety_monitor",
          "one violation as it begins: name = rule; values rule, key, level, value, threshold, unit, response, "
          "sensor_stamp, decided_at, command_published_at, detail (e.g. 'host scheduling delay X ms: …' when the "
          "monitor's own watchdog check ran late)"),
    Topic("experience", "std_msgs/msg/Float64MultiArray", "EXPERIENCE_QOS", "policy_server (train), vector_actor",
          "experience chunk, a table: rows = transitions, columns = EXPERIENCE_COLUMNS + fields "
          "(+ the machine columns of a reward-machine task)"),
    Topic("policy_snapshot", "std_msgs/msg/UInt8MultiArray", "LATCHED_QOS", "learner_node",
          "ONNX policy bytes; layout label 'policy_version=<n>'"),
    Topic("experience_allowance", "std_msgs/msg/Float64MultiArray", "LATCHED_QOS", "learner_node",
          "actors' back-pressure: labels 'env_steps,allowed_env_steps' (transitions received, and accepted "
          "before acting must wait for learning: the samples-per-insert limit)"),
    Topic("preference", "std_msgs/msg/Float64MultiArray", "COMMAND_QOS", "operator (policy_server subscribes)",
          "ε-conditioned policy: the preference ε_k to act under, one per objective; labels (optional) = the "
          "objective names; checked against the contract's ranges, an invalid one is logged and ignored"),
    Topic("~/external_wrench", "geometry_msgs/msg/WrenchStamped", "COMMAND_QOS",
          "safety-test probe (robot_node (sim) subscribes)",
          "sim only, a force gauge: push the body named in header.frame_id with this force (N) and torque (N·m), "
          "world frame, at its centre of mass, until the next message or a reset; zeros release it"),
    # Views (morl_robot/views/): standard types that carry their names, so RViz, Foxglove, PlotJuggler or
    # `ros2 topic echo` show a joint or an objective by name with no decoder (Float64MultiArray labels need one):
    # a scalar per objective is its own std_msgs/Float64 topic (the topic names it), a named vector is a
    # sensor_msgs/JointState (name[i] beside its value: the one standard message with names beside numbers).
    Topic("scene", "visualization_msgs/msg/MarkerArray", "VIEW_QOS", "robot_node",
          "the MuJoCo geoms of robot, tool, fixture and object in frame 'world' (m), at scene_rate Hz (default 5; "
          "0 = off), only while subscribed: ns = body name, id = 3 × geom id (+1, +2: a capsule's end spheres); "
          "box/sphere/ellipsoid/cylinder/capsule as CUBE/SPHERE/CYLINDER markers, meshes as TRIANGLE_LIST (decimated); "
          "sim: the simulated state; hardware: the measured joints, objects at their nominal pose"),
    Topic("view/command", "sensor_msgs/msg/JointState", "VIEW_QOS", "robot_node",
          "the command received (command_safe), named: name = its labels (action components or actuators), the "
          "values in the field of the control mode (position: position; velocity, cartesian_velocity: velocity; "
          "effort: effort); only while subscribed, at most view_rate Hz (default 50)"),
    Topic("view/observation", "sensor_msgs/msg/JointState", "VIEW_QOS", "robot_node",
          "task_step's observation, named: name = observation labels, position = values (task units; stamped by the "
          "node's clock, as joint_states); only while subscribed, at most view_rate Hz (default 50; an episode's last step "
          "always: task_step has every step)"),
    Topic("view/reward/<objective>", "std_msgs/msg/Float64", "VIEW_QOS", "robot_node",
          "task_step's reward of one objective (one topic per objective name); as view/observation"),
    Topic("view/return/<objective>", "std_msgs/msg/Float64", "VIEW_QOS", "robot_node",
          "the episode's undiscounted return so far of one objective; as view/observation"),
    Topic("/clock", "rosgraph_msgs/msg/Clock", "CLOCK_QOS", "robot_node (sim)", "simulation time"),
    Topic("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", "EVENT_QOS", "every node",
          "status, rates, latencies, counters (key/value)"),
)

#: Services (relative; '~/' = the node's private namespace).
SERVICES: tuple[tuple[str, str, str], ...] = (
    ("~/reset_world", "std_srvs/srv/Trigger", "robot_node (sim): new episode with the node's seed (the next ones seed + 1, …); the message says its number"),
    ("~/set_pause", "std_srvs/srv/SetBool", "robot_node (sim): pause (true) / resume (false) the simulation"),
    ("~/step_simulation", "std_srvs/srv/Trigger", "robot_node (sim): advance one control period while paused"),
    ("~/reload", "std_srvs/srv/Trigger",
     "policy_server: reload the model from its policy file (validated; on rejection the running model keeps serving)"),
    ("safety/reset", "std_srvs/srv/Trigger", "safety_monitor: release the e-stop (refused while violating)"),
    ("safety/trigger", "std_srvs/srv/Trigger", "safety_monitor: engage the e-stop"),
)

#: Lockstep: a command that answers a task_step carries that step's key as its last element, so the
#: robot node executes exactly one command per step (a re-sent step answered twice, or an answer
#: that comes late, is recognised as stale instead of being executed as the next step's command).
STEP_KEY_LABEL = "answers_task_step"


#: A session's commands carry its id as their last element (after the step key), so a monitor
#: accepts only its own policy server's commands and a robot node executes only its own monitor's
#: ``command_safe`` (:func:`split_command`).
SESSION_LABEL = "session"


def session_token(session: str) -> float:
    """The wire value of a session id (12 hex digits: 48 bits, exact as a float); 0.0 for ""."""
    return float(int(session, 16)) if session else 0.0


def session_name(token: float) -> str:
    """The session id a wire value stands for."""
    return f"{int(token):012x}"


@dataclass(frozen=True)
class Command:
    """A command as it travels: values and labels of the command itself, the lockstep key of
    the task step it answers (or None) and the session token it carries (or None)."""

    values: np.ndarray
    labels: tuple[str, ...]
    key: float | None = None
    session: float | None = None


def split_command(values: np.ndarray, labels: Sequence[str]) -> Command:
    """A ``command`` / ``command_safe`` vector split into :class:`Command` (the trailing
    ``session`` element, then the ``answers_task_step`` element, removed if present)."""
    labels = tuple(labels)
    values = np.asarray(values)
    session = None
    if labels and labels[-1] == SESSION_LABEL:
        values, labels, session = values[:-1], labels[:-1], float(values[-1])
    values, labels, key = split_step_key(values, labels)
    return Command(values, labels, key, session)


def foreign_sender(cmd: Command, own: float | None) -> str:
    """Who sent ``cmd`` if it is not of the session ``own`` (its token; None: a node outside any
    session accepts every command): "session <id>" or "no session id"; "" if it is ours."""
    if own is None or cmd.session == own:
        return ""
    return "no session id" if cmd.session is None else f"session {session_name(cmd.session)}"


def command_labels(labels: Sequence[str], keyed: bool, session: float | None) -> tuple[str, ...]:
    """The labels of a command with the given trailer (see :func:`split_command`)."""
    return (tuple(labels) + ((STEP_KEY_LABEL,) if keyed else ())
            + ((SESSION_LABEL,) if session is not None else ()))


def command_message(values: np.ndarray | Sequence[float], labels: Sequence[str], key: float | None = None,
                    session: float | None = None) -> Float64MultiArray:
    """The ``command`` / ``command_safe`` message of ``values`` with its trailer."""
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    trailer = ([key] if key is not None else []) + ([session] if session is not None else [])
    return labelled_array(np.concatenate([data, trailer]) if trailer else data,
                          command_labels(labels, key is not None, session))


def step_key(episode: int, step: int) -> float:
    """The (episode, step) of a task_step as one exactly representable float."""
    return float(int(episode) * 2**24 + int(step))


def step_of_key(key: float) -> int:
    """The step number inside an episode that :func:`step_key` encoded."""
    return int(key) % 2**24


def episode_of_key(key: float) -> int:
    """The episode number that :func:`step_key` encoded."""
    return int(key) // 2**24


@dataclass(frozen=True)
class Placement:
    """A ``placement`` announcement (:func:`read_placement`); ``body_offset`` as sent, checked by
    :meth:`morl_robot.safety.monitor.SafetyMonitor.place`."""

    episode: int | None
    context: str
    body_offset: Any
    approach: Any = None  # the robot node's inner layer's boxes on a body, as placed (None: not sent)


def placement_json(episode: int, context: str | None, body_offset: Any, approach: Any = None) -> str:
    """The ``placement`` message's text (body offsets in m; ``approach``: the inner layer's placed
    boxes {box: [[lower xyz], [upper xyz]]} m, or None)."""
    import json

    return json.dumps({"episode": int(episode), "context": context,
                       "body_offset": {b: [float(x) for x in v] for b, v in (body_offset or {}).items()},
                       **({"approach": approach} if approach is not None else {})})


def read_placement(text: str) -> Placement:
    """A ``placement`` message's text decoded; :class:`WireError` naming what is wrong."""
    import json

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise WireError(f"placement is not JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(data, dict) or "body_offset" not in data:
        raise WireError(f"placement must be a JSON object with 'body_offset', got {text[:80]!r}")
    episode = data.get("episode")
    if episode is not None and (not isinstance(episode, int) or isinstance(episode, bool)):
        raise WireError(f"placement 'episode' must be an integer, got {episode!r}")
    context = data.get("context")
    return Placement(episode, context if isinstance(context, str) else "", data["body_offset"], data.get("approach"))


def split_step_key(values: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...], float | None]:
    """(values, labels, key) of a command: the key element removed if present, else None."""
    labels = tuple(labels)
    if labels and labels[-1] == STEP_KEY_LABEL:
        return np.asarray(values[:-1]), labels[:-1], float(values[-1])
    return np.asarray(values), labels, None
ALLOWANCE_LABELS = ("env_steps", "allowed_env_steps")
#: ``experience_allowance`` labels after :data:`ALLOWANCE_LABELS`: ``received.<actor id>``, the
#: rows the learner has received from each actor (its acknowledgement, for back-pressure).
ALLOWANCE_ACK_PREFIX = "received."


def allowance_message(received: int, allowed: int, acknowledged: dict[int, int]) -> Any:
    """The learner's ``experience_allowance``: (env steps received, allowed) and per actor id the
    rows received from it."""
    ids = sorted(acknowledged)
    return labelled_array([received, allowed, *(acknowledged[i] for i in ids)],
                          ALLOWANCE_LABELS + tuple(f"{ALLOWANCE_ACK_PREFIX}{i}" for i in ids))


def read_allowance(msg: Any) -> tuple[float, float, dict[int, int]] | None:
    """(received, allowed, rows received per actor id) of an ``experience_allowance``, or None if
    it is not one."""
    values, labels = read_labelled(msg)
    if tuple(labels[:2]) != ALLOWANCE_LABELS:
        return None
    acks: dict[int, int] = {}
    for value, label in zip(values[2:], labels[2:]):
        if not label.startswith(ALLOWANCE_ACK_PREFIX) or not label[len(ALLOWANCE_ACK_PREFIX):].isdigit():
            return None
        acks[int(label[len(ALLOWANCE_ACK_PREFIX):])] = int(value)
    return float(values[0]), float(values[1]), acks


# --- labelled arrays -----------------------------------------------------------------------
def _check_labels(labels: Sequence[str]) -> str:
    for lab in labels:
        if "," in lab:
            raise WireError(f"label {lab!r} contains a comma")
    return ",".join(labels)


def _doubles(values: np.ndarray) -> array.array[float]:
    """``values`` (any shape, float64) flattened row-major as the ``array('d')`` a message's
    float64 sequence holds: given one, the generated setter skips its per-element checks (~6 ns
    instead of ~30 ns a value; a 64-row experience chunk is ~14 000 values)."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def labelled_array(values: np.ndarray | Sequence[float], labels: Sequence[str]) -> Float64MultiArray:
    """A 1-D ``Float64MultiArray`` whose single dimension names every element."""
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    if data.size != len(labels):
        raise WireError(f"{data.size} values but {len(labels)} labels")
    msg = Float64MultiArray()
    msg.layout = MultiArrayLayout(dim=[MultiArrayDimension(label=_check_labels(labels), size=data.size, stride=data.size)],
                                  data_offset=0)
    msg.data = _doubles(data)
    return msg


class LabelledVector:
    """A reusable 1-D labelled layout (the labels are checked and joined once): call it with
    values (N,) to get the message.  For streams published every control step."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = tuple(labels)
        self._joined = _check_labels(self.labels)

    def __call__(self, values: np.ndarray | Sequence[float]) -> Float64MultiArray:
        data = np.asarray(values, dtype=np.float64).reshape(-1)
        n = len(self.labels)
        if data.size != n:
            raise WireError(f"{data.size} values but {n} labels")
        msg = Float64MultiArray()
        msg.layout.dim = [MultiArrayDimension(label=self._joined, size=n, stride=n)]
        msg.data = _doubles(data)
        return msg


def labelled_table(rows: np.ndarray, columns: Sequence[str]) -> Float64MultiArray:
    """A 2-D ``Float64MultiArray`` (R, C) with named columns (row-major)."""
    table = np.asarray(rows, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != len(columns):
        raise WireError(f"table of shape {table.shape} does not match {len(columns)} columns")
    r, c = table.shape
    msg = Float64MultiArray()
    msg.layout = MultiArrayLayout(dim=[MultiArrayDimension(label="rows", size=r, stride=r * c),
                                       MultiArrayDimension(label=_check_labels(columns), size=c, stride=c)],
                                  data_offset=0)
    msg.data = _doubles(table)
    return msg


def read_table(msg: Float64MultiArray) -> tuple[np.ndarray, tuple[str, ...]]:
    """(table (R, C), column labels) of a labelled table; raises :class:`WireError` if malformed."""
    dims = msg.layout.dim
    if len(dims) != 2:
        raise WireError(f"expected a 2-D labelled table, got {len(dims)} dimensions")
    r, c = int(dims[0].size), int(dims[1].size)
    columns = tuple(dims[1].label.split(","))
    data = np.asarray(msg.data, dtype=np.float64)
    if len(columns) != c or data.size != r * c:
        raise WireError(f"layout says {r}x{c} with {len(columns)} column labels, data has {data.size} values")
    return data.reshape(r, c), columns


def task_step_labels(objectives: Sequence[str], observation_labels: Sequence[str],
                     machine: Sequence[str] = ()) -> tuple[str, ...]:
    """Labels of the ``task_step`` vector: header, ``reward/<objective>``…, the machine columns of
    a reward-machine task (``machine``: :func:`machine_columns`), observation labels."""
    return TASK_STEP_HEADER + tuple(f"reward/{o}" for o in objectives) + tuple(machine) + tuple(observation_labels)


def split_task_step(values: np.ndarray, labels: Sequence[str]) -> TaskStep:
    """Decode a ``task_step`` vector (see :func:`task_step_labels`)."""
    h = len(TASK_STEP_HEADER)
    k, m = task_step_layout(labels)
    o = h + k + m
    return TaskStep(
        episode=int(values[0]), step=int(values[1]), terminated=bool(values[2]), truncated=bool(values[3]),
        stamp=float(values[4]), reward=values[h:h + k].copy(), observation=values[o:].copy(),
        objectives=tuple(lab[len("reward/"):] for lab in labels[h:h + k]),
        observation_labels=tuple(labels[o:]), machine=values[h + k:o].copy(), machine_labels=tuple(labels[h + k:o]),
    )


class TaskStepDecoder:
    """:func:`split_task_step` of ``task_step`` messages, the label string split once per layout
    (a stream at the control rate repeats one layout).  Raises :class:`WireError` (or
    ``IndexError``/``ValueError``) on a malformed message."""

    def __init__(self) -> None:
        # the newest layout: (label string, size, K, objectives, observation labels, machine labels)
        self._layout: tuple[str, int, int, tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None = None

    def __call__(self, msg: Float64MultiArray) -> TaskStep:
        dims, layout = msg.layout.dim, self._layout
        if layout is not None and len(dims) == 1 and dims[0].label == layout[0] and len(msg.data) == layout[1]:
            values = np.asarray(msg.data, dtype=np.float64)
            h, k = len(TASK_STEP_HEADER), layout[2]
            o = h + k + len(layout[5])
            return TaskStep(episode=int(values[0]), step=int(values[1]), terminated=bool(values[2]),
                            truncated=bool(values[3]), stamp=float(values[4]), reward=values[h:h + k],
                            observation=values[o:], objectives=layout[3], observation_labels=layout[4],
                            machine=values[h + k:o], machine_labels=layout[5])
        ts = split_task_step(*read_labelled(msg))
        size = len(TASK_STEP_HEADER) + len(ts.objectives) + len(ts.machine_labels) + len(ts.observation_labels)
        self._layout = (dims[0].label, size, len(ts.objectives), ts.objectives, ts.observation_labels,
                        ts.machine_labels)
        return ts


def qos(name: str) -> QoSProfile:
    """The QoS profile called ``name`` (as listed in :data:`TOPICS`)."""
    profiles: dict[str, Any] = {
        "SENSOR_QOS": SENSOR_QOS, "COMMAND_QOS": COMMAND_QOS, "LATCHED_QOS": LATCHED_QOS,
        "EXPERIENCE_QOS": EXPERIENCE_QOS, "EVENT_QOS": EVENT_QOS, "CLOCK_QOS": CLOCK_QOS, "VIEW_QOS": VIEW_QOS,
    }
    return profiles[name]
