"""policy_server end to end: its own process on a private DDS domain, driven by task_step messages
from the probe (and, in one test, by a real robot_node)."""
from __future__ import annotations

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from policy_models import (
    SAWYER,
    SHADOW,
    model_bytes,
    random_observations,
    task_contract,
)
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from std_msgs.msg import (
    Float64MultiArray,
    Header,
    MultiArrayDimension,
    MultiArrayLayout,
    UInt8MultiArray,
)
from std_srvs.srv import Trigger

from morl_robot.nodes import wire
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.session.processes import NodeSpec
from morl_robot.tasks.base import scale_action

pytestmark = pytest.mark.ros
NS = "/arm"
CONTRACT = task_contract(SAWYER)
LABELS = wire.task_step_labels(CONTRACT.objective_names, CONTRACT.observation_labels)


class Harness:
    """The probe side of a policy_server test: task_step publisher, command/heartbeat/diagnostics recorders."""

    def __init__(self, session, **params) -> None:
        self.s = session
        self.proc = session.group.start(NodeSpec("policy_server", "policy_server", NS, params))
        probe = session.probe
        self.commands = probe.subscribe(f"{NS}/command", Float64MultiArray, wire.COMMAND_QOS)
        self.heartbeats = probe.subscribe(f"{NS}/heartbeat", Header, wire.COMMAND_QOS)
        self.experience = probe.subscribe(f"{NS}/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
        self.diags = probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
        self.steps = probe.publisher(f"{NS}/task_step", Float64MultiArray, wire.SENSOR_QOS)
        self.snapshots = probe.publisher(f"{NS}/policy_snapshot", UInt8MultiArray, wire.LATCHED_QOS)
        if params.get("autostart", True):
            probe.wait_for(lambda: self.steps.get_subscription_count() >= 1 or not self.proc.alive, 30,
                           "policy_server to subscribe to task_step")
        assert self.proc.alive, session.logs()

    def publish(self, episode: int, step: int, obs: np.ndarray, reward=(0.0, 0.0), terminated=False,
                truncated=False) -> None:
        values = np.concatenate([[episode, step, float(terminated), float(truncated), 0.05 * step], reward, obs])
        self.steps.publish(wire.labelled_array(values, LABELS))

    def step(self, episode: int, step: int, obs: np.ndarray, **kw) -> np.ndarray:
        """Publish one task_step and wait for its command (lockstep)."""
        n = len(self.commands)
        self.publish(episode, step, obs, **kw)
        self.s.probe.wait_for(lambda: len(self.commands) > n, 10, f"a command for step {step}")
        values, labels, key = wire.split_step_key(*wire.read_labelled(self.commands[-1][1]))
        assert labels == tuple(CONTRACT.action_labels)
        assert key == wire.step_key(episode, step)  # lockstep: the command names the step it answers
        return values

    def status(self) -> tuple[int, dict[str, str]]:
        for _, msg in reversed(self.diags):
            for st in msg.status:
                if st.name.endswith(": policy"):
                    return st.level, {kv.key: kv.value for kv in st.values}
        return -1, {}

    def wait_status(self, predicate, what: str, timeout: float = 10) -> dict[str, str]:
        self.s.probe.wait_for(lambda: predicate(self.status()[1]) if self.status()[1] else False, timeout, what)
        return self.status()[1]

    def set_policy_param(self, path: str):
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=path)
        req = SetParameters.Request(parameters=[Parameter(name="policy", value=value)])
        return self.s.probe.call(f"{NS}/policy_server/set_parameters", SetParameters, req).results[0]

    def send_snapshot(self, data: bytes, version: int) -> None:
        msg = UInt8MultiArray()
        msg.layout = MultiArrayLayout(dim=[MultiArrayDimension(label=f"policy_version={version}", size=len(data),
                                                               stride=len(data))])
        msg.data = data
        self.snapshots.publish(msg)


def test_deploy_lockstep_commands_heartbeat_and_diagnostics(ros_session, tmp_path) -> None:
    data = model_bytes(SAWYER, version=2, seed=1, path=tmp_path / "policy.onnx")
    h = Harness(ros_session, mode="deploy", timing="lockstep", policy=str(tmp_path / "policy.onnx"))
    local = OnnxPolicy.from_bytes(data)
    obs = random_observations(CONTRACT, 8, seed=1)
    for i, o in enumerate(obs):
        np.testing.assert_allclose(h.step(1, i, o), local.act(o, deterministic=True).command, atol=1e-9)
    n = len(h.commands)
    h.step(1, len(obs) - 1, obs[-1])  # the robot re-sent its step: the same command again
    assert len(h.commands) == n + 1
    h.publish(1, len(obs), obs[0], terminated=True)  # terminal: no command (the robot resets)
    h.step(2, 0, obs[1])
    assert len(h.commands) == n + 2
    ros_session.probe.wait_for(lambda: len(h.heartbeats) >= len(obs) + 3, 5, "a heartbeat per handled task_step")
    assert {hb.frame_id for _, hb in h.heartbeats} == {"2"}  # frame_id = model version
    values = h.wait_status(lambda v: int(v["commands"]) == len(obs) + 1, "diagnostics counting the commands")
    assert values["policy_version"] == "2" and values["mode"] == "deploy" and values["held"] == "0"
    assert float(values["inference_p99_ms"]) > 0

    # a task_step whose observation layout is not the contract's (another task's robot): hold, report
    shadow = task_contract(SHADOW)
    other = wire.task_step_labels(shadow.objective_names, shadow.observation_labels)
    h.steps.publish(wire.labelled_array(np.concatenate([[2, 1, 0, 0, 0.05, 0, 0], np.zeros(63)]), other))
    malformed = wire.labelled_array(np.zeros(len(LABELS)), LABELS)
    malformed.data = malformed.data[:-1]  # one value short of its labels
    h.steps.publish(malformed)
    values = h.wait_status(lambda v: int(v["held_bad_layout"]) == 2, "two holds for bad task_step layouts")
    assert "malformed task_step" in values["last_error"] and h.status()[0] == DiagnosticStatus.ERROR
    ros_session.probe.wait_for(lambda: any("observation labels do not match" in line for line in
                                           h.proc.log_text().splitlines()), 5, "the layout mismatch in the log")
    assert len(h.commands) == n + 2
    h.step(2, 2, obs[2])  # the right layout again: serving resumes


def test_hot_reload_accepts_good_and_rejects_bad_models_without_a_gap(ros_session, tmp_path) -> None:
    first, good, bad = tmp_path / "v2.onnx", tmp_path / "v3.onnx", tmp_path / "shadow.onnx"
    model_bytes(SAWYER, version=2, seed=1, path=first)
    v3 = OnnxPolicy.from_bytes(model_bytes(SAWYER, version=3, seed=2, path=good))
    model_bytes(SHADOW, version=9, path=bad)  # 63 observations: does not fit the running contract
    v5_bytes = model_bytes(SAWYER, version=5, seed=3)
    v5 = OnnxPolicy.from_bytes(v5_bytes)
    h = Harness(ros_session, mode="deploy", timing="lockstep", policy=str(first))
    obs = random_observations(CONTRACT, 40, seed=2)
    sent = 0

    def run(k: int) -> np.ndarray:  # k lockstep steps; each must get its command
        nonlocal sent
        out = None
        for _ in range(k):
            out = h.step(1, sent, obs[sent % len(obs)])
            sent += 1
        return out

    run(3)
    result = h.set_policy_param(str(good))  # file reload through the parameter
    assert result.successful, result.reason
    np.testing.assert_allclose(run(1), v3.act(obs[(sent - 1) % len(obs)], True).command, atol=1e-9)
    result = h.set_policy_param(str(bad))
    assert not result.successful and "mismatch in 'robot'" in result.reason
    np.testing.assert_allclose(run(2), v3.act(obs[(sent - 1) % len(obs)], True).command, atol=1e-9)
    h.wait_status(lambda v: v["policy_version"] == "3" and int(v["rejected_models"]) == 1, "version 3, 1 rejection")

    good.write_bytes(bad.read_bytes())  # the file changed under the same name: ~/reload rejects it
    response = ros_session.probe.call(f"{NS}/policy_server/reload", Trigger)
    assert not response.success and "mismatch in 'robot'" in response.message
    run(2)

    h.send_snapshot(v5_bytes[: len(v5_bytes) // 3], 4)  # truncated snapshot: rejected
    run(3)
    h.send_snapshot(v5_bytes, 5)  # a good snapshot: accepted, loaded off the control loop
    values = h.wait_status(lambda v: v["policy_version"] == "5", "policy version 5 in diagnostics")
    assert int(values["rejected_models"]) == 3 and int(values["reloads"]) == 2
    np.testing.assert_allclose(run(1), v5.act(obs[(sent - 1) % len(obs)], True).command, atol=1e-9)
    assert len(h.commands) == sent  # every task_step got exactly one command


def test_non_finite_output_holds_and_reports(ros_session, tmp_path) -> None:
    model_bytes(SAWYER, version=7, nan=True, path=tmp_path / "nan.onnx")
    h = Harness(ros_session, mode="deploy", timing="lockstep", policy=str(tmp_path / "nan.onnx"))
    for i, o in enumerate(random_observations(CONTRACT, 4)):
        h.publish(1, i, o)
    values = h.wait_status(lambda v: int(v["held_non_finite_output"]) == 4, "4 holds for non-finite output")
    assert h.status()[0] == DiagnosticStatus.ERROR and "not finite" in values["last_error"]
    assert values["commands"] == "0" and not h.commands and not h.heartbeats


def test_realtime_deploy_holds_when_the_observation_goes_stale(ros_session, tmp_path) -> None:
    data = model_bytes(SAWYER, version=1, seed=4, path=tmp_path / "p.onnx")
    h = Harness(ros_session, mode="deploy", timing="realtime", rate=50.0, observation_timeout=0.2,
                policy=str(tmp_path / "p.onnx"))
    o = random_observations(CONTRACT, 1, seed=5)[0]
    h.publish(3, 0, o)
    ros_session.probe.wait_for(lambda: len(h.commands) >= 3, 10, "commands from the realtime loop")
    want = OnnxPolicy.from_bytes(data).act(o, True).command
    for _, msg in h.commands:
        np.testing.assert_allclose(wire.read_labelled(msg)[0], want, atol=1e-9)
    # nothing new arrives: after observation_timeout the loop holds (no command) and says why
    values = h.wait_status(lambda v: int(v["held_missing_input"]) > 10 and "s old" in v["last_error"],
                           "holds for a stale observation")
    assert float(values["rate_hz"]) == pytest.approx(50.0)
    n = len(h.commands)
    h.wait_status(lambda v: int(v["held_missing_input"]) > int(values["held_missing_input"]) + 10, "more holds")
    assert len(h.commands) == n and h.heartbeats  # holding: no commands, but alive


def test_train_lockstep_records_experience_from_snapshots(ros_session) -> None:
    h = Harness(ros_session, mode="train", timing="lockstep", chunk_size=3, actor_id=4, seed=1)
    obs = random_observations(CONTRACT, 7, seed=6)
    h.publish(1, 0, obs[0])  # no model yet: the server waits, like the robot
    h.wait_status(lambda v: int(v["held_no_model"]) >= 1, "a hold for the missing model")
    assert not h.commands
    v1 = OnnxPolicy.from_bytes(model_bytes(SAWYER, version=1, seed=5))
    h.send_snapshot(model_bytes(SAWYER, version=1, seed=5), 1)
    ros_session.probe.wait_for(lambda: len(h.commands) == 1, 10, "the first command once the snapshot loaded")
    commands = [wire.split_step_key(*wire.read_labelled(h.commands[0][1]))[0]]
    for t in range(1, 5):
        commands.append(h.step(1, t, obs[t], reward=(0.1 * t, -t)))
    h.step(1, 4, obs[4], reward=(0.4, -4))  # repeated step: same command, no extra transition
    h.publish(1, 5, obs[5], reward=(0.5, -5), truncated=True)  # episode end: the rest of the chunk goes out
    ros_session.probe.wait_for(lambda: len(h.experience) == 2, 10, "two experience chunks (3 + 2 rows)")
    columns = wire.experience_columns(CONTRACT.observation_labels, CONTRACT.action_labels, CONTRACT.objective_names)
    tables = [wire.read_table(m) for _, m in h.experience]
    assert all(cols == columns for _, cols in tables)
    chunk = wire.split_experience(np.concatenate([t for t, _ in tables]), columns)
    assert chunk.actor == 4 and chunk.objectives == tuple(CONTRACT.objective_names)
    np.testing.assert_array_equal(chunk.step, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(chunk.policy_version, 1)
    np.testing.assert_allclose(chunk.obs, obs[:5])
    np.testing.assert_allclose(chunk.next_obs, obs[1:6])
    np.testing.assert_allclose(chunk.reward, [[0.1, -1], [0.2, -2], [0.3, -3], [0.4, -4], [0.5, -5]])
    np.testing.assert_array_equal(chunk.truncated, [False] * 4 + [True])
    assert not chunk.terminated.any()
    assert np.all(np.isfinite(chunk.log_prob)) and np.all(np.abs(chunk.action) <= 1.0)
    lo, hi = np.array(CONTRACT.action_low), np.array(CONTRACT.action_high)
    np.testing.assert_allclose(np.stack(commands), scale_action(chunk.action, lo, hi), atol=1e-9)
    deterministic = np.stack([v1.act(o, True).action for o in obs[:5]])
    assert not np.allclose(chunk.action, deterministic)  # it explores
    values = h.wait_status(lambda v: v["transitions"] == "5", "5 transitions in diagnostics")
    assert values["chunks"] == "2" and values["repeated_commands"] == "1"


def test_train_with_the_robot_node(ros_session, tmp_path) -> None:
    """robot_node (lockstep) → task_step → policy_server (train) → command_safe → robot_node."""
    model_bytes(SAWYER, version=1, seed=7, path=tmp_path / "p.onnx")
    ros_session.group.start(NodeSpec("robot_node", "robot_node", NS, {"task": SAWYER, "timing": "lockstep"}))
    ros_session.group.start(NodeSpec("policy_server", "policy_server", NS,
                                     {"mode": "train", "timing": "lockstep", "chunk_size": 16,
                                      "policy": str(tmp_path / "p.onnx")}, {"command": "command_safe"}))
    experience = ros_session.probe.subscribe(f"{NS}/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
    ros_session.probe.wait_for(lambda: len(experience) >= 3, 40, "three experience chunks from the closed loop")
    tables = [wire.read_table(m) for _, m in experience[:3]]
    chunk = wire.split_experience(np.concatenate([t for t, _ in tables]), tables[0][1])
    assert chunk.obs.shape == (48, 99) and np.all(np.isfinite(chunk.log_prob))
    same = chunk.episode[1:] == chunk.episode[:-1]
    np.testing.assert_array_equal(chunk.step[1:][same], chunk.step[:-1][same] + 1)  # consecutive steps
    np.testing.assert_allclose(chunk.obs[1:][same], chunk.next_obs[:-1][same])  # s' of one row is s of the next


def test_lifecycle_commands_only_while_active(ros_session, tmp_path) -> None:
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    model_bytes(SAWYER, version=1, path=tmp_path / "p.onnx")
    h = Harness(ros_session, mode="deploy", timing="lockstep", autostart=False, policy=str(tmp_path / "p.onnx"))

    def transition(tid: int) -> None:
        req = ChangeState.Request(transition=Transition(id=tid))
        assert ros_session.probe.call(f"{NS}/policy_server/change_state", ChangeState, req).success

    obs = random_observations(CONTRACT, 3)
    transition(Transition.TRANSITION_CONFIGURE)  # model loaded and warmed up, subscriptions made
    ros_session.probe.wait_for(lambda: h.steps.get_subscription_count() >= 1, 10, "the task_step subscription")
    h.publish(1, 0, obs[0])
    h.wait_status(lambda v: v["active"] == "False" and v["policy_version"] == "1", "an inactive, configured server")
    assert not h.commands  # configured but inactive: no command
    transition(Transition.TRANSITION_ACTIVATE)
    h.step(1, 1, obs[1])
    transition(Transition.TRANSITION_DEACTIVATE)
    n = len(h.commands)
    h.publish(1, 2, obs[2])
    h.wait_status(lambda v: v["active"] == "False" and v["commands"] == "1", "a deactivated server")
    assert len(h.commands) == n
