"""The Shadow Hand contexts (issue 37, config/contexts/shadow_orient.yaml) apply: tactile noise
spreads the pad readings by its σ, a heavier peg changes what the hand feels and lifts."""
from __future__ import annotations

import numpy as np
import pytest

from morl_robot.contexts import load_contexts
from morl_robot.evaluation.protocol import load_policy


@pytest.fixture(scope="module")
def contexts():
    return load_contexts("shadow_orient")


def _tactile(context, steps: int, policy=None, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Pad readings (T, 15) and the return (K,) of ``steps`` steps of ``policy`` (None: hold still)."""
    pol = policy or load_policy("scripted", task="shadow_orient", action_mode="delta")
    env = pol.make_env()
    try:
        env.set_contexts(context)
        obs, _ = env.reset(seed=seed)
        readings, total = [], np.zeros(env.reward_dim)
        for _ in range(steps):
            action = np.clip(pol.act(obs), -1, 1) if policy is not None else np.zeros(env.action_space.shape)
            obs, r, terminated, truncated, info = env.step(action)
            readings.append(np.asarray(info["tactile"], float).copy())
            total += r
            if terminated or truncated:
                break
        return np.array(readings), total
    finally:
        env.close()


def test_tactile_noise_spreads_the_pad_readings_by_its_sigma(contexts) -> None:
    quiet, _ = _tactile(contexts.nominal, 20)  # holding still, nothing touched: the pads read 0
    noisy, _ = _tactile(contexts.named("noisy_tactile"), 20)
    sigma = contexts.held_out["noisy_tactile"]["tactile_noise"]
    assert np.abs(quiet).max() < 1e-6
    assert noisy.std() == pytest.approx(sigma, rel=0.15)  # 300 readings of N(0, σ)


@pytest.mark.parametrize("name", ["heavy_peg", "slippery_peg"])
def test_a_heavier_or_slippery_peg_changes_what_the_hand_feels_and_lifts(contexts, name) -> None:
    """The same grasp on the same seed feels other pad forces and cannot lift the peg: 3x its mass,
    or 0.4x the hand-peg friction (MuJoCo takes the larger friction of a contact's two geoms, so the
    context scales the hand's collision geoms with the peg: scaling the peg alone changed nothing)."""
    scripted = load_policy("scripted", task="shadow_orient", action_mode="delta")
    nominal, r_nominal = _tactile(contexts.nominal, 200, scripted)
    changed, r_changed = _tactile(contexts.named(name), 200, scripted)
    env = scripted.make_env()
    lift = list(env.objective_names).index("lift")
    env.close()
    assert not np.allclose(nominal, changed)
    assert r_changed[lift] < 0.5 * r_nominal[lift]


def test_the_committed_shadow_command_on_a_tiny_budget(tmp_path) -> None:
    """docs/howto/generalization.md's Shadow command (results/generalization/shadow_orient_nominal_trained)."""
    import json
    from pathlib import Path

    from morl_robot.cli import main

    root = Path(__file__).resolve().parents[2]
    policies = str(root / "results/shadow_orient_delta_front/policies/mo-mpo/eps_pain=0.1_seed{}.onnx")
    out = tmp_path / "shadow"
    assert main(["generalization", "--policies", f"nominal_trained={policies.format(0)},{policies.format(1)}", "zero",
                 "--contexts", "nominal,noisy_tactile", "--episodes", "1", "--out", str(out)]) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["task"] == "shadow_orient" and data["objectives"] == ["touch", "lift", "orient"]
    zero = json.loads(next((out / "evaluations").glob("zero_zero__nominal.json")).read_text())
    assert zero["per_episode"][0]["context"] == "nominal"
