"""Fault: after falling back from a corrupt newest checkpoint, `morl-robot export RUN_DIR` used to
overwrite the run's newer policy.onnx with the older checkpoint's policy (version 4 → 1) and exit
0.  Now it refuses (exit 2, both versions named) unless --force; nothing already saved is lost."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from test_export_run import write_run

from morl_robot.cli import main
from morl_robot.serving.runtime import OnnxPolicy


def test_export_refuses_to_replace_a_newer_policy(tmp_path, capsys):
    write_run(tmp_path, version=4, step=400)
    assert main(["export", str(tmp_path)]) == 0  # policy.onnx, version 4
    write_run(tmp_path, version=1, step=100)
    (tmp_path / "checkpoints" / "ckpt-000000000400.pt").write_bytes(b"MORLCKPT broken")  # newest now corrupt
    before = (tmp_path / "policy.onnx").read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the fallback's own warning
        assert main(["export", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "policy version 4" in err and "version 1" in err and "--force" in err
    assert (tmp_path / "policy.onnx").read_bytes() == before  # untouched
    # an explicit --out elsewhere works, and --force replaces on purpose
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(["export", str(tmp_path), "--out", str(tmp_path / "old.onnx")]) == 0
        assert main(["export", str(tmp_path), "--force"]) == 0
    assert OnnxPolicy.from_file(tmp_path / "policy.onnx").contract.policy_version == 1


def test_export_refuses_to_replace_another_runs_policy(tmp_path, capsys):
    from dataclasses import replace

    from morl_robot.serving.export import export_policy, load_run_policy

    write_run(tmp_path / "a", version=2)
    _, policy, contract, norm = load_run_policy(tmp_path / "a")
    export_policy(policy, replace(contract, run_id="another-run", policy_version=1), tmp_path / "a" / "policy.onnx",
                  normalizer=norm)
    assert main(["export", str(tmp_path / "a")]) == 2
    assert "another run" in capsys.readouterr().err
