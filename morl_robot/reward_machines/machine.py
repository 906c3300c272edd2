"""Reward machines as data: YAML → a validated, table-compiled automaton.

A (simple) reward machine R = ⟨U, u0, F, δ, λ⟩ over propositions P (MORM paper Def. 2; Toro Icarte
et al., 2022): on a transition of the environment the labelling function gives σ = L(s, a, s') ⊆ P,
the machine moves u → u' = δ(u, σ) and pays r = λ(u, σ).  Reaching a terminal state u ∈ F ends the
episode.

YAML (``config/reward_machines/*.yaml``)::

    name: abb_term
    description: press a, then b twice
    propositions: [a, b]
    assume: "!(a & b)"          # assignments that can occur (default: all); optional
    initial: u0
    terminal: [u3]
    states:                     # per state, its outgoing edges: guard, target, reward (default 0)
      u0: [{guard: a, to: u1}, {guard: else, to: u0}]
      ...
      u3: []                    # terminal states have no edges

``else`` is the complement of the state's other guards.  Validation is exact, over the truth table
of all 2**|P| assignments σ that satisfy ``assume``: every guard must be satisfiable, the guards
of a state mutually exclusive (no σ satisfies two) and exhaustive (every σ satisfies one); errors
name the file, the machine, the state and the guard(s), with a witness σ.  States not reachable
from the initial state are not an error; they are listed in :attr:`RewardMachine.unreachable`
(and by ``morl-robot rm inspect``).

Compiled form: ``next_state`` (|U|, 2**|P|) int and ``reward`` (|U|, 2**|P|) float tables;
impossible assignments (violating ``assume``) map to −1.  Terminal states loop to themselves with
reward 0.
"""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from morl_robot.configuration import from_mapping, load_yaml
from morl_robot.errors import ConfigError
from morl_robot.resources import resolve_config
from morl_robot.reward_machines.guards import (
    MAX_PROPOSITIONS,
    Guard,
    format_assignment,
    parse_guard,
)

__all__ = ["ELSE", "EdgeSpec", "MachineSpec", "RewardMachine", "load_machine", "machine_from_mapping", "machine_path"]

#: The guard keyword meaning "none of this state's other guards".
ELSE = "else"


@dataclass
class EdgeSpec:
    """One outgoing edge of a state: taken when ``guard`` holds; pays ``reward``."""

    guard: str | bool  # YAML reads a bare true/false as a bool
    to: str
    reward: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.guard, bool):
            self.guard = "true" if self.guard else "false"


@dataclass
class MachineSpec:
    """The YAML schema of one reward machine (see the module docstring)."""

    name: str
    propositions: list[str]
    initial: str
    states: dict[str, list[EdgeSpec]]
    terminal: list[str] = field(default_factory=list)
    assume: str | bool = "true"
    description: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.assume, bool):
            self.assume = "true" if self.assume else "false"


@dataclass(frozen=True)
class Edge:
    source: str
    guard: Guard
    target: str
    reward: float


@dataclass
class RewardMachine:
    """A validated reward machine with its transition/reward tables.

    Attributes: ``states`` (U, ordered as in the file), ``initial`` (u0), ``terminal`` (F),
    ``propositions`` (P, bit i of an assignment mask is ``propositions[i]``), ``edges``,
    ``next_state`` (|U|, 2**|P|) int64 (−1 for assignments excluded by ``assume``),
    ``reward`` (|U|, 2**|P|) float64, ``possible`` (2**|P|,) bool, ``unreachable`` (states not
    reachable from u0).
    """

    name: str
    description: str
    propositions: tuple[str, ...]
    states: tuple[str, ...]
    initial: str
    terminal: frozenset[str]
    assume: Guard
    edges: tuple[Edge, ...]
    next_state: NDArray[np.int64]
    reward: NDArray[np.float64]
    possible: NDArray[np.bool_]
    unreachable: tuple[str, ...]
    source: str = ""

    @property
    def initial_index(self) -> int:
        return self.states.index(self.initial)

    def is_terminal(self, u: int) -> bool:
        return self.states[u] in self.terminal

    def mask(self, true_props: set[str] | frozenset[str] | Sequence[str]) -> int:
        """The assignment bit mask of a set of true propositions (unknown names are ignored: a
        machine reads only its own P, σ ∩ P_i as in MORM Def. 4)."""
        return sum(1 << i for i, p in enumerate(self.propositions) if p in true_props)

    def step(self, u: int, mask: int) -> tuple[int, float]:
        """δ(u, σ), λ(u, σ) for state index ``u`` and assignment mask ``mask``."""
        nxt = int(self.next_state[u, mask])
        if nxt < 0:
            raise ValueError(f"reward machine '{self.name}': assignment {format_assignment(mask, self.propositions)} "
                             f"violates its assumption '{self.assume.text}' (the labelling function produced an "
                             f"impossible event)")
        return nxt, float(self.reward[u, mask])


def load_machine(path: str | os.PathLike[str]) -> RewardMachine:
    """Load and validate one reward machine YAML file."""
    path = machine_path(path)
    data = load_yaml(path)
    return machine_from_mapping(data, source=str(path))


def machine_from_mapping(data: dict, source: str = "") -> RewardMachine:
    """Build and validate a machine from its YAML mapping (errors name ``source``)."""
    spec = from_mapping(MachineSpec, data, source=source)
    return compile_machine(spec, source)


def compile_machine(spec: MachineSpec, source: str = "") -> RewardMachine:
    where = f"{source}: " if source else ""
    who = f"{where}reward machine '{spec.name}'"

    def err(msg: str) -> ConfigError:
        return ConfigError(f"{who}: {msg}")

    props = list(spec.propositions)
    if not props:
        raise err("key 'propositions': at least one proposition is needed")
    if len(set(props)) != len(props):
        dup = sorted({p for p in props if props.count(p) > 1})
        raise err(f"key 'propositions': duplicated {dup}")
    if len(props) > MAX_PROPOSITIONS:
        raise err(f"key 'propositions': {len(props)} propositions; at most {MAX_PROPOSITIONS} are supported "
                  f"(guards are checked over all 2**|P| assignments)")
    for p in props:
        try:
            g = parse_guard(p)
        except ValueError:
            g = None
        if g is None or g.tree != ("prop", p):
            raise err(f"key 'propositions': {p!r} is not a valid proposition name "
                      f"(letters, digits, '_'; not and/or/not/true/false)")
    states = list(spec.states)
    if not states:
        raise err("key 'states': at least one state is needed")
    if spec.initial not in spec.states:
        raise err(f"key 'initial': {spec.initial!r} is not a state; states: {', '.join(states)}")
    for t in spec.terminal:
        if t not in spec.states:
            raise err(f"key 'terminal': {t!r} is not a state; states: {', '.join(states)}")

    def parse(text: str, key: str) -> Guard:
        try:
            g = parse_guard(text)
        except ValueError as exc:
            raise err(f"{key}: guard {text!r}: {exc}") from None
        unknown = sorted(g.propositions() - set(props))
        if unknown:
            raise err(f"{key}: guard {text!r} uses undeclared proposition(s) {unknown}; "
                      f"declared: {', '.join(props)}")
        return g

    assume = parse(spec.assume, "key 'assume'")
    possible = assume.table(props)
    if not possible.any():
        raise err(f"key 'assume': {spec.assume!r} is unsatisfiable: no assignment can occur")
    n_masks = 2 ** len(props)
    index = {s: i for i, s in enumerate(states)}
    next_state = np.full((len(states), n_masks), -1, dtype=np.int64)
    reward = np.zeros((len(states), n_masks), dtype=np.float64)
    edges: list[Edge] = []
    for s in states:
        key = f"state '{s}'"
        out = spec.states[s]
        if s in spec.terminal:
            if out:
                raise err(f"{key} is terminal but has {len(out)} outgoing edge(s); terminal states end the episode")
            next_state[index[s], possible] = index[s]
            continue
        if not out:
            raise err(f"{key} has no outgoing edges and is not terminal; add edges (e.g. "
                      f"{{guard: true, to: {s}}}) or list it under 'terminal'")
        tables: list[tuple[str, np.ndarray]] = []
        else_edges = [e for e in out if e.guard.strip() == ELSE]
        if len(else_edges) > 1:
            raise err(f"{key}: more than one '{ELSE}' guard")
        for j, e in enumerate(out):
            if e.to not in spec.states:
                raise err(f"{key}, edge {j} (guard {e.guard!r}): target {e.to!r} is not a state; "
                          f"states: {', '.join(states)}")
            if e.guard.strip() == ELSE:
                continue
            g = parse(e.guard, f"{key}, edge {j}")
            tab = g.table(props) & possible
            if not tab.any():
                raise err(f"{key}: guard {e.guard!r} is unsatisfiable"
                          + (f" under assume {spec.assume!r}" if spec.assume.strip() != "true" else ""))
            for other_text, other in tables:
                both = tab & other
                if both.any():
                    w = int(np.flatnonzero(both)[0])
                    raise err(f"{key}: guards {other_text!r} and {e.guard!r} are not mutually exclusive: both hold "
                              f"on {format_assignment(w, props)}")
            tables.append((e.guard, tab))
            edges.append(Edge(s, g, e.to, float(e.reward)))
            next_state[index[s], tab] = index[e.to]
            reward[index[s], tab] = float(e.reward)
        covered = np.zeros(n_masks, dtype=bool)
        for _, tab in tables:
            covered |= tab
        rest = possible & ~covered
        if else_edges:
            e = else_edges[0]
            if not rest.any():
                raise err(f"{key}: guard '{ELSE}' is unsatisfiable: the other guards already cover every assignment")
            g = Guard(ELSE, ("not", _disjunction([parse_guard(t).tree for t, _ in tables])))
            edges.append(Edge(s, g, e.to, float(e.reward)))
            next_state[index[s], rest] = index[e.to]
            reward[index[s], rest] = float(e.reward)
        elif rest.any():
            w = int(np.flatnonzero(rest)[0])
            raise err(f"{key}: guards are not exhaustive: none holds on {format_assignment(w, props)}; add an edge "
                      f"for it or a '{ELSE}' edge")
    unreachable = _unreachable(states, index[spec.initial], next_state)
    return RewardMachine(
        name=spec.name, description=spec.description, propositions=tuple(props), states=tuple(states),
        initial=spec.initial, terminal=frozenset(spec.terminal), assume=assume, edges=tuple(edges),
        next_state=next_state, reward=reward, possible=possible,
        unreachable=tuple(states[i] for i in unreachable), source=source,
    )


def _disjunction(trees: list[tuple]) -> tuple:
    if not trees:
        return ("const", False)
    node = trees[0]
    for t in trees[1:]:
        node = ("or", node, t)
    return node


def _unreachable(states: list[str], start: int, next_state: NDArray[np.int64]) -> list[int]:
    seen = {start}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v in np.unique(next_state[u]):
            if v >= 0 and int(v) not in seen:
                seen.add(int(v))
                queue.append(int(v))
    return [i for i in range(len(states)) if i not in seen]


def machine_path(name_or_path: str | os.PathLike[str]) -> Path:
    """A machine (or reward-machine task) file: a name under ``config/reward_machines/``
    (``sawyer/force_budget``) or a path (:func:`~morl_robot.resources.resolve_config`)."""
    return resolve_config("reward_machines", name_or_path)
