"""Reward machines as data: guard parsing, exact validation, the MORM product (MORM paper §3)."""
import itertools

import numpy as np
import pytest

from morl_robot.errors import ConfigError
from morl_robot.reward_machines import build_product, load_machine, machine_from_mapping
from morl_robot.reward_machines.guards import parse_guard

VARIANTS = ("term", "once", "cycle")


def _machine(states, **extra):
    data = {"name": "m", "propositions": ["a", "b"], "initial": "u0", "states": states}
    data.update(extra)
    return machine_from_mapping(data, source="m.yaml")


@pytest.mark.parametrize("text, true_on", [
    ("a", [{"a"}, {"a", "b"}]),
    ("a & !b", [{"a"}]),
    ("not a and not b", [set()]),
    ("a | b", [{"a"}, {"b"}, {"a", "b"}]),
    ("!(a || b)", [set()]),
    ("true", [set(), {"a"}, {"b"}, {"a", "b"}]),
    ("a && (b | false)", [{"a", "b"}]),
])
def test_guard_truth_table_matches_direct_evaluation(text, true_on):
    g = parse_guard(text)
    table = g.table(["a", "b"])
    for mask, sigma in enumerate([set(), {"a"}, {"b"}, {"a", "b"}]):
        assert table[mask] == (sigma in true_on) == g.holds(sigma)


@pytest.mark.parametrize("text", ["a &", "(a | b", "a b", "and", "a $ b", ""])
def test_guard_syntax_errors(text):
    with pytest.raises(ValueError):
        parse_guard(text)


def test_button_world_machines_load_and_step():
    m = load_machine("button_world/abb_term")
    assert m.propositions == ("a", "b") and m.terminal == {"done"} and m.unreachable == ()
    u = m.initial_index
    rewards = []
    for event in ["b", "a", "a", "b", "a", "b", "b"]:  # b ignored, a.., b, a resets to u1, b, b pays
        u, r = m.step(u, m.mask({event}))
        rewards.append(r)
    assert m.states[u] == "done" and rewards == [0, 0, 0, 0, 0, 0, 1.0]
    with pytest.raises(ValueError, match="violates its assumption"):
        m.step(m.initial_index, m.mask({"a", "b"}))


def test_overlapping_guards_are_named_with_a_witness():
    with pytest.raises(ConfigError, match=r"m.yaml: reward machine 'm': state 'u0': guards 'a' and 'a \| b' are not "
                                          r"mutually exclusive: both hold on \{a\}"):
        _machine({"u0": [{"guard": "a", "to": "u0"}, {"guard": "a | b", "to": "u0"}, {"guard": "else", "to": "u0"}]})


def test_non_exhaustive_guards_are_named_with_a_witness():
    with pytest.raises(ConfigError, match=r"state 'u0': guards are not exhaustive: none holds on \{b\}"):
        _machine({"u0": [{"guard": "a", "to": "u0"}, {"guard": "!a & !b", "to": "u0"}]})


def test_unsatisfiable_guard_under_assumption():
    with pytest.raises(ConfigError, match=r"state 'u0': guard 'a & b' is unsatisfiable under assume"):
        _machine({"u0": [{"guard": "a & b", "to": "u0"}, {"guard": "else", "to": "u0"}]}, assume="!(a & b)")


@pytest.mark.parametrize("states, extra, message", [
    ({"u0": [{"guard": "c", "to": "u0"}]}, {}, r"undeclared proposition\(s\) \['c'\]"),
    ({"u0": [{"guard": "true", "to": "u9"}]}, {}, r"target 'u9' is not a state"),
    ({"u0": []}, {}, r"state 'u0' has no outgoing edges and is not terminal"),
    ({"u0": [{"guard": "true", "to": "u0"}]}, {"terminal": ["u0"]}, r"terminal but has 1 outgoing"),
    ({"u0": [{"guard": "true", "to": "u0"}]}, {"initial": "x"}, r"key 'initial': 'x' is not a state"),
    ({"u0": [{"guard": "true", "to": "u0"}, {"guard": "else", "to": "u0"}]}, {}, r"'else' is unsatisfiable"),
    ({"u0": [{"guard": "a (", "to": "u0"}]}, {}, r"edge 0: guard 'a \('"),
])
def test_invalid_machines_name_the_state_and_guard(states, extra, message):
    with pytest.raises(ConfigError, match=message):
        _machine(states, **extra)


def test_wrong_types_name_the_key():
    with pytest.raises(ConfigError, match=r"key 'states.u0\[0\].reward': expected a number"):
        _machine({"u0": [{"guard": "true", "to": "u0", "reward": "lots"}]})


def test_unreachable_states_are_reported_not_rejected():
    m = _machine({"u0": [{"guard": "true", "to": "u0"}], "orphan": [{"guard": "true", "to": "u0"}]})
    assert m.unreachable == ("orphan",)


def test_term_term_product_has_five_nonterminal_states_as_in_the_paper():
    p = build_product([load_machine("button_world/abb_term"), load_machine("button_world/baa_term")])
    assert p.num_nonterminal == 5  # MORM paper B.1: five instead of the nine of the full product
    names = {p.state_name(s) for s in p.nonterminal_states}
    assert "(u1, u1)" not in names  # incompatible histories are unreachable


@pytest.mark.parametrize("x, y", list(itertools.product(VARIANTS, VARIANTS)))
def test_product_agrees_with_running_the_machines_separately(x, y):
    m1, m2 = load_machine(f"button_world/abb_{x}"), load_machine(f"button_world/baa_{y}")
    p = build_product([m1, m2])
    rng = np.random.default_rng(0)
    for _ in range(20):
        s, u1, u2 = 0, m1.initial_index, m2.initial_index
        for _ in range(30):
            sigma = [set(), {"a"}, {"b"}][rng.integers(3)]
            s, r = p.step(s, p.mask(sigma))
            u1, r1 = m1.step(u1, m1.mask(sigma))
            u2, r2 = m2.step(u2, m2.mask(sigma))
            assert p.states[s] == (u1, u2) and list(r) == [r1, r2]
            assert p.terminal[s] == (m1.is_terminal(u1) or m2.is_terminal(u2))
            if p.terminal[s]:
                break


def test_product_bfs_reaches_exactly_the_reachable_tuples():
    m1, m2 = load_machine("button_world/abb_once"), load_machine("button_world/baa_once")
    p = build_product([m1, m2])
    assert p.num_states == len(set(p.states))
    # every state has a predecessor path from u0: BFS over the tables again
    seen, frontier = {0}, [0]
    while frontier:
        s = frontier.pop()
        for v in p.next_state[s][p.possible]:
            if int(v) not in seen:
                seen.add(int(v))
                frontier.append(int(v))
    assert seen == set(range(p.num_states))
