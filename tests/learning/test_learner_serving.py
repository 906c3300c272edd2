"""The learner core serving distributed actors (no ROS): :meth:`LearnerSession.receive` inserts
or rejects experience messages (counted once, logged with a rate limit, never fatal),
:meth:`LearnerSession.tick` hands out changed allowances and finishes at ``total_steps``, and
:meth:`LearnerSession.diagnostics` reports rates and recent rejections."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from morl_robot.errors import WireError
from morl_robot.learning.checkpoint import list_checkpoints, run_checkpoint_dir
from morl_robot.learning.networks import ActionSpec
from morl_robot.training.session import LearnerSession

sys.path.insert(0, str(Path(__file__).parent))
from test_learner_sanity import bandit_config

torch.set_num_threads(1)
OBS, ACT, K = 3, 2, 2
COLUMNS = ("actor", "policy_version", "episode", "step", *(f"obs/{i}" for i in range(OBS)),
           *(f"action/{i}" for i in range(ACT)), "log_prob", "reward/a", "reward/b",
           *(f"next_obs/{i}" for i in range(OBS)), "terminated", "truncated")


@dataclasses.dataclass
class Chunk:
    actor: int
    policy_version: np.ndarray
    episode: np.ndarray
    step: np.ndarray
    obs: np.ndarray
    action: np.ndarray
    log_prob: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray


def chunk(rows: int, start: int = 0, action: float = 0.5) -> Chunk:
    obs = np.arange(start, start + rows + 1, dtype=np.float64)[:, None].repeat(OBS, 1)
    return Chunk(0, np.ones(rows), np.ones(rows), np.arange(start, start + rows, dtype=np.float64), obs[:-1],
                 np.full((rows, ACT), action), np.zeros(rows), np.ones((rows, K)), obs[1:],
                 np.zeros(rows, bool), np.zeros(rows, bool))


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def serving(tmp_path: Path | None = None, **options: Any) -> tuple[LearnerSession, list[tuple[str, str]], Clock]:
    cfg = bandit_config([0.1, 0.1])
    cfg = dataclasses.replace(cfg, objective_names=["a", "b"], batch_size=16,
                              replay=dataclasses.replace(cfg.replay, samples_per_insert=8.0, min_size_to_sample=32),
                              training=dataclasses.replace(cfg.training, checkpoint_every=40))
    logs: list[tuple[str, str]] = []
    clock = Clock()
    session = LearnerSession(OBS, ActionSpec.box(ACT), K, cfg, run_dir=tmp_path, clock=clock,
                             log=lambda level, message: logs.append((level, message)), **options)
    session.accept_experience(COLUMNS)
    session.start()
    session.begin_serving()
    return session, logs, clock


def offer(session: LearnerSession, c: Any, columns: tuple[str, ...] = COLUMNS) -> bool:
    return session.receive(lambda: (c, columns), lambda table, cols: table)


def test_a_fitting_chunk_is_inserted_and_due_checkpoints_are_written(tmp_path: Path) -> None:
    session, _, clock = serving(tmp_path)
    assert offer(session, chunk(24)) and offer(session, chunk(24, start=24))
    assert session.counters["env_steps"] == 48 and session.counters["chunks"] == 2
    assert [p.name for p in list_checkpoints(run_checkpoint_dir(tmp_path))] == ["ckpt-000000000048.pt"]
    clock.t += 2.0
    level, _, values = session.diagnostics()
    assert (level, values["transitions_per_s"], values["chunks"]) == ("ok", 24.0, 2)
    assert values["rejected_chunks"] == 0 and "updates_per_s" in values


def test_rejections_are_counted_once_logged_at_most_every_5_s_and_warned_for_10_s() -> None:
    session, logs, clock = serving()
    assert not offer(session, chunk(8), COLUMNS[:-1])  # a column missing
    assert not offer(session, chunk(8, action=3.0))  # not normalised: the ingest's own check
    assert session.ingest.rejected == 2 and session.counters["env_steps"] == 0
    assert [lvl for lvl, _ in logs] == ["warning"]  # the second within 5 s: counted, not logged
    assert "rejected experience chunk #1: experience columns do not match" in logs[0][1]
    assert session.ingest.last_rejection.startswith("experience actions must be normalised")
    level, message, values = session.diagnostics()
    assert level == "warn" and message.startswith("rejected experience: experience actions must be normalised")
    assert values["rejected_chunks"] == 2
    clock.t += 5.0
    def malformed() -> Any:
        raise WireError("3 dimensions")

    assert not session.receive(malformed, lambda t, c: t)
    assert logs[-1] == ("warning", "rejected experience chunk #3: 3 dimensions")
    assert session.ingest.last_rejection == "malformed experience chunk: 3 dimensions"
    clock.t += 10.0
    assert session.diagnostics()[:2] == ("ok", "waiting for experience (0/32 transitions)")
    assert offer(session, chunk(8))  # the session goes on


def test_an_unexpected_decoding_error_drops_the_chunk_and_is_logged_as_an_error() -> None:
    session, logs, _ = serving()

    def broken(table: Any, columns: Any) -> Any:
        raise IndexError("row 3")

    assert not session.receive(lambda: (None, COLUMNS), broken)
    assert session.ingest.rejected == 1 and session.ingest.last_rejection == "IndexError: row 3"
    assert logs[-1] == ("error", "experience chunk failed (IndexError: row 3); chunk dropped")


def test_tick_hands_out_changed_allowances_and_finishes_at_total_steps() -> None:
    sent: list[tuple[int, int, dict[int, int]]] = []
    session, logs, _ = serving(on_allowance=sent.append, total_steps=64)
    assert not session.tick(deadline=float("inf"))
    assert sent == [(*session.allowance(), {})] and sent[0][0] == 0
    assert not session.tick(deadline=float("inf"))
    assert len(sent) == 1  # unchanged: not sent again
    assert offer(session, chunk(64))
    assert session.draining and "reached total_steps=64 (64 env steps)" in logs[-1][1]
    assert not offer(session, chunk(8, start=64))  # past total_steps: ignored, not rejected
    assert session.ingest.rejected == 0 and session.counters["env_steps"] == 64
    assert session.tick(deadline=float("inf"))  # the owed updates, then the final artefacts
    assert session.learner.num_updates > 0 and session.updates_owed() == 0 and not session.can_learn()
    assert sent[-1][:2] == (64, 64) and sum(sent[-1][2].values()) == 64 and session.status() == ("ok", "finished")


def test_receive_needs_the_experience_layout_first() -> None:
    cfg = bandit_config([0.1, 0.1])
    session = LearnerSession(OBS, ActionSpec.box(ACT), K, cfg)
    with pytest.raises(RuntimeError, match="receive before accept_experience"):
        offer(session, chunk(4))


def test_describe_names_what_is_learned_and_where(tmp_path: Path) -> None:
    session, _, _ = serving(tmp_path)
    line = session.describe(config_source="mompo_small")
    assert line.startswith(f"{OBS} observations, {ACT} actions, objectives ['a', 'b']; ") and "(mompo_small)" in line
    assert "batch 16×1, updates after 32 transitions at 8 samples/insert" in line and str(tmp_path) in line


def test_the_allowance_goes_out_when_serving_begins() -> None:
    """Actors act once they hold a policy and act freely while they have no allowance: the
    learner hands out its allowance as it begins serving (with its first policy), not at its first
    tick (under load that tick came after the actors had run far ahead)."""
    events: list[tuple[str, Any]] = []
    cfg = bandit_config([0.1, 0.1])
    cfg = dataclasses.replace(cfg, objective_names=["a", "b"], batch_size=16,
                              replay=dataclasses.replace(cfg.replay, samples_per_insert=8.0, min_size_to_sample=32))
    session = LearnerSession(OBS, ActionSpec.box(ACT), K, cfg, clock=Clock(),
                             on_allowance=lambda a: events.append(("allowance", a)),
                             on_snapshot=lambda version, data: events.append(("snapshot", version)))
    session.accept_experience(COLUMNS)
    session.start()
    assert events == []
    session.begin_serving()  # (no contract here, so no snapshot to publish)
    assert [kind for kind, _ in events] == ["allowance"]
    received, allowed, acknowledged = events[0][1]
    assert received == 0 and allowed >= 32 and acknowledged == {}
    session.tick(deadline=0.0)  # unchanged: not sent again
    assert [kind for kind, _ in events] == ["allowance"]
