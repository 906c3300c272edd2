"""ExperienceIngest (pure): layout checks, sequence breaks, per-actor episode returns across chunks."""
from __future__ import annotations

import numpy as np
import pytest

from morl_robot.learning.replay import SequenceReplay
from morl_robot.nodes import wire
from morl_robot.training.ingest import ExperienceError, ExperienceIngest

OBS = ("x", "y")
ACT = ("vx",)
OBJ = ("task", "force")
COLUMNS = wire.experience_columns(OBS, ACT, OBJ)


def make_ingest(capacity: int = 64, normalizer=None) -> ExperienceIngest:
    replay = SequenceReplay(capacity, len(OBS), len(ACT), len(OBJ), seed=0)
    return ExperienceIngest(replay, COLUMNS, OBJ, normalizer=normalizer)


def trajectory(actor: int, episode: int, first_step: int, n: int, start: float, end_with: str = "") -> np.ndarray:
    """``n`` consecutive transitions as a chunk table; observation i is (start + i, -(start + i)),
    rewards (1, -0.5) per step; the last row is terminated/truncated if ``end_with`` says so."""
    rows = np.zeros((n, len(COLUMNS)))
    col = {c: i for i, c in enumerate(COLUMNS)}
    for i in range(n):
        o = start + i
        rows[i, col["actor"]] = actor
        rows[i, col["policy_version"]] = 3
        rows[i, col["episode"]] = episode
        rows[i, col["step"]] = first_step + i
        rows[i, col["obs/x"]], rows[i, col["obs/y"]] = o, -o
        rows[i, col["next_obs/x"]], rows[i, col["next_obs/y"]] = o + 1, -(o + 1)
        rows[i, col["action/vx"]] = 0.5
        rows[i, col["log_prob"]] = -0.7
        rows[i, col["reward/task"]], rows[i, col["reward/force"]] = 1.0, -0.5
    if end_with:
        rows[-1, col[end_with]] = 1.0
    return rows


def add(ingest: ExperienceIngest, rows: np.ndarray, columns=COLUMNS):
    return ingest.add(wire.split_experience(rows, columns), columns)


def test_chunk_end_inside_an_episode_is_a_bootstrapped_sequence_break():
    ingest = make_ingest()
    r0 = add(ingest, trajectory(actor=0, episode=1, first_step=0, n=3, start=10.0))  # episode goes on
    r1 = add(ingest, trajectory(actor=1, episode=1, first_step=0, n=3, start=-50.0))  # another actor
    assert (r0.transitions, r0.breaks, r0.episodes) == (3, 1, [])
    assert len(ingest.replay) == 6
    batch = ingest.replay.sample(400, sequence_length=4)
    obs, mask = batch.observations[..., 0], batch.mask  # [T+1, B], [T, B]
    for b in range(batch.batch_size):
        valid = int(mask[:, b].sum())
        seq = obs[: valid + 1, b]  # the valid steps and the bootstrap observation after them
        assert np.all(seq > 0) or np.all(seq < 0), "a sequence crossed from one actor's chunk into another's"
        if valid and seq[0] == 12.0:  # the chunk's last transition: cut, not terminated
            assert valid == 1 and batch.truncated[0, b] == 1 and batch.terminated[0, b] == 0
            assert seq[1] == 13.0  # V(s') is taken at the transition's real next observation
    # no episode ended: the returns keep accumulating in the next chunk of actor 0 (below)
    assert r1.breaks == 1 and ingest.episodes == 0


def test_episode_returns_accumulate_across_interleaved_chunks_of_the_same_actor():
    ingest = make_ingest()
    add(ingest, trajectory(0, episode=4, first_step=0, n=3, start=0.0))
    add(ingest, trajectory(1, episode=9, first_step=0, n=2, start=100.0))
    r = add(ingest, trajectory(0, episode=4, first_step=3, n=4, start=3.0, end_with="terminated"))
    assert r.breaks == 0  # the chunk ends with the episode: no extra cut
    (rec,) = r.episodes
    assert (rec.actor, rec.episode, rec.length, rec.terminated, rec.complete) == (0, 4, 7, True, True)
    np.testing.assert_allclose(rec.returns, [7.0, -3.5])
    r = add(ingest, trajectory(1, episode=9, first_step=2, n=1, start=102.0, end_with="truncated"))
    (rec,) = r.episodes
    assert (rec.actor, rec.length, rec.terminated) == (1, 3, False)
    np.testing.assert_allclose(rec.returns, [3.0, -1.5])
    counts = ingest.actor_counts()
    assert counts[0]["transitions"] == 7 and counts[0]["chunks"] == 2 and counts[0]["episodes"] == 1
    assert counts[1]["transitions"] == 3 and counts[1]["chunks"] == 2 and counts[1]["episodes"] == 1
    assert ingest.transitions == len(ingest.replay) == 10
    # terminated is stored as terminated (no bootstrap), the truncated end as truncated
    batch = ingest.replay.sample(300, 2)
    starts = batch.observations[0, :, 0]
    assert np.all(batch.terminated[0][starts == 6.0] == 1)
    assert np.all(batch.truncated[0][starts == 102.0] == 1)


def test_a_new_episode_inside_a_chunk_starts_a_fresh_return_and_a_gap_is_a_break():
    ingest = make_ingest()
    rows = np.concatenate([trajectory(0, 1, 0, 2, 0.0, end_with="terminated"), trajectory(0, 2, 0, 3, 20.0)])
    rows[3, 4:6] = [99.0, -99.0]  # row 3's observation is not row 2's next observation: a lost step
    r = add(ingest, rows)
    assert [e.episode for e in r.episodes] == [1] and r.episodes[0].length == 2
    assert r.breaks == 2  # the gap (row 2 → 3) and the chunk end
    r = add(ingest, trajectory(0, 2, 3, 1, 23.0, end_with="terminated"))
    (rec,) = r.episodes
    assert rec.length == 4 and not rec.complete  # a step of it went missing


def test_episode_whose_start_was_not_seen_is_reported_incomplete():
    ingest = make_ingest()  # e.g. the learner restarted while actor 5 was mid-episode
    r = add(ingest, trajectory(5, episode=2, first_step=40, n=3, start=0.0, end_with="truncated"))
    assert r.episodes[0].complete is False
    r = add(ingest, trajectory(5, episode=3, first_step=0, n=2, start=10.0, end_with="terminated"))
    assert r.episodes[0].complete is True
    # a missing chunk in the middle of an episode: the next chunk does not link up
    add(ingest, trajectory(5, episode=4, first_step=0, n=2, start=50.0))
    r = add(ingest, trajectory(5, episode=4, first_step=5, n=2, start=55.0, end_with="terminated"))
    assert r.episodes[0].complete is False and r.episodes[0].length == 4
    # an episode abandoned without an end row is counted as lost
    add(ingest, trajectory(5, episode=6, first_step=0, n=2, start=70.0))
    add(ingest, trajectory(5, episode=7, first_step=0, n=2, start=80.0))
    assert ingest.actor_counts()[5]["lost_episodes"] == 1


@pytest.mark.parametrize("change, message", [
    (lambda c: [x.replace("obs/y", "obs/z") for x in c], "missing ['obs/y', 'next_obs/y']"),
    (lambda c: [x for x in c if x != "reward/force"], "missing ['reward/force']"),
    (lambda c: list(c[:4]) + [c[5], c[4]] + list(c[6:]), "column 4 is 'obs/y' where the learner expects 'obs/x'"),
])
def test_columns_that_do_not_match_the_task_are_rejected_by_name(change, message):
    ingest = make_ingest()
    columns = change(COLUMNS)
    rows = trajectory(0, 1, 0, 3, 0.0)[:, : len(columns)]
    with pytest.raises(ExperienceError, match="do not match the learner's task") as err:
        ingest.add(wire.split_experience(rows, columns), columns)
    assert message in str(err.value)
    assert ingest.rejected == 1 and message in ingest.last_rejection
    assert len(ingest.replay) == 0 and ingest.transitions == 0 and not ingest.actors


@pytest.mark.parametrize("column, value, message", [
    ("obs/x", np.nan, "field 'obs' has a non-finite value at index [1, 0]"),
    ("reward/task", np.inf, "field 'reward' has a non-finite value"),
    ("reward/force", 1e300, "field 'reward' has a non-finite value at index [1, 1] (1e+300"),  # inf as float32
    ("action/vx", 1.5, "actions must be normalised to [-1, 1]"),
])
def test_bad_values_are_rejected_and_nothing_is_inserted(column, value, message):
    ingest = make_ingest()
    rows = trajectory(0, 1, 0, 3, 0.0)
    rows[1, COLUMNS.index(column)] = value
    with pytest.raises(ExperienceError) as err:
        add(ingest, rows)
    assert message in str(err.value)
    assert ingest.rejected == 1 and len(ingest.replay) == 0
    add(ingest, trajectory(0, 1, 0, 3, 0.0))  # a good chunk afterwards is taken
    assert len(ingest.replay) == 3 and ingest.rejected == 1


def test_chunk_objectives_must_match_and_wrong_sized_arrays_are_named():
    ingest = make_ingest()
    other = wire.experience_columns(OBS, ACT, ("force", "task"))
    chunk = wire.split_experience(trajectory(0, 1, 0, 2, 0.0), other)
    with pytest.raises(ExperienceError, match=r"objectives \['force', 'task'\] differ"):
        ingest.add(chunk)  # no column list given: the chunk's own objective names are checked
    keep = [i for i, c in enumerate(COLUMNS) if not c.endswith("obs/y")]  # a one-component observation
    short = wire.split_experience(trajectory(0, 1, 0, 2, 0.0)[:, keep], [COLUMNS[i] for i in keep])
    with pytest.raises(ExperienceError, match=r"'obs' has shape \(2, 1\), expected \(2, 2\)"):
        ingest.add(short)
    ingest.reject("malformed message: layout says 3x40")
    assert ingest.rejected == 3 and ingest.last_rejection.startswith("malformed")


def test_observations_update_the_running_normalizer():
    normalization = pytest.importorskip("morl_robot.learning.normalization")
    norm = normalization.RunningNormalizer(len(OBS))
    ingest = make_ingest(normalizer=norm)
    a, b = trajectory(0, 1, 0, 4, 0.0), trajectory(1, 1, 0, 6, 10.0)
    add(ingest, a)
    add(ingest, b)
    obs = np.concatenate([a[:, 4:6], b[:, 4:6]])
    assert norm.count == pytest.approx(10)
    np.testing.assert_allclose(norm.mean, obs.mean(0))
    np.testing.assert_allclose(norm.std, obs.std(0), rtol=1e-4)
    with pytest.raises(ExperienceError):
        add(ingest, trajectory(0, 1, 0, 2, 0.0), COLUMNS[:4] + (COLUMNS[5], COLUMNS[4]) + COLUMNS[6:])  # rejected
    assert norm.count == pytest.approx(10)


def test_counters_survive_a_state_dict_round_trip():
    ingest = make_ingest()
    add(ingest, trajectory(0, 1, 0, 3, 0.0, end_with="terminated"))
    add(ingest, trajectory(7, 1, 0, 2, 5.0))
    with pytest.raises(ExperienceError):
        add(ingest, trajectory(0, 1, 0, 2, np.nan))
    fresh = make_ingest()
    fresh.load_state_dict(ingest.state_dict())
    assert fresh.actor_counts() == ingest.actor_counts()
    assert (fresh.transitions, fresh.chunks, fresh.episodes, fresh.rejected) == (5, 2, 1, 1)
