"""``generalization --backend hardware``: each cell is a real-time deploy against the driver
emulator playing the context (issue 37), in the protocol's cell form beside the in-process figure
of the same seeds and context; its refusals are usage errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from morl_robot.cli import main
from tests.conftest import run_cli

POLICY = Path(__file__).resolve().parents[2] / "results" / "sawyer_conditioned_compliant" / "policies" / "conditioned_seed0.onnx"


@pytest.mark.parametrize("extra, message", [
    (["--policies", "zero", "--task", "sawyer_peg_in_hole"], "zero is built in"),
    (["--policies", str(POLICY), "--no-safety"], "--no-safety is for --backend sim"),
])
def test_hardware_backend_refusals(tmp_path: Path, capsys, extra, message) -> None:
    assert main(["generalization", *extra, "--backend", "hardware", "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.extended  # a real-time ROS graph (about a minute)
def test_a_hardware_cell_runs_the_context_on_the_emulator(tmp_path: Path) -> None:
    pytest.importorskip("rclpy")
    out = tmp_path / "gen"
    proc = run_cli(["generalization", "--policies", f"nominal={POLICY}", "--preferences", "0.1,0.005",
                    "--contexts", "laggy_link", "--backend", "hardware", "--episodes", "1", "--out", str(out)],
                   timeout=600, out=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cell,) = (out / "evaluations").glob("*__laggy_link.json")
    data = json.loads(cell.read_text())
    assert data["backend"] == "hardware" and data["context"]["name"] == "laggy_link"
    assert [e["context"] for e in data["per_episode"]] == ["laggy_link"]
    assert set(data["in_process"]) >= {"objectives", "success_rate", "terminations"}
    report = json.loads(Path(data["deploy_report"]).read_text())
    assert report["backend"] == "hardware" and report["context"] == "sawyer_peg_in_hole:laggy_link"
    assert json.loads((out / "results.json").read_text())["backend"] == "hardware"
