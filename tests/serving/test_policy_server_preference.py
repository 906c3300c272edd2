"""policy_server's live preference knob for an ε-conditioned policy: its own process on a private DDS
domain, driven by task_step messages from the probe; the preference changed through the
``preference`` parameter (SetParameters) and the ``preference`` topic while it serves."""
from __future__ import annotations

import time

import numpy as np
import pytest
from policy_models import (
    SAWYER,
    conditioned_contract,
    conditioned_learner,
    model_bytes,
    random_observations,
)
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from std_msgs.msg import Float64MultiArray
from test_policy_server_node import NS, Harness

from morl_robot.nodes import wire
from morl_robot.serving.contract import replace
from morl_robot.serving.export import export_policy
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.session.processes import NodeSpec

pytestmark = pytest.mark.ros


def _set(h: Harness, value: list[float]):
    param = Parameter(name="preference", value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                                                              double_array_value=[float(v) for v in value]))
    return h.s.probe.call(f"{NS}/policy_server/set_parameters", SetParameters,
                          SetParameters.Request(parameters=[param])).results[0]


def _get(h: Harness) -> list[float]:
    reply = h.s.probe.call(f"{NS}/policy_server/get_parameters", GetParameters,
                           GetParameters.Request(names=["preference"]))
    return list(reply.values[0].double_array_value)


def _preference(values: dict[str, str]) -> tuple[float, float]:
    return float(values["preference/task"]), float(values["preference/wrist_force"])


def test_preference_parameter_and_topic_change_the_served_policy(ros_session, tmp_path) -> None:
    contract = conditioned_contract()
    path = tmp_path / "conditioned.onnx"
    local = OnnxPolicy.from_bytes(export_policy(conditioned_learner(contract, strong=True).policy, contract, path))
    h = Harness(ros_session, mode="deploy", timing="lockstep", policy=str(path))
    topic = ros_session.probe.publisher(f"{NS}/preference", Float64MultiArray, wire.COMMAND_QOS)
    obs = random_observations(contract, 1, seed=3)[0]
    step = iter(range(1000))

    def command_under(eps) -> np.ndarray:
        got = h.step(1, next(step), obs)  # the same observation each time: only the preference differs
        np.testing.assert_allclose(got, local.act(obs, True, preference=np.asarray(eps)).command, atol=1e-6)
        return got

    # default: the centre of the box, shown by the parameter and in /diagnostics
    np.testing.assert_allclose(_get(h), [0.1, 0.1])
    centre = command_under([0.1, 0.1])
    h.wait_status(lambda v: _preference(v) == pytest.approx((0.1, 0.1)), "the centre in diagnostics")

    # a parameter set while serving: accepted, used for the next command, visible everywhere
    result = _set(h, [0.01, 1.0])
    assert result.successful, result.reason
    low_task = command_under([0.01, 1.0])
    assert np.abs(low_task - centre).max() > 1e-2
    values = h.wait_status(lambda v: _preference(v) == pytest.approx((0.01, 1.0)), "the new preference in diagnostics")
    assert values["preference_changes"] == "1" and "task=0.01, wrist_force=1" in values["preference"]

    # refused: out of range, wrong length; the running preference stays
    result = _set(h, [0.1, 5.0])
    assert not result.successful
    assert "'wrist_force' is 5.0, outside its range [0.01, 1]" in result.reason
    result = _set(h, [0.1])
    assert not result.successful and "has 1 values but the policy takes 2" in result.reason
    np.testing.assert_allclose(_get(h), [0.01, 1.0])
    np.testing.assert_allclose(command_under([0.01, 1.0]), low_task, atol=1e-9)

    # the topic: labelled in another order (reordered by name), then unlabelled; invalid ones are ignored
    ros_session.probe.wait_for_subscribers(topic)
    topic.publish(wire.labelled_array(np.array([0.01, 1.0]), ("wrist_force", "task")))
    h.wait_status(lambda v: _preference(v) == pytest.approx((1.0, 0.01)), "the topic's preference in diagnostics")
    far = command_under([1.0, 0.01])
    assert np.abs(far - low_task).max() > 5e-2  # far-apart preferences, same observation: other commands
    np.testing.assert_allclose(_get(h), [1.0, 0.01])  # the parameter follows the topic
    topic.publish(Float64MultiArray(data=[2.0, 0.5]))  # out of range
    time.sleep(1.1)  # invalid input is logged at most once a second (the next line counts the rest)
    topic.publish(wire.labelled_array(np.array([0.5, 0.5]), ("task", "force")))  # not the objectives
    ros_session.probe.wait_for(lambda: h.proc.log_text().count("ignored preference message") >= 2, 10,
                               "both invalid messages logged")
    log = h.proc.log_text()
    assert "'task' is 2.0, outside its range [0.01, 1]" in log and "labelled ['task', 'force']" in log
    topic.publish(Float64MultiArray(data=[0.5, 0.05]))
    values = h.wait_status(lambda v: _preference(v) == pytest.approx((0.5, 0.05)), "an unlabelled message applied")
    assert values["preference_changes"] == "3" and int(values["rejected_preferences"]) == 4
    command_under([0.5, 0.05])
    assert "preference (topic): task=1, wrist_force=0.01 -> task=0.5, wrist_force=0.05" in h.proc.log_text()
    assert "preference (parameter): task=0.1, wrist_force=0.1 -> task=0.01, wrist_force=1" in h.proc.log_text()
    assert h.proc.alive


def test_unconditioned_model_refuses_a_preference(ros_session, tmp_path) -> None:
    model_bytes(SAWYER, version=2, seed=1, path=tmp_path / "plain.onnx")
    h = Harness(ros_session, mode="deploy", timing="lockstep", policy=str(tmp_path / "plain.onnx"))
    result = _set(h, [0.1, 0.1])
    assert not result.successful and "not preference-conditioned" in result.reason
    values = h.wait_status(lambda v: "rejected_preferences" in v, "diagnostics")
    assert "preference" not in values
    h.step(1, 0, random_observations(conditioned_contract(), 1)[0])  # still serving


def test_a_start_preference_out_of_range_fails_configure(ros_session, tmp_path) -> None:
    contract = conditioned_contract()
    path = tmp_path / "conditioned.onnx"
    export_policy(conditioned_learner(contract).policy, contract, path)
    proc = ros_session.group.start(NodeSpec("policy_server", "policy_server", NS,
                                            {"mode": "deploy", "policy": str(path), "preference": [0.5, 3.0]}))
    ros_session.probe.wait_for(lambda: not proc.alive, 30, "the policy server to exit: it cannot configure")
    assert "parameter preference" in proc.log_text() and proc.returncode != 0
    assert "'wrist_force' is 3.0, outside its range [0.01, 1]" in proc.log_text()


def test_train_actor_samples_a_preference_per_episode_and_records_its_features(ros_session) -> None:
    contract = conditioned_contract()
    data = export_policy(conditioned_learner(contract, strong=True).policy, replace(contract, policy_version=1))
    local = OnnxPolicy.from_bytes(data)
    h = Harness(ros_session, mode="train", timing="lockstep", chunk_size=64, actor_id=2, seed=3)
    h.send_snapshot(data, 1)
    obs = random_observations(contract, 8, seed=8)
    h.publish(1, 0, obs[0])
    ros_session.probe.wait_for(lambda: len(h.commands) == 1, 10, "the first command once the snapshot loaded")
    for t in range(1, 4):
        h.step(1, t, obs[t])
    h.publish(1, 4, obs[4], truncated=True)
    for t in range(3):
        h.step(2, t, obs[5 + t])
    h.publish(2, 3, obs[0], truncated=True)
    ros_session.probe.wait_for(lambda: len(h.experience) == 2, 10, "one experience chunk per episode")
    columns = wire.experience_columns(contract.input_labels, contract.action_labels, contract.objective_names)
    assert columns[-4:-2] == ("next_obs/preference/task", "next_obs/preference/wrist_force")
    tables = [wire.read_table(m) for _, m in h.experience]
    assert all(cols == columns for _, cols in tables)
    chunk = wire.split_experience(np.concatenate([t for t, _ in tables]), columns)
    o = len(contract.observation_labels)
    np.testing.assert_allclose(chunk.obs[:, :o], obs[[0, 1, 2, 3, 5, 6, 7]])
    features = chunk.obs[:, o:]
    np.testing.assert_array_equal(chunk.next_obs[:, o:], features)  # one preference per transition
    assert np.all(np.abs(features) <= 1.0)
    first, second = features[:4], features[4:]
    assert np.ptp(first, axis=0).max() == 0 and np.ptp(second, axis=0).max() == 0  # fixed within an episode
    assert np.abs(first[0] - second[0]).max() > 1e-3  # sampled afresh for the next one
    # each transition's log μ(a|s) is that of the policy under the preference its features encode
    prefs = contract.preferences
    for row in range(len(chunk.step)):
        log_low, log_high = np.log(prefs.low), np.log(prefs.high)
        eps = np.exp(log_low + (features[row] + 1.0) / 2.0 * (log_high - log_low))
        _, mean, log_std = local.infer(chunk.obs[row:row + 1, :o].astype(np.float32),
                                       eps.astype(np.float32).reshape(1, -1))
        z = (chunk.action[row] - mean[0]) / np.exp(log_std[0])
        want = float(np.sum(-0.5 * z * z - log_std[0] - 0.5 * np.log(2 * np.pi)))
        assert chunk.log_prob[row] == pytest.approx(want, abs=1e-4)
    values = h.wait_status(lambda v: v["preference_samples"] == "2", "two sampled preferences")
    assert "preference/task" in values
    result = _set(h, [0.1, 0.1])  # train mode: the actor samples its own preferences
    assert not result.successful and "mode train samples a preference per episode" in result.reason
