"""Back-pressure as an actor sees it (acting/experience.Allowance) and on the wire
(nodes/wire.allowance_message / read_allowance): rows the learner has not acknowledged count
against the allowance however far its subscription lags."""
from __future__ import annotations

import pytest

from morl_robot.acting.experience import Allowance


def run_actor(allowance: Allowance, learner_reads: int, chunk: int, rounds: int, acks: bool) -> int:
    """An actor emitting ``chunk`` rows at a time against a learner that reads only
    ``learner_reads`` rows and then stops reading (its queue grows), re-publishing its unchanged
    allowance after every chunk.  Returns the rows the actor emitted before it had to wait."""
    sent = 0
    received = min(sent, learner_reads)
    allowance.update(received, 100, sent, 0 if acks else None)
    for _ in range(rounds):
        if allowance.must_wait(sent, 0):
            break
        sent += chunk
        received = min(sent, learner_reads)
        allowance.update(received, received + 100 - received, sent, received if acks else None)
    return sent


def test_a_lagging_learner_is_not_overrun_when_it_acknowledges_rows():
    # the learner allows 100 rows; it has read 10 and its subscription queue holds the rest
    emitted = run_actor(Allowance(slack=8), learner_reads=10, chunk=8, rounds=1000, acks=True)
    assert emitted <= 100 + 8 + 8  # the allowance, the slack, one chunk decided before the count
    # without acknowledgements every re-published allowance re-bases the actor's count: it runs away
    runaway = run_actor(Allowance(slack=8), learner_reads=10, chunk=8, rounds=1000, acks=False)
    assert runaway == 8 * 1000


def test_rows_the_learner_counted_free_the_allowance():
    a = Allowance(slack=0)
    a.update(0, 50, sent=0, acknowledged=0)
    assert not a.must_wait(sent=40, held=0)
    assert a.must_wait(sent=50, held=0)  # 50 in flight, nothing counted yet
    a.update(50, 50, sent=50, acknowledged=50)  # all counted: the learner now owes updates
    assert a.must_wait(sent=50, held=0)
    a.update(50, 80, sent=50, acknowledged=50)  # it learned: 30 more allowed
    assert not a.must_wait(sent=60, held=10) and a.must_wait(sent=70, held=10)


def test_a_restarted_learner_rebases_the_count():
    a = Allowance(slack=0)
    a.update(0, 100, sent=0, acknowledged=0)
    a.update(90, 100, sent=90, acknowledged=90)
    assert a.in_flight(90) == 0
    # a new learner process: its counts start again; what was emitted before it is not in flight
    a.update(0, 64, sent=120, acknowledged=0)
    assert a.in_flight(120) == 0 and a.in_flight(130) == 10
    assert not a.must_wait(sent=130, held=0) and a.must_wait(sent=184, held=0)


def test_the_allowance_message_round_trips_and_refuses_other_arrays():
    pytest.importorskip("std_msgs")
    from morl_robot.nodes import wire

    msg = wire.allowance_message(120, 300, {3: 40, 0: 80})
    assert wire.read_allowance(msg) == (120.0, 300.0, {0: 80, 3: 40})
    assert wire.read_allowance(wire.labelled_array([1, 2], wire.ALLOWANCE_LABELS)) == (1.0, 2.0, {})
    assert wire.read_allowance(wire.labelled_array([1, 2], ("a", "b"))) is None
    assert wire.read_allowance(wire.labelled_array([1, 2, 3], wire.ALLOWANCE_LABELS + ("other",))) is None
