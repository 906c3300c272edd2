"""The short Sawyer MO-MPO run (issue: learning curves on SawyerPegInHole-v0), on a tiny budget."""
import json

from morl_robot.experiments import sawyer_peg_in_hole


def test_short_run_writes_curves_and_budget(tmp_path):
    summary = sawyer_peg_in_hole.run(tmp_path, steps=2400, seed=0, progress=False)
    assert summary["objectives"] == ["task", "wrist_force"]
    assert summary["budget"]["env_steps"] == 2400 and summary["budget"]["updates"] > 0
    assert summary["budget"]["episodes"] == 2400 // 160
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["budget"] == summary["budget"]
    for name in ("learning_curves.png", "eval_curves.png", "episodes.csv", "metrics.csv"):
        assert (tmp_path / name).stat().st_size > 0
    assert any(p.name.startswith("ckpt-") for p in (tmp_path / "checkpoints").iterdir())  # one layout with the node
