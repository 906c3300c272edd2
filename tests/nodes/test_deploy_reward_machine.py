"""A policy of a reward-machine task (the Sawyer peg in the product with the MORM
``sawyer/peg_touch_then_insert``) is evaluated and deployed like any other policy: its contract
records the machine, ``morl-robot evaluate`` rebuilds the product from it, ``morl-robot deploy``
runs the machine in the robot node (real processes over real DDS) and the sim-to-sim check
compares every objective, the task's and the machine's; a machine that changed since the policy
was exported, or a model whose contract does not say which machine, is a clear error naming the
contract field, not a shape error."""
from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from morl_robot.cli import main
from morl_robot.resources import config_path
from morl_robot.session.processes import ros_env
from tests.conftest import run_cli

SPEC = "sawyer/peg_touch_then_insert"
OBJECTIVES = ["task", "wrist_force", "touch_then_insert", "force_budget"]


def export_rm_policy(path: Path, spec: str = SPEC, keep_machine: bool = True) -> None:
    """An untrained, gentle policy of the Sawyer reward-machine task (small mean weights: it moves
    slowly and does not press the peg into the fixture in one episode)."""
    import torch

    from morl_robot.envs.registration import make_rm_task_env
    from morl_robot.learning import ActionSpec, MOMPOLearner
    from morl_robot.learning.config import config_from_dict
    from morl_robot.serving.contract import contract_for_env
    from morl_robot.serving.export import export_policy

    env = make_rm_task_env(spec)
    try:
        torch.manual_seed(3)
        cfg = config_from_dict({"objective_names": list(env.objective_names),
                                "networks": {"policy_hidden": [32, 24], "critic_hidden": [16, 16]}})
        learner = MOMPOLearner(env.observation_space.shape[0], ActionSpec.box(env.action_space.shape[0]), 4, cfg)
        with torch.no_grad():
            learner.policy.mean_head.weight.normal_(0.0, 0.01)
        contract = contract_for_env(env, cfg, policy_version=1, run_id="rm-deploy")
        if not keep_machine:  # as exported before contracts recorded the machine
            contract = dataclasses.replace(contract, reward_machine=None)
        export_policy(learner.policy, contract, path)
    finally:
        env.close()


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("rm_policy") / "policy.onnx"
    export_rm_policy(path)
    return path


def cli(argv: list[str], domain: int, timeout: float = 300) -> subprocess.CompletedProcess:
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    return run_cli(argv, timeout, env=ros_env(domain), out=out)


def test_the_contract_records_the_machine_and_evaluate_reports_all_objectives(policy, capsys):
    from morl_robot.reward_machines.env import machine_inputs
    from morl_robot.serving.runtime import OnnxPolicy

    contract = OnnxPolicy.from_file(policy).contract
    assert contract.reward_machine == machine_inputs(SPEC)
    assert contract.objective_names == OBJECTIVES
    assert contract.observation_labels[-12:] == contract.reward_machine.states  # the one-hot, last
    assert main(["evaluate", str(policy), "--episodes", "2", "--seed", "500", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert list(got["objectives"]) == OBJECTIVES
    assert all(set(e["returns"]) == set(OBJECTIVES) for e in got["per_episode"])
    assert main(["inspect", str(policy)]) == 0
    assert f"reward machine {SPEC}" in capsys.readouterr().out


def _own_machine(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the Sawyer reward-machine task whose first machine is a file of this test's."""
    machine = tmp_path / "touch_then_insert.yaml"
    machine.write_text(config_path("reward_machines/sawyer/touch_then_insert.yaml").read_text())
    spec = yaml.safe_load(config_path(f"reward_machines/{SPEC}.yaml").read_text())
    spec["machines"] = [str(machine), "sawyer/force_budget"]
    spec_path = tmp_path / "peg_rm.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    return spec_path, machine


def test_a_machine_changed_since_export_is_refused_by_evaluate_and_deploy(tmp_path, capsys, domain_id):
    spec_path, machine = _own_machine(tmp_path)
    path = tmp_path / "policy.onnx"
    export_rm_policy(path, str(spec_path))
    assert main(["evaluate", str(path), "--episodes", "1", "--seed", "500", "--json"]) == 0  # unchanged: fine
    capsys.readouterr()
    # the insertion now pays 2: same states, same names, another machine
    machine.write_text(machine.read_text().replace("reward: 1.0", "reward: 2.0"))
    assert main(["evaluate", str(path), "--episodes", "1", "--seed", "500"]) == 2
    err = capsys.readouterr().err
    assert "contract field 'reward_machine': 'digest' of the policy is" in err
    assert "changed since the policy was trained" in err
    done = cli(["deploy", str(path), "--episodes", "1", "--out", str(tmp_path / "d"),
                "--domain-id", str(domain_id)], domain_id)
    assert done.returncode == 2 and "contract field 'reward_machine': 'digest'" in done.stderr, done.stderr
    assert "deploying" not in done.stderr  # refused before any node started
    spec_path.unlink()
    assert main(["evaluate", str(path), "--episodes", "1"]) == 2
    assert f"its spec '{spec_path}' cannot be loaded here" in capsys.readouterr().err


def test_a_model_without_the_machine_in_its_contract_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "old.onnx"
    export_rm_policy(path, keep_machine=False)
    assert main(["evaluate", str(path), "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert "contract field 'reward_machine' is missing" in err and "rm_state/approach+clean" in err


def test_a_plain_policy_is_refused_where_its_labels_differ(tmp_path):
    """The environment a contract describes is checked label by label (here: a contract claiming a
    reward machine for a task whose observation was changed under it)."""
    from morl_robot.envs.mo_env import open_policy_env
    from morl_robot.envs.registration import make_rm_task_env
    from morl_robot.reward_machines.env import machine_inputs
    from morl_robot.serving.contract import ContractError, contract_for_env

    env = make_rm_task_env(SPEC)
    try:
        contract = contract_for_env(env, None)
    finally:
        env.close()
    labels = list(contract.observation_labels)
    labels[0] = "right_j0/angle"
    changed = dataclasses.replace(contract, observation_labels=labels)
    assert changed.reward_machine == machine_inputs(SPEC)
    with pytest.raises(ContractError, match="contract field 'observation_labels'.*index 0: 'right_j0/angle'"):
        open_policy_env(changed)


@pytest.mark.ros
def test_sim_to_sim_check_of_a_reward_machine_policy(policy, tmp_path, domain_id):
    done = cli(["deploy", str(policy), "--episodes", "2", "--seed", "500", "--out", str(tmp_path),
                "--domain-id", str(domain_id)], domain_id)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "deploy_report.json").read_text())
    assert report["objectives"] == OBJECTIVES and report["seeds"] == [500, 501]
    assert "onnxruntime in-process" in report["in_process_source"]
    # the robot node ran the machine: the graph's episodes are the in-process product env's, in
    # every objective (the machine's included), through the same safety rules
    assert max(report["max_abs_difference"]) < 1e-3, report
    assert report["graph_success"] == report["in_process_success"]
    for line in ("touch_then_insert", "force_budget"):
        assert line in done.stdout


@pytest.mark.ros
def test_the_hardware_backend_runs_the_machine_too(policy, tmp_path, domain_id):
    """`--backend hardware` against the driver emulator: the robot node labels the driver's readings
    and steps the machine; the policy server gets the product observation (no layout holds) and
    keeps its rate."""
    done = cli(["deploy", str(policy), "--backend", "hardware", "--emulate", "none", "--duration", "20",
                "--out", str(tmp_path), "--domain-id", str(domain_id)], domain_id)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    server = json.loads(done.stdout[done.stdout.index("{"):])["policy_server"]
    assert int(server["held_bad_layout"]) == 0 and int(server["commands"]) > 100, server  # 20 s: the reset after an episode backs the peg out first (≈ 10 s)
    assert float(server["rate_hz"]) == 20


# --- the committed Sawyer MORM policy (results/sawyer_rm/conservative_no_crm) ---------------------
ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "results" / "sawyer_rm" / "conservative_no_crm"
COMMITTED_POLICY = ROOT / "results/sawyer_rm/conservative_no_crm/policy.onnx"  # as the docs write it
#: two of its evaluation episodes: 10004 crosses the force limit twice (force_budget −2, the machine
#: ends it after the insertion), 10005 inserts after a light touch and runs to the time limit
SEEDS = (10004, 10005)


def committed_episodes() -> dict[int, dict]:
    data = json.loads((COMMITTED / "results.json").read_text())
    assert data["policy"] == "policy.onnx" and data["spec"] == SPEC
    return {e["seed"]: e for e in data["evaluation"]["per_episode"]}


def test_the_committed_sawyer_morm_policy_reproduces_its_episodes(capsys):
    """`morl-robot evaluate results/sawyer_rm/conservative_no_crm/policy.onnx` (the README's
    command, on two of its 20 seeds) gives the committed per-episode figures."""
    committed = committed_episodes()
    assert committed[SEEDS[0]]["termination"] == "reward_machine" and committed[SEEDS[1]]["success"]
    assert main(["evaluate", "--contact-control", "stiff", str(COMMITTED / "policy.onnx"), "--episodes", str(len(SEEDS)), "--seed", str(SEEDS[0]),
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    for episode in got["per_episode"]:
        want = committed[episode["seed"]]
        assert episode["termination"] == want["termination"] and episode["steps"] == want["steps"]
        assert episode["success"] == want["success"]
        for name in OBJECTIVES:
            assert episode["returns"][name] == pytest.approx(want["returns"][name], abs=1e-6)



SCALED = COMMITTED.parent / "conservative_crm_scaled"


def test_the_committed_scaled_crm_policy_stops_short_as_the_readme_says(capsys):
    """The README's scaled-CRM row (|U \\ F| = 9 times the updates): the committed ONNX policy, re-evaluated
    on two of its seeds, gives the committed episodes: a gentle push that stops short of the success
    depth and runs to the time limit."""
    data = json.loads((SCALED / "results.json").read_text())
    assert data["crm"] is True and data["crm_scale_updates"] is True and data["budget"]["updates"] > 9 * 3_400
    committed = {e["seed"]: e for e in data["evaluation"]["per_episode"]}
    assert main(["evaluate", "--contact-control", "stiff", str(SCALED / "policy.onnx"), "--episodes", "2", "--seed", "10000", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    for episode in got["per_episode"]:
        want = committed[episode["seed"]]
        assert (episode["termination"], episode["success"]) == (want["termination"], want["success"]) == ("time_limit", False)
        assert episode["progress"] == pytest.approx(want["progress"], abs=1e-3) and 25.0 < episode["progress"] < 45.0
        for name in OBJECTIVES:
            assert episode["returns"][name] == pytest.approx(want["returns"][name], abs=1e-6)

@pytest.mark.ros
def test_the_committed_sawyer_morm_policy_deploys_through_the_graph(tmp_path, domain_id):
    """`morl-robot deploy results/sawyer_rm/conservative_no_crm/policy.onnx --episodes 1 --seed 10004`
    (docs/tutorials/reward_machines.md's, there on 2 episodes): the robot node runs the machine; the graph's episode is the in-process one.  (The
    committed episode was measured before the compliant controller; the evaluate test above re-checks
    it with --contact-control stiff; deploy runs the robot as it is now.)"""
    # docs/tutorials/reward_machines.md's deploy (its fence is parse-only, run here) on one of its episodes
    assert SEEDS[0] == 10004
    done = cli(["deploy", str(COMMITTED_POLICY), "--episodes", "1", "--seed", "10004",
                "--out", str(tmp_path), "--domain-id", str(domain_id)], domain_id)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "deploy_report.json").read_text())
    assert len(report["terminations"]) == 1 and len(report["graph_returns"][0]) == len(OBJECTIVES)
    assert report["terminations"] == report["in_process_terminations"]
    # The served action (the ONNX 'action' output) and the in-process one ('mean') differ by 5e-8
    # relative at the first step (float32; issue 33 item 3); contact under the compliant controller
    # grows that to ~2e-4 of the force return over the episode (measured: 0.0074 of -39.5).
    for diff, ret in zip(report["max_abs_difference"], report["graph_returns"][0]):
        assert diff < 1e-3 * max(1.0, abs(ret)), report


def test_inspect_names_the_committed_policys_reward_machine(capsys):
    """`morl-robot inspect results/sawyer_rm/conservative_no_crm/policy.onnx` names the reward machine
    the policy acts under.  (The docs' own command lines are parsed and run by
    tests/docs/test_doc_commands.py; no test reads README prose.)"""
    assert main(["inspect", str(COMMITTED / "policy.onnx")]) == 0
    assert f"reward machine {SPEC}" in capsys.readouterr().out
