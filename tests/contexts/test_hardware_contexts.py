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
                    "--contexts", "inside_mix", "--backend", "hardware", "--episodes", "1", "--out", str(out)],
                   timeout=600, out=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cell,) = (out / "evaluations").glob("*__inside_mix.json")
    data = json.loads(cell.read_text())
    assert data["backend"] == "hardware" and data["context"]["name"] == "inside_mix"
    assert [e["context"] for e in data["per_episode"]] == ["inside_mix"]
    # its 2 mm hole move reaches the robot node as a re-measured landmark, not a calibration error
    (robot_yaml,) = out.glob("deploys/*/robot.yaml")
    assert "hole_top" in robot_yaml.read_text()
    assert "landmarks re-measured" in (robot_yaml.parent / "deploy.log").read_text()
    # and its fixture's approach boxes moved with it, for the safety monitor and the inner layer
    assert "approach boxes fixture_base" in (robot_yaml.parent / "deploy.log").read_text()
    assert "safety.yaml" in robot_yaml.read_text() and (robot_yaml.parent / "safety.yaml").is_file()
    assert set(data["in_process"]) >= {"objectives", "success_rate", "terminations"}
    report = json.loads(Path(data["deploy_report"]).read_text())
    assert report["backend"] == "hardware" and report["context"] == "sawyer_peg_in_hole:inside_mix"
    assert json.loads((out / "results.json").read_text())["backend"] == "hardware"


def test_a_context_that_moves_the_hole_moves_its_calibrated_landmarks_too() -> None:
    """On the hardware path a context's hole placement is re-measured, as in process (where the
    simulated landmark moves with the fixture): the calibrated landmarks shift by the simulated
    sites' displacement, orientation kept; a context that moves nothing changes nothing."""
    from morl_robot.contexts.schema import context_by_reference
    from morl_robot.robots.config import load_robot_config
    from morl_robot.robots.emulation import recalibrated_landmarks

    config = load_robot_config("sawyer")
    moved = recalibrated_landmarks(config, context_by_reference("sawyer_peg_in_hole:inside_mix").robot_context(0))
    offset = context_by_reference("sawyer_peg_in_hole:inside_mix").values["hole_offset"]
    assert set(moved) == set(config.hardware.landmarks)
    for name, pose in config.hardware.landmarks.items():
        assert moved[name][:3] == pytest.approx([p + o for p, o in zip(pose[:3], offset)], abs=1e-9)
        assert moved[name][3:] == pose[3:]
    assert recalibrated_landmarks(config, context_by_reference("sawyer_peg_in_hole:heavy_tool").robot_context(0)) == {}


def test_a_context_that_moves_the_fixture_moves_the_graphs_approach_boxes_too(tmp_path: Path) -> None:
    """deploy through the emulator playing a context that moves the fixture: the safety monitor and the
    robot node's inner layer read out/safety.yaml, the approach boxes moved with the fixture (as
    in process), the robot node's YAML pointing at it beside its re-measured landmarks."""
    import numpy as np

    from morl_robot.cli.deploy import _recalibrate_for_context
    from morl_robot.contexts.schema import context_by_reference
    from morl_robot.robots.config import load_robot_config
    from morl_robot.safety.compiled import load_rules
    from morl_robot.safety.inner import InnerSafety
    from morl_robot.session.config import load_session_config

    cfg = load_session_config("deploy", {"backend": "hardware",
                                         "driver_emulator": {"context": "sawyer_peg_in_hole:inside_mix"}})
    _recalibrate_for_context(cfg, "sawyer", tmp_path)
    moved = load_rules("sawyer").placed(context_by_reference("sawyer_peg_in_hole:inside_mix").robot_context(0))
    assert cfg.safety_monitor.config == str(tmp_path / "safety.yaml")
    monitor_rules = load_rules(cfg.safety_monitor.config)  # what the safety monitor node loads
    robot_yaml = load_robot_config(cfg.robot_node.robot)  # the robot node's inner layer: its YAML's safety
    inner = InnerSafety.load(robot_yaml.safety)
    for rules in (monitor_rules, inner.rules):
        assert rules.approach.names == moved.approach.names
        np.testing.assert_allclose(rules.approach.lower, moved.approach.lower, atol=1e-12)
        np.testing.assert_allclose(rules.approach.upper, moved.approach.upper, atol=1e-12)
    assert "hole_top" in robot_yaml.hardware.landmarks
    # a context that moves nothing writes neither
    cfg = load_session_config("deploy", {"backend": "hardware",
                                         "driver_emulator": {"context": "sawyer_peg_in_hole:laggy_link"}})
    _recalibrate_for_context(cfg, "sawyer", tmp_path / "laggy")
    assert not cfg.safety_monitor.config and not (tmp_path / "laggy" / "safety.yaml").exists()
