"""The policy server's core without ROS: what it sends (commands, heartbeats, experience) for each
task step or tick, why it holds, the tick schedule on an injected clock, hot reload and the
preference of an ε-conditioned policy."""
from __future__ import annotations

import numpy as np
import pytest
from policy_models import (
    SAWYER,
    SHADOW,
    conditioned_contract,
    conditioned_learner,
    model_bytes,
    random_observations,
    task_contract,
)

from morl_robot.acting.experience import TaskStep, split_experience
from morl_robot.acting.policy import Loaded
from morl_robot.acting.server import PolicyServerCore, TickSchedule
from morl_robot.errors import ConfigError
from morl_robot.serving.export import export_policy
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.session.config import PolicyServerSettings

CONTRACT = task_contract(SAWYER)


class Server:
    """A core with recording sinks and a settable clock."""

    def __init__(self, **settings) -> None:
        self.settings = PolicyServerSettings(**settings)
        self.commands: list[tuple[np.ndarray, tuple[int, int] | None]] = []
        self.heartbeats: list[int] = []
        self.chunks: list[tuple[np.ndarray, tuple[str, ...]]] = []
        self.logs: list[tuple[str, str]] = []
        self.shown: list[list[float]] = []
        self.now = 0.0
        self.core = PolicyServerCore(self.settings, lambda c, contract, key: self.commands.append((c.copy(), key)),
                                     self.heartbeats.append, lambda t, cols: self.chunks.append((t, cols)),
                                     lambda level, msg: self.logs.append((level, msg)),
                                     show_preference=self.shown.append, clock=lambda: self.now)
        self.core.open_model()
        self.core.active = True

    def log_text(self) -> str:
        return "\n".join(f"{level}: {msg}" for level, msg in self.logs)


def task_step(episode: int, step: int, obs: np.ndarray, contract=CONTRACT, labels=None, terminated=False,
              truncated=False, reward=None) -> TaskStep:
    k = len(contract.objective_names)
    return TaskStep(episode, step, terminated, truncated, 0.05 * step,
                    np.zeros(k) if reward is None else np.asarray(reward, float), np.asarray(obs, float),
                    tuple(contract.objective_names), tuple(labels or contract.observation_labels))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    paths = {"v2": d / "v2.onnx", "v3": d / "v3.onnx", "nan": d / "nan.onnx", "shadow": d / "shadow.onnx",
             "conditioned": d / "conditioned.onnx"}
    model_bytes(SAWYER, version=2, seed=1, path=paths["v2"])
    model_bytes(SAWYER, version=3, seed=2, path=paths["v3"])
    model_bytes(SAWYER, version=7, nan=True, path=paths["nan"])
    model_bytes(SHADOW, version=9, path=paths["shadow"])
    contract = conditioned_contract()
    export_policy(conditioned_learner(contract, strong=True).policy, contract, paths["conditioned"])
    return {k: str(v) for k, v in paths.items()}


# --- lockstep ------------------------------------------------------------------------------------
def test_lockstep_answers_each_step_once_repeats_a_resent_one_and_skips_terminal_steps(models) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["v2"])
    local = OnnxPolicy.from_file(models["v2"])
    obs = random_observations(CONTRACT, 3, seed=1)
    for i, o in enumerate(obs):
        s.core.on_step(task_step(1, i, o), received=0.0)
    assert [key for _, key in s.commands] == [(1, 0), (1, 1), (1, 2)]
    for (command, _), o in zip(s.commands, obs):
        np.testing.assert_allclose(command, local.act(o, deterministic=True).command, atol=1e-9)
    s.core.on_step(task_step(1, 2, obs[2]), received=0.0)  # the robot re-sent its step
    assert len(s.commands) == 4 and s.commands[-1][1] == (1, 2)
    np.testing.assert_array_equal(s.commands[-1][0], s.commands[-2][0])
    s.core.on_step(task_step(1, 3, obs[0], terminated=True), received=0.0)  # the robot resets: no command
    assert len(s.commands) == 4
    assert s.core.counters["commands"] == 3 and s.core.counters["repeated_commands"] == 1
    assert s.heartbeats == [2] * 5  # one per handled step, naming the model version
    level, _, values = s.core.status()
    assert level == "ok" and values["policy_version"] == 2 and values["held"] == 0


def test_inactive_core_remembers_the_step_but_sends_nothing(models) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["v2"])
    s.core.active = False
    s.core.on_step(task_step(1, 0, random_observations(CONTRACT, 1)[0]), received=0.0)
    assert not s.commands and not s.heartbeats and s.core.latest is not None


# --- holds -----------------------------------------------------------------------------------------
def test_hold_reasons_are_counted_logged_once_and_heartbeat_stops_only_on_policy_faults(models) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["v2"])
    obs = random_observations(CONTRACT, 4, seed=2)
    bad = obs[0].copy()
    bad[5] = np.nan
    s.core.on_step(task_step(1, 0, bad), 0.0)
    s.core.on_step(task_step(1, 1, bad), 0.0)
    assert s.core.counters["held_non_finite_input"] == 2 and s.core.holding == "non_finite_input"
    assert s.heartbeats == [2, 2]  # a sensor fault: the monitor sees it itself, the policy is alive
    assert s.log_text().count("holding (non_finite_input)") == 1  # logged when the reason changes
    assert s.core.status()[0] == "error"

    labels = list(CONTRACT.observation_labels)
    labels[3] = "elsewhere"
    s.core.on_step(task_step(1, 2, obs[1], labels=labels), 0.0)
    assert s.core.holding == "bad_layout" and s.heartbeats == [2, 2]  # the policy does not fit: no heartbeat
    assert f"first difference at index 3: 'elsewhere' vs {CONTRACT.observation_labels[3]!r}" in s.core.last_error

    s.core.on_step(task_step(1, 3, obs[2]), 0.0)  # a good step: serving again
    assert len(s.commands) == 1 and s.core.holding == "" and s.heartbeats[-1] == 2
    assert "serving again (was holding: bad_layout)" in s.log_text()
    assert s.core.counters["held"] == 3 and not any(s.core.counters[f"held_{r}"] for r in
                                                    ("no_model", "missing_input", "non_finite_output"))


def test_non_finite_model_output_holds_without_heartbeat(models) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["nan"])
    for i, o in enumerate(random_observations(CONTRACT, 3)):
        s.core.on_step(task_step(1, i, o), 0.0)
    assert s.core.counters["held_non_finite_output"] == 3 and not s.commands and not s.heartbeats
    level, message, values = s.core.status()
    assert level == "error" and "non_finite_output" in message and "not finite" in values["last_error"]


def test_train_actor_without_a_model_holds_and_answers_the_waiting_robot_once_one_loads(models) -> None:
    s = Server(mode="train", timing="lockstep", chunk_size=4)
    o = random_observations(CONTRACT, 1, seed=3)[0]
    s.core.on_step(task_step(1, 0, o), 0.0)
    assert s.core.counters["held_no_model"] == 1 and not s.commands and not s.heartbeats
    assert s.core.status()[:2] == ("warn", "no policy loaded")
    s.core.install_loaded([Loaded(None, "policy_snapshot (policy_version=1)", "truncated model")])
    assert s.core.counters["rejected_models"] == 1 and "truncated model" in s.core.last_error
    s.core.install_loaded([Loaded(OnnxPolicy.from_file(models["v2"]), "policy_snapshot (policy_version=2)")])
    assert [key for _, key in s.commands] == [(1, 0)] and s.core.counters["reloads"] == 1


# --- realtime ticks --------------------------------------------------------------------------------
def test_tick_acts_on_the_newest_observation_until_it_is_older_than_the_timeout(models) -> None:
    s = Server(mode="deploy", timing="realtime", policy=models["v2"], observation_timeout=0.25)
    s.core.tick(0.0)
    assert s.core.holding == "missing_input" and "no task_step received yet" in s.core.last_error
    assert s.heartbeats == [2]  # missing input: still alive
    obs = random_observations(CONTRACT, 1, seed=4)[0]
    s.now = 1.0
    s.core.on_step(task_step(5, 0, obs), received=1.0)
    assert not s.commands  # realtime: steps are acted on at ticks
    for t in (1.02, 1.1, 1.25):
        s.core.tick(t)
    assert len(s.commands) == 3 and all(key is None for _, key in s.commands)
    s.core.tick(1.26)
    assert s.core.holding == "missing_input" and "0.260 s old (observation_timeout 0.25 s)" in s.core.last_error
    s.settings.observation_timeout = 0.5  # the parameter may change while running
    s.core.tick(1.3)
    assert len(s.commands) == 4 and s.core.counters["ticks"] == 6
    s.core.on_step(task_step(5, 1, obs, terminated=True), received=1.3)
    s.core.tick(1.31)  # a terminal step is replaced by the reset's step 0: no command
    assert len(s.commands) == 4 and s.core.holding == ""


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.sleeps.append(dt)
        self.t += dt


def test_tick_schedule_counts_overruns_and_skipped_periods_as_deadline_misses() -> None:
    clock = FakeClock()
    schedule = TickSchedule(0.01, clock, clock.sleep)
    assert schedule.wait() == pytest.approx(100.01)  # the first tick is one period after the start
    clock.t += 0.004  # work well inside the period
    schedule.done()
    assert schedule.wait() == pytest.approx(100.02) and clock.sleeps[-1] == pytest.approx(0.006)
    clock.t += 0.013  # overrun: the next tick was already due when this one finished
    schedule.done()
    assert schedule.misses == 1
    assert schedule.wait() == pytest.approx(100.033) and len(clock.sleeps) == 2  # late: no sleep
    schedule.done()
    clock.t += 0.0375  # the process was starved for over three periods
    now = schedule.wait()
    assert schedule.misses == 1 + 3 and schedule.slot <= now < schedule.slot + 0.01  # the slot caught up
    with pytest.raises(ValueError, match="period"):
        TickSchedule(0.0, clock, clock.sleep)


def test_realtime_rate_is_the_parameter_or_the_contract_and_misses_reach_diagnostics(models) -> None:
    with pytest.raises(ConfigError, match="parameter rate"):
        Server(mode="train", timing="realtime").core.start_realtime()
    s = Server(mode="deploy", timing="realtime", policy=models["v2"])
    clock = FakeClock()
    schedule = s.core.start_realtime(clock, clock.sleep)
    assert schedule.period == pytest.approx(1.0 / CONTRACT.control_rate)
    clock.t += 5.5 * schedule.period
    schedule.wait()
    values = s.core.status()[2]
    assert values["deadline_misses"] == 4 and values["rate_hz"] == pytest.approx(CONTRACT.control_rate)
    assert Server(mode="deploy", timing="realtime", policy=models["v2"], rate=50.0).core.start_realtime().period \
        == pytest.approx(0.02)


# --- models ----------------------------------------------------------------------------------------
def test_reload_accepts_a_compatible_model_and_rejects_an_incompatible_one(models, tmp_path) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["v2"])
    obs = random_observations(CONTRACT, 3, seed=5)
    s.core.on_step(task_step(1, 0, obs[0]), 0.0)
    assert s.core.load_file(models["v3"]) == (True, f"policy version 3 from {models['v3']} now serving")
    ok, why = s.core.load_file(models["shadow"])
    assert not ok and "mismatch in 'robot'" in why
    ok, why = s.core.load_file(str(tmp_path / "missing.onnx"))
    assert not ok and "not found" in why
    assert s.core.load_file("") == (False, "empty policy path")
    s.core.on_step(task_step(1, 1, obs[1]), 0.0)
    np.testing.assert_allclose(s.commands[-1][0], OnnxPolicy.from_file(models["v3"]).act(obs[1], True).command,
                               atol=1e-9)
    assert s.core.counters["reloads"] == 1 and s.core.counters["rejected_models"] == 2
    assert "the running model keeps serving" in s.log_text()
    # a model that gives non-finite output on the newest observation is refused as well
    assert not s.core.install(OnnxPolicy.from_file(models["nan"]), "snapshot")
    assert s.core.policy.version == 3 and "non-finite output on the newest observation" in s.core.last_error


def test_deploy_without_a_policy_file_fails_configure() -> None:
    with pytest.raises(ConfigError, match="parameter policy: deploy mode needs an ONNX policy file"):
        Server(mode="deploy")


# --- experience and back-pressure ------------------------------------------------------------------
def test_train_lockstep_writes_transitions_and_waits_for_the_learners_allowance(models) -> None:
    s = Server(mode="train", timing="lockstep", policy=models["v2"], chunk_size=2, actor_id=3, seed=1)
    obs = random_observations(CONTRACT, 6, seed=6)
    s.core.on_allowance(0, 2)  # the learner accepts 2 (+ a chunk of slack) transitions before learning
    for t in range(5):
        s.core.on_step(task_step(1, t, obs[t], reward=(0.1 * t, -t)), 0.0)
    # acted on steps 0..3 (4 = 2 allowed + 2 slack); step 4 waits
    assert [key for _, key in s.commands] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert s.core.counters["back_pressure_waits"] == 1 and len(s.heartbeats) == 5
    s.core.on_allowance(4, 10)  # the learner caught up: the waiting step gets its command
    assert s.commands[-1][1] == (1, 4)
    s.core.on_step(task_step(1, 5, obs[5], reward=(0.5, -5), truncated=True), 0.0)
    chunk = split_experience(np.concatenate([t for t, _ in s.chunks]), s.chunks[0][1])
    assert chunk.actor == 3 and s.core.status()[2]["transitions"] == 5
    np.testing.assert_array_equal(chunk.step, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(chunk.next_obs, obs[1:6])
    np.testing.assert_allclose(chunk.reward[:, 1], [-1, -2, -3, -4, -5])


def test_stop_drops_the_half_transition_and_flushes_the_rows(models) -> None:
    s = Server(mode="train", timing="lockstep", policy=models["v2"], chunk_size=10)
    obs = random_observations(CONTRACT, 3, seed=7)
    for t in range(3):
        s.core.on_step(task_step(1, t, obs[t]), 0.0)
    s.core.stop()
    assert len(s.chunks) == 1 and len(s.chunks[0][0]) == 2 and s.core.writer.pending is None
    s.core.on_step(task_step(1, 3, obs[0]), 0.0)
    assert len(s.commands) == 3  # stopped: nothing more


# --- preference ------------------------------------------------------------------------------------
def test_preference_defaults_to_the_centre_and_changes_are_checked_and_logged(models) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["conditioned"])
    np.testing.assert_allclose(s.shown, [[0.1, 0.1]])  # empty: the box's centre, shown by the parameter
    assert s.core.set_preference([0.01, 1.0]) == (True, "accepted")
    np.testing.assert_allclose(s.core.policy.preference, [0.01, 1.0])
    assert "preference (parameter): task=0.1, wrist_force=0.1 -> task=0.01, wrist_force=1" in s.log_text()
    ok, why = s.core.set_preference([0.1, 5.0])
    assert not ok and "'wrist_force' is 5.0, outside its range [0.01, 1]" in why
    ok, why = s.core.set_preference([0.1])
    assert not ok and "has 1 values but the policy takes 2" in why
    np.testing.assert_allclose(s.core.policy.preference, [0.01, 1.0])  # refused: the running one stays
    # a message labelled in another order is reordered by name; unknown labels are refused
    np.testing.assert_allclose(s.core.preference_message(np.array([0.01, 1.0]), ("wrist_force", "task")), [1.0, 0.01])
    assert s.core.preference_message(np.array([0.5, 0.5]), ("task", "force")) is None
    assert s.core.set_preference(np.array([1.0, 0.01]), "topic")[0]
    assert "preference (topic): task=0.01, wrist_force=1 -> task=1, wrist_force=0.01" in s.log_text()
    assert s.core.counters["preference_changes"] == 2 and s.core.counters["rejected_preferences"] == 3
    values = s.core.status()[2]
    assert values["preference/task"] == 1.0 and values["preference/wrist_force"] == 0.01
    # a reloaded model keeps acting under the running preference
    contract = conditioned_contract()
    other = OnnxPolicy.from_bytes(export_policy(conditioned_learner(contract, seed=4).policy, contract))
    assert s.core.install(other, "snapshot")
    np.testing.assert_allclose(s.core.policy.preference, [1.0, 0.01])


def test_preference_at_start_must_fit_the_contract(models) -> None:
    with pytest.raises(ConfigError, match=r"parameter preference: .*'wrist_force' is 3.0, outside its range"):
        Server(mode="deploy", policy=models["conditioned"], preference=[0.5, 3.0])
    s = Server(mode="deploy", policy=models["conditioned"], preference=[0.5, 0.02])
    np.testing.assert_allclose(s.core.policy.preference, [0.5, 0.02])
    assert not s.shown  # given: nothing to show


def test_unconditioned_model_and_train_mode_refuse_a_preference(models) -> None:
    s = Server(mode="deploy", timing="lockstep", policy=models["v2"])
    ok, why = s.core.set_preference([0.1, 0.1])
    assert not ok and "not preference-conditioned" in why
    assert s.core.set_preference([]) == (True, "no preference")  # the empty default is fine
    assert s.core.preference_message(np.array([0.1, 0.1]), ()) is None
    assert "preference" not in s.core.status()[2]
    t = Server(mode="train", timing="lockstep", policy=models["conditioned"])
    ok, why = t.core.set_preference([0.1, 0.1])
    assert not ok and "mode train samples a preference per episode" in why
    assert t.core.counters["rejected_preferences"] == 1 and not t.shown


def test_train_actor_samples_one_preference_per_episode_and_records_its_features(models) -> None:
    s = Server(mode="train", timing="lockstep", policy=models["conditioned"], chunk_size=64, seed=3)
    contract = conditioned_contract()
    obs = random_observations(contract, 6, seed=8)
    for episode in (1, 2):
        for t in range(3):
            s.core.on_step(task_step(episode, t, obs[t], contract), 0.0)
        s.core.on_step(task_step(episode, 3, obs[3], contract, truncated=True), 0.0)
    assert s.core.counters["preference_samples"] == 2
    chunk = split_experience(np.concatenate([t for t, _ in s.chunks]), s.chunks[0][1])
    features = chunk.obs[:, len(contract.observation_labels):]
    assert features.shape == (6, 2) and np.all(np.abs(features) <= 1.0)
    np.testing.assert_array_equal(chunk.next_obs[:, len(contract.observation_labels):], features)
    assert np.ptp(features[:3], axis=0).max() == 0 and np.ptp(features[3:], axis=0).max() == 0
    assert np.abs(features[0] - features[3]).max() > 1e-3
