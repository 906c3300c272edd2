"""Fault (issue 33, item 6): an ONNX contract naming another robot (``shadow_hand`` on the Sawyer
task), another control mode (effort) or rate (1000 Hz) was accepted by ``inspect`` and ``evaluate``
with rc 0 and run in the task's own mode.  Now :meth:`PolicyContract.check_runs_on` compares the
contract with its task's YAML (and the robot's YAML), and ``inspect``, ``evaluate``, ``deploy`` and
the policy server refuse a mismatch: rc 2, one line naming the field, both values and the file."""
from __future__ import annotations

from pathlib import Path

import pytest
from tampered_models import POLICY, server_node_refuses, tamper_contract

from morl_robot.acting.server import PolicyServerCore
from morl_robot.cli import main
from morl_robot.serving.contract import ContractError
from morl_robot.session.config import PolicyServerSettings

#: field -> (metadata value, how the message shows the contract's value, the Sawyer task's value)
TAMPERED = {
    "robot": ('"shadow_hand"', "'shadow_hand'", "'sawyer'"),
    "control_mode": ('"effort"', "'effort'", "'cartesian_velocity'"),
    "control_rate": ("1000.0", "1000 Hz", "20 Hz"),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tampered_contract")
    return {field: tamper_contract(POLICY, d / f"{field}.onnx", **{field: value})
            for field, (value, _, _) in TAMPERED.items()}


def _one_line_naming(err: str, command: str, field: str, path: Path) -> str:
    line = err.strip()
    assert "\n" not in line, err
    _, have, want = TAMPERED[field]
    assert line.startswith(f"morl-robot {command}: error: {path}: contract field '{field}' is {have}"), line
    assert want in line and "sawyer_peg_in_hole.yaml" in line, line
    return line


@pytest.mark.parametrize("field", list(TAMPERED))
@pytest.mark.parametrize("command", ["inspect", "evaluate"])
def test_inspect_and_evaluate_refuse_a_contract_that_is_not_its_tasks(models, field, command, capsys) -> None:
    """Before: rc 0 (evaluate: the original's scores, in the task's own mode).  Now: rc 2 and one line."""
    path = models[field]
    argv = ["inspect", str(path)] if command == "inspect" else \
        ["evaluate", str(path), "--episodes", "1", "--json", "--no-progress"]
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", out
    _one_line_naming(err, command, field, path)


def test_the_untampered_policy_still_inspects_and_evaluates(capsys) -> None:
    assert main(["inspect", str(POLICY)]) == 0
    assert "cartesian_velocity at 20 Hz" in capsys.readouterr().out
    assert main(["evaluate", str(POLICY), "--episodes", "1", "--json", "--no-progress"]) == 0


@pytest.mark.parametrize("field", list(TAMPERED))
def test_deploy_and_the_policy_server_refuse_it(models, field, capsys) -> None:
    """``deploy`` before any node starts; the policy server core (what the node wraps) at load and
    at a hot reload (the running model keeps serving)."""
    path = models[field]
    rc = main(["deploy", str(path), "--duration", "1"])
    assert rc == 2
    _one_line_naming(capsys.readouterr().err, "deploy", field, path)
    settings = PolicyServerSettings(mode="deploy", timing="lockstep", policy=str(path))
    core = PolicyServerCore(settings, lambda *a: None, lambda v: None, lambda *a: None, lambda level, msg: None)
    with pytest.raises(ContractError, match=rf"{path}: contract field '{field}' is"):
        core.open_model()
    good = PolicyServerCore(PolicyServerSettings(mode="deploy", timing="lockstep", policy=str(POLICY)),
                            lambda *a: None, lambda v: None, lambda *a: None, lambda level, msg: None)
    good.open_model()
    ok, reason = good.load_file(str(path))
    assert not ok and f"contract field '{field}' is" in reason, reason
    assert good.policy is not None and good.policy.contract.robot == "sawyer"


@pytest.mark.ros
def test_the_policy_server_node_refuses_to_start_with_it(models, ros_session) -> None:
    """A real policy_server process given a contract for another robot exits with rc 2 and the reason."""
    path = models["robot"]
    log = server_node_refuses(ros_session, path, "/wrong_robot")
    assert f"{path}: contract field 'robot' is 'shadow_hand'" in log
