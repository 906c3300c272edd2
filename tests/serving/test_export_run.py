"""export_run / `morl-robot export` from a learner_node-style checkpoint directory, and
`morl-robot inspect`."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from policy_models import SAWYER, make_normalizer, random_observations, task_contract

from morl_robot.cli import main as cli_main
from morl_robot.learning import ActionSpec, MOMPOLearner, MPOConfig
from morl_robot.learning.checkpoint import save_checkpoint
from morl_robot.learning.config import NetworkConfig, config_to_dict
from morl_robot.serving.contract import replace
from morl_robot.serving.export import ExportError, export_run
from morl_robot.serving.runtime import OnnxPolicy
from morl_robot.tasks.base import scale_action


def write_run(run_dir, version: int = 12, step: int = 400) -> tuple[MOMPOLearner, object]:
    """A run directory as learner_node leaves it (payload layout of the issue)."""
    contract = task_contract(SAWYER)
    cfg = MPOConfig(objective_names=list(contract.objective_names),
                    networks=NetworkConfig(policy_hidden=[32, 24], critic_hidden=[16, 16]))
    learner = MOMPOLearner(len(contract.observation_labels), ActionSpec.box(len(contract.action_labels)), 2, cfg, seed=3)
    with torch.no_grad():
        learner.policy.mean_head.weight.normal_(0.0, 0.5)  # as if trained: actions vary with the observation
    norm = make_normalizer(contract, seed=2)
    payload = {"learner": learner.state_dict(), "config": config_to_dict(cfg),
               "contract": replace(contract, run_id="run-xyz").to_metadata(), "normalizer": norm.state_dict(),
               "counters": {"env_steps": 5000, "updates": 800, "episodes": 30, "policy_version": version,
                            "chunks": 80},
               "limiter": {}, "replay": None, "rng": {}}
    save_checkpoint(run_dir / "checkpoints", step, payload)
    return learner, norm


def test_export_run_uses_the_newest_checkpoint(tmp_path) -> None:
    write_run(tmp_path, version=3, step=100)
    learner, norm = write_run(tmp_path, version=12, step=400)
    (tmp_path / "checkpoints" / "ckpt-000000000500.pt").write_bytes(b"MORLCKPT broken")  # newest is corrupt
    with pytest.warns(RuntimeWarning, match="skipping unreadable checkpoint"):
        contract = export_run(tmp_path, tmp_path / "policy.onnx")
    assert (contract.policy_version, contract.run_id, contract.observation_normalizer) == (12, "run-xyz", "running")
    policy = OnnxPolicy.from_file(tmp_path / "policy.onnx", expected=task_contract(SAWYER))
    obs = random_observations(contract, 64, seed=9)
    with torch.no_grad():
        mean, _ = learner.policy(torch.as_tensor(norm.normalize(obs), dtype=torch.float32))
    want = scale_action(mean.numpy().astype(np.float64), np.array(contract.action_low), np.array(contract.action_high))
    got = np.stack([policy.act(o, deterministic=True).command for o in obs])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.ptp(got, axis=0).min() > 1e-3


def test_export_run_without_checkpoints_says_so(tmp_path) -> None:
    with pytest.raises(ExportError, match="no checkpoint"):
        export_run(tmp_path, tmp_path / "policy.onnx")


def test_cli_export_and_inspect(tmp_path, capsys) -> None:
    write_run(tmp_path)
    out = tmp_path / "exported" / "p.onnx"
    assert cli_main(["export", str(tmp_path), "--out", str(out)]) == 0
    assert "version 12" in capsys.readouterr().out and out.is_file()
    assert cli_main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    for expected in ("sawyer_peg_in_hole on sawyer, version 12, run 'run-xyz'", "cartesian_velocity at 20 Hz",
                     "task (ε=0.1), wrist_force (ε=0.1)", "t-0/wrench_fz", "vz  [-0.2, +0.2] m/s", "normalizer   running"):
        assert expected in text, expected
    assert cli_main(["inspect", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["contract"]["action_labels"] == ["vx", "vy", "vz"] and doc["inputs"] == {"observation": ["batch", 99]}


def test_cli_errors_are_one_line(tmp_path, capsys) -> None:
    assert cli_main(["inspect", str(tmp_path / "missing.onnx")]) == 2
    assert "is not a file" in capsys.readouterr().err
    (tmp_path / "bad.onnx").write_bytes(b"not an onnx model at all")
    assert cli_main(["inspect", str(tmp_path / "bad.onnx")]) == 2
    assert "truncated/corrupt" in capsys.readouterr().err
    assert cli_main(["export", str(tmp_path)]) == 2
    assert "no checkpoint" in capsys.readouterr().err
