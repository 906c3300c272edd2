"""Fault (issue 33, item 3): ``evaluate`` scored the model's ``mean`` output while ``deploy`` and the
policy server sent its ``action`` output, so a model whose ``action`` said 5 m/s evaluated exactly
like the original.  Now one function, :meth:`OnnxPolicy.served_action`, gives what is served and
what is evaluated, and a model whose ``action`` output is not its contract's scaling of its
``mean`` is refused by ``evaluate``, ``deploy`` and the policy server (at load, and held at any
step where it disagrees)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tampered_models import POLICY, server_node_refuses, tamper_action

from morl_robot.acting.experience import TaskStep
from morl_robot.acting.server import PolicyServerCore
from morl_robot.cli import main
from morl_robot.evaluation.protocol import onnx_policy
from morl_robot.serving.runtime import InconsistentOutput, OnnxPolicy, PolicyLoadError
from morl_robot.session.config import PolicyServerSettings

TAMPERED = {"action_x100": {"scale": 100.0}, "action_5_m_per_s_down": {"constant": [0.0, 0.0, -5.0]}}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tampered_action")
    out = {name: tamper_action(POLICY, d / f"{name}.onnx", **how) for name, how in TAMPERED.items()}
    out["lies_above_50"] = tamper_action(POLICY, d / "lies_above_50.onnx", offset_above=(0, 50.0, 5.0))
    return out


class Core:
    """The policy server's core (what the policy_server node wraps), deploy mode, lockstep, with a
    recording command sink."""

    def __init__(self, policy: Path) -> None:
        self.commands: list[np.ndarray] = []
        self.logs: list[str] = []
        self.core = PolicyServerCore(PolicyServerSettings(mode="deploy", timing="lockstep", policy=str(policy)),
                                     lambda c, contract, key: self.commands.append(c.copy()), lambda v: None,
                                     lambda t, cols: None, lambda level, msg: self.logs.append(msg))
        self.core.open_model()
        self.core.active = True
        self.contract = self.core.policy.contract

    def step(self, step: int, obs: np.ndarray) -> None:
        c = self.contract
        self.core.on_step(TaskStep(1, step, False, False, 0.05 * step, np.zeros(len(c.objective_names)),
                                   np.asarray(obs, float), tuple(c.objective_names), tuple(c.observation_labels)),
                          received=0.0)


def _observations(policy: OnnxPolicy, n: int = 8) -> np.ndarray:
    return np.random.default_rng(3).normal(0.0, 2.0, size=(n, policy.obs_dim))


def test_what_evaluate_steps_with_is_what_the_server_sends() -> None:
    """An honest committed policy: the evaluated action is the served command as the robot node
    normalises it, the server sends that command, and the graph's ``action`` agrees with it."""
    served = OnnxPolicy.from_file(POLICY)
    evaluated = onnx_policy(POLICY)
    core = Core(POLICY)
    low, high = np.asarray(served.contract.action_low), np.asarray(served.contract.action_high)
    for i, obs in enumerate(_observations(served)):
        out = served.served_action(obs)
        np.testing.assert_array_equal(evaluated.act(obs), out.action)  # evaluate acts with the served action
        core.step(i, obs)
        np.testing.assert_array_equal(core.commands[-1], out.command)  # the server sends exactly that command
        # the robot node's reading of the command (TaskRunner.normalised_action) is the evaluated action
        np.testing.assert_allclose(np.clip(2.0 * (out.command - low) / (high - low) - 1.0, -1, 1), out.action,
                                   atol=1e-12)
        graph_action = served.infer(obs[None].astype(np.float32))[0][0]
        np.testing.assert_allclose(graph_action, out.command, atol=1e-6)  # float32 rounding only


@pytest.mark.parametrize("name", list(TAMPERED))
def test_evaluate_refuses_a_policy_whose_action_is_not_its_mean(models, name, capsys) -> None:
    """Before: rc 0 and the original's scores (``mean`` untouched).  Now: rc 2, one line naming the
    output, the component and the file."""
    path = models[name]
    rc = main(["evaluate", str(path), "--episodes", "1", "--json", "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 2, out
    assert out == ""
    line = err.strip()
    assert "\n" not in line, err
    assert line.startswith("morl-robot evaluate: error: ") and str(path) in line
    assert "model output 'action'" in line and "'mean'" in line and ", m/s)" in line


@pytest.mark.parametrize("name", list(TAMPERED))
def test_the_policy_server_and_deploy_refuse_it_too(models, name, capsys) -> None:
    """The same model is refused where it would be served: the policy server core (what the node
    wraps) at load, and ``morl-robot deploy`` before any node starts."""
    path = models[name]
    with pytest.raises(PolicyLoadError, match=r"model output 'action' .* but its 'mean'"):
        Core(path)
    rc = main(["deploy", str(path), "--duration", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and str(path) in err and "model output 'action'" in err, err


def test_a_policy_that_lies_only_on_rare_observations_is_held_there(models) -> None:
    """Honest at the load-time probes, lying (+5 m/s) where observation 0 exceeds 50: it loads and
    serves the honest steps; at a lying step nothing is sent (held, the reason names 'action'),
    and the in-process evaluation of that step raises the same error instead of scoring a
    command the server would not send."""
    path = models["lies_above_50"]
    core = Core(path)
    policy = OnnxPolicy.from_file(path)
    obs = _observations(policy, 3)
    core.step(0, obs[0])
    np.testing.assert_array_equal(core.commands[-1], policy.served_action(obs[0]).command)
    lying = obs[1].copy()
    lying[0] = 100.0
    with pytest.raises(InconsistentOutput, match=r"model output 'action' is .* at index 0"):
        policy.served_action(lying)
    with pytest.raises(InconsistentOutput):
        onnx_policy(path).act(lying)
    sent = len(core.commands)
    core.step(1, lying)
    assert len(core.commands) == sent  # held: no command for the lying step
    assert core.core.holding == "non_finite_output" and "model output 'action'" in core.core.last_error
    core.step(2, obs[2])  # honest again: served again
    assert len(core.commands) == sent + 1


@pytest.mark.ros
def test_the_policy_server_node_refuses_to_start_with_it(models, ros_session) -> None:
    """A real policy_server process given the tampered model exits with rc 2 and the reason."""
    path = models["action_5_m_per_s_down"]
    log = server_node_refuses(ros_session, path, "/tampered")
    assert "model output 'action'" in log and str(path) in log
