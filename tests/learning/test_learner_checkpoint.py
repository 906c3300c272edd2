"""Learner update, checkpoints (resume, corruption, SIGKILL), replay and config validation."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.errors import ConfigError
from morl_robot.learning import (
    ActionSpec,
    MOMPOLearner,
    MPOConfig,
    SequenceReplay,
    load_learner_config,
)
from morl_robot.learning.checkpoint import (
    CheckpointError,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    save_checkpoint,
)
from morl_robot.learning.config import NetworkConfig
from morl_robot.learning.replay import SampleToInsertRatio

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[2]


def small_config(**changes) -> MPOConfig:
    base = MPOConfig(batch_size=16, num_samples=6, sequence_length=4, n_step=3, target_update_period=3,
                     networks=NetworkConfig(policy_hidden=[32, 32], critic_hidden=[32, 32]))
    return base.replace(**changes)


def filled_replay(spec: ActionSpec, obs_dim: int = 5, k: int = 2, steps: int = 200, seed: int = 0) -> SequenceReplay:
    rng = np.random.default_rng(seed)
    replay = SequenceReplay(500, obs_dim, spec.dim, k, discrete=spec.is_discrete, seed=seed)
    obs = rng.normal(size=obs_dim)
    for t in range(steps):
        a = int(rng.integers(spec.num_actions)) if spec.is_discrete else rng.uniform(-1, 1, spec.dim).astype(np.float32)
        nxt = rng.normal(size=obs_dim)
        replay.add(obs, a, rng.normal(size=k), nxt, t % 23 == 22, t % 31 == 30, float(rng.normal()))
        obs = nxt
    return replay


@pytest.mark.parametrize("spec", [ActionSpec.box(3), ActionSpec.discrete(4)], ids=["box", "discrete"])
@pytest.mark.parametrize("algorithm,target", [("mo_mpo", "retrace"), ("scalarized_mpo", "n_step")])
def test_update_reports_named_statistics(spec: ActionSpec, algorithm: str, target: str) -> None:
    cfg = small_config(algorithm=algorithm, critic_target=target, objective_names=["task", "force"])
    learner = MOMPOLearner(5, spec, 2, cfg)
    stats = learner.update(filled_replay(spec).sample(16, 4))
    assert all(isinstance(v, float) and np.isfinite(v) for v in stats.values())
    for name in ("task", "force"):
        for key in ("q_min", "q_mean", "q_max", "loss_critic"):
            assert f"{key}/{name}" in stats
    temps = ["scalarized"] if algorithm == "scalarized_mpo" else ["task", "force"]
    for t in temps:
        assert f"temperature/{t}" in stats and f"kl_q/{t}" in stats
    assert ("kl_categorical" in stats) if spec.is_discrete else ("kl_mean" in stats and "kl_stddev" in stats)
    assert {"loss/critic", "loss/policy", "loss/temperature"} <= set(stats)
    a, log_p = learner.act(np.zeros(5, np.float32))
    assert np.isfinite(log_p)
    if not spec.is_discrete:
        assert a.shape == (3,) and np.all(np.abs(a) <= 1)


def test_exact_temperature_solver_sets_kl_to_epsilon() -> None:
    cfg = small_config(temperature_solver="exact", epsilons=[0.1, 0.05])
    learner = MOMPOLearner(5, ActionSpec.box(2), 2, cfg)
    learner.target_critic.out.weight.data.normal_()  # non-trivial Q-values
    stats = learner.update(filled_replay(ActionSpec.box(2)).sample(16, 4))
    assert stats["kl_q/objective_0"] == pytest.approx(1.0, rel=1e-3)  # KL / ε_k
    assert stats["kl_q/objective_1"] == pytest.approx(1.0, rel=1e-3)


def test_zero_epsilon_objective_has_no_influence_on_the_policy() -> None:
    spec = ActionSpec.box(2)
    batch = filled_replay(spec).sample(16, 4)
    params = []
    for perturb in (False, True):
        learner = MOMPOLearner(5, spec, 2, small_config(epsilons=[0.1, 0.0]), seed=3)
        learner.target_critic.out.weight.data[0].normal_()
        if perturb:  # change objective 1's critic (the K critics are separate ensemble members)
            with torch.no_grad():
                learner.target_critic.out.weight.data[1].normal_(std=10.0)
                learner.target_critic.first.weight.data[1].normal_()
        learner.update(batch)
        params.append(torch.cat([p.detach().flatten() for p in learner.policy.parameters()]))
    assert torch.equal(params[0], params[1])


def _state(learner: MOMPOLearner, replay: SequenceReplay) -> dict:
    return {"learner": learner.state_dict(), "replay": replay.state_dict()}


def test_resume_gives_the_same_next_updates(tmp_path: Path) -> None:
    spec = ActionSpec.box(2)
    cfg = small_config()
    learner = MOMPOLearner(5, spec, 2, cfg, seed=0)
    replay = filled_replay(spec)
    for _ in range(4):
        learner.update(replay.sample(16, 4))
    save_checkpoint(tmp_path, 4, _state(learner, replay))
    expected = [learner.update(replay.sample(16, 4)) for _ in range(3)]  # crosses a target update

    payload = load_checkpoint(list_checkpoints(tmp_path)[-1])
    resumed = MOMPOLearner(5, spec, 2, cfg, seed=123)  # different init: everything must come from the file
    resumed.load_state_dict(payload["learner"])
    replay2 = SequenceReplay(500, 5, 2, 2, seed=99)
    replay2.load_state_dict(payload["replay"])
    got = [resumed.update(replay2.sample(16, 4)) for _ in range(3)]
    assert got == expected
    assert resumed.num_updates == learner.num_updates == 7


def test_keeps_last_two_and_corrupt_checkpoint_names_file_and_keeps_previous(tmp_path: Path) -> None:
    for step in (10, 20, 30):
        save_checkpoint(tmp_path, step, {"step": step, "x": torch.arange(1000)})
    files = list_checkpoints(tmp_path)
    assert [f.name for f in files] == ["ckpt-000000000020.pt", "ckpt-000000000030.pt"]
    newest = files[-1]
    newest.write_bytes(newest.read_bytes()[:-100])  # truncate
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(newest)
    assert str(newest) in str(info.value) and "ckpt-000000000020.pt" in str(info.value)
    with pytest.raises(CheckpointError):
        load_latest(tmp_path, fallback=False)
    with pytest.warns(RuntimeWarning):
        path, payload = load_latest(tmp_path, fallback=True)
    assert path.name == "ckpt-000000000020.pt" and payload["step"] == 20
    assert files[0].exists()
    # A flipped byte in the payload is caught by the checksum.
    data = bytearray(files[0].read_bytes())
    data[-5] ^= 0xFF
    files[0].write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum"):
        load_checkpoint(files[0])


def test_sigkill_during_checkpoint_loop_leaves_a_readable_checkpoint(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, torch
        sys.path.insert(0, {str(REPO)!r})
        from morl_robot.learning.checkpoint import save_checkpoint
        step = 0
        while True:
            step += 1
            save_checkpoint({str(tmp_path)!r}, step, {{"step": step, "data": torch.full((400_000,), float(step))}})
        """
    )
    for delay in (0.7, 1.1, 1.6):
        proc = subprocess.Popen([sys.executable, "-c", script])
        try:
            deadline = time.monotonic() + 60
            while len(list_checkpoints(tmp_path)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(delay)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        path, payload = load_latest(tmp_path, fallback=False)
        assert payload["step"] == int(path.name[5:17])
        assert torch.all(payload["data"] == float(payload["step"]))


def test_replay_sequences_respect_episode_boundaries() -> None:
    replay = SequenceReplay(64, 1, 1, 1, seed=0)
    t_global = 0
    for episode in range(10):
        for t in range(5):
            end = t == 4
            replay.add(np.array([t_global]), np.zeros(1), np.array([t_global]), np.array([t_global + 1]),
                       terminated=end and episode % 2 == 0, truncated=end and episode % 2 == 1, behaviour_log_prob=0.0)
            t_global += 1
        t_global += 1  # the final observation gets its own slot id
    batch = replay.sample(256, 4)
    obs, rew, mask = batch.observations[..., 0], batch.rewards[..., 0], batch.mask
    valid = mask > 0
    assert np.all(valid[0])
    # next observation of every valid step is obs + 1, and reward ids are consecutive within a sequence
    assert np.all((obs[1:][valid] - obs[:-1][valid]) == 1)
    assert np.all(rew[valid] == obs[:-1][valid])
    assert np.all(np.diff(mask, axis=0) <= 0)  # once cut, stays cut
    # episodes end after 5 steps: no sequence contains more than the rest of its episode
    ends = batch.terminated + batch.truncated
    for b in range(256):
        if ends[:, b].any():
            first = int(np.argmax(ends[:, b] > 0))
            assert np.all(mask[first + 1:, b] == 0)


def test_replay_wraps_and_counts() -> None:
    replay = SequenceReplay(10, 2, 1, 2, seed=0)
    for i in range(25):
        replay.add(np.full(2, i), np.zeros(1), np.zeros(2), np.full(2, i + 1), False, False, 0.0)
    assert len(replay) == 9  # one slot always holds the pending next observation
    b = replay.sample(50, 3)
    assert np.all(b.observations[0, :, 0] >= 15)
    m = b.mask > 0
    assert np.all((b.observations[1:, :, 0] - b.observations[:-1, :, 0])[m] == 1)


def test_sample_to_insert_ratio() -> None:
    lim = SampleToInsertRatio(samples_per_insert=4.0, min_size_to_sample=10, error_buffer=8.0)
    sampled = 0
    for _ in range(100):
        lim.insert()
        while lim.can_sample(2):
            lim.sample(2)
            sampled += 2
    assert sampled == pytest.approx(4.0 * (100 - 10), abs=10)


def test_config_files_load_and_errors_name_the_key(tmp_path: Path) -> None:
    mo = load_learner_config(REPO / "config/learner/mo_mpo.yaml")
    sc = load_learner_config(REPO / "config/learner/scalarized_mpo.yaml")
    assert mo.algorithm == "mo_mpo" and sc.algorithm == "scalarized_mpo"
    assert (mo.num_samples, mo.batch_size, mo.grad_clip, mo.target_update_period) == (20, 512, 40.0, 200)
    bad = tmp_path / "bad.yaml"
    bad.write_text("epsilons: [0.1, -0.2]\n")
    with pytest.raises(ConfigError, match=r"bad.yaml.*epsilons\[1\]"):
        load_learner_config(bad)
    bad.write_text("epsilon_mean: 0\n")
    with pytest.raises(ConfigError, match="epsilon_mean"):
        load_learner_config(bad)
    bad.write_text("networks:\n  critic_architecture: wide\n")
    with pytest.raises(ConfigError, match="networks.critic_architecture.*'separate'"):
        load_learner_config(bad)
    with pytest.raises(ConfigError, match="epsilons.*expected 3 values"):
        MOMPOLearner(4, ActionSpec.box(2), 3, MPOConfig(epsilons=[0.1, 0.2]))


@settings(max_examples=200, deadline=None)
@given(spi=st.floats(0.25, 64.0), min_size=st.integers(1, 500), buffer=st.floats(0.0, 4096.0),
       ops=st.lists(st.tuples(st.booleans(), st.integers(1, 256)), max_size=60))
def test_max_inserts_is_where_inserting_stops(spi, min_size, buffer, ops):
    """The actors' allowance (``max_inserts``) is exactly the limiter's own insert condition."""
    lim = SampleToInsertRatio(samples_per_insert=spi, min_size_to_sample=min_size, error_buffer=buffer)
    for is_insert, n in ops:
        lim.insert(n) if is_insert else lim.sample(n)
        assert lim.can_insert() == (lim.inserts < lim.max_inserts())
        before = lim.max_inserts()
        lim.sample(0)
        assert lim.max_inserts() == before  # depends on samples, grows as learning samples
