"""``experiment hopper-dynamics`` (issue 37): the paper's Hopper Light/Heavy contexts applied to the
MuJoCo model (mass and inertia), the plan, argument errors, and a tiny-budget run of both methods
through the CLI (the real budgets are the committed result's, results/generalization/hopper_dynamics)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from morl_robot.cli import main
from morl_robot.contexts import load_contexts
from morl_robot.errors import ConfigError
from morl_robot.experiments.hopper_dynamics import context_file, make_env


def test_contexts_scale_mass_and_inertia_from_the_nominal_model_at_reset():
    cs = load_contexts(context_file())
    env = make_env(None)
    nominal_mass = env.unwrapped.model.body_mass.copy()
    nominal_inertia = env.unwrapped.model.body_inertia.copy()
    env.close()
    for name, kg in (("heavy", [9.0, 9.0, 8.5, 10.0]), ("light", [0.5, 0.5, 0.3, 0.7])):
        env = make_env(cs.named(name))
        for _ in range(2):  # a second reset does not scale again
            _, info = env.reset(seed=0)
        m = env.unwrapped.model
        assert info["context"] == name
        assert m.body_mass[1:] == pytest.approx(kg, rel=1e-3)  # the paper's Table 6 (torso, thigh, leg, foot)
        np.testing.assert_allclose(m.body_inertia[1:] / nominal_inertia[1:],
                                   np.broadcast_to((m.body_mass[1:] / nominal_mass[1:])[:, None], (4, 3)), rtol=1e-9)
        env.close()
    hard = make_env(cs.named("hard"))
    hard.reset(seed=0)
    assert hard.unwrapped.model.dof_damping[3:] == pytest.approx([0.1] * 3)
    assert hard.unwrapped.model.geom_friction[:, 0] == pytest.approx([0.1, 0.09, 0.09, 0.09, 0.2])
    hard.close()


def test_a_context_kind_without_meaning_on_a_plain_model_is_refused():
    from morl_robot.contexts.gym_mujoco import MujocoContextWrapper

    laggy = load_contexts("sawyer_peg_in_hole").named("laggy_link")
    env = make_env(None)
    with pytest.raises(ConfigError, match="kind jitter cannot apply to a plain MuJoCo model"):
        MujocoContextWrapper(env, laggy)
    env.close()


def test_dry_run_and_argument_errors(tmp_path, capsys):
    assert main(["experiment", "hopper-dynamics", "--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "mo-mpo, sac x 3 seeds, 6000 training steps" in out and "contexts nominal, light, heavy" in out
    assert "estimated wall time" in out
    assert main(["experiment", "hopper-dynamics", "--out", str(tmp_path), "--seeds", "0", "--dry-run"]) == 2
    assert "--seeds must be >= 1" in capsys.readouterr().err
    assert main(["experiment", "hopper-dynamics", "--out", str(tmp_path), "--contexts", "moon", "--dry-run"]) == 2
    assert "no context 'moon'" in capsys.readouterr().err


def test_a_tiny_budget_runs_both_methods_and_resumes(tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    argv = ["experiment", "hopper-dynamics", "--out", str(tmp_path), "--steps", "64", "--seeds", "1",
            "--min-replay", "32", "--max-episode-steps", "20", "--eval-episodes", "1", "--points", "2",
            "--contexts", "nominal,heavy", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| heavy |" in out and "MORL 2109 vs SAC 474" in out
    results = json.loads((tmp_path / "results.json").read_text())
    assert "provenance" in results
    heavy = results["contexts"]["heavy"]
    assert set(heavy) == {"do_nothing", "random", "mo-mpo", "sac"}
    assert heavy["random"]["hypervolume"] > 0 and "| random |" in (tmp_path / "results.md").read_text()
    for key in ("scalar_best", "hypervolume"):
        assert np.isfinite(heavy["sac"][key]["iqm"]) and np.isfinite(heavy["mo-mpo"][key]["iqm"])
    assert heavy["do_nothing"]["hypervolume"] > 0 and (tmp_path / "returns.png").stat().st_size > 0
    run = json.loads((tmp_path / "runs" / "mo-mpo_s0" / "result.json").read_text())
    assert len(run["contexts"]["heavy"]) == len(run["preferences"]) >= 2
    assert main(argv + ["--dry-run"]) == 0  # both runs kept: nothing left to train
    assert "2 runs, 2 done" in capsys.readouterr().out
    # kept runs at another budget are refused, not summarised as this one
    assert main([("48" if a == "64" else a) for a in argv]) == 2
    assert "was trained for 64 steps, not --steps 48" in capsys.readouterr().err
    # the how-to's command (docs/howto/generalization.md): its plan
    docs = ["experiment", "hopper-dynamics", "--steps", "6000", "--seeds", "3", "--out", str(tmp_path / "full")]
    assert main(docs + ["--dry-run"]) == 0
    assert "mo-mpo, sac x 3 seeds, 6000 training steps" in capsys.readouterr().out
