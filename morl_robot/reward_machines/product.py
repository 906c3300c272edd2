"""The multi-objective reward machine (MORM): the product of one reward machine per objective.

MORM paper §3.1, Def. 4: for machines R_1 … R_d over propositions P_i, the MORM over P = ∪ P_i has
states U ⊆ U_1 × … × U_d, u0 = (u_{1,0}, …, u_{d,0}), F = {u : ∃i u_i ∈ F_i},
δ(u, σ) = (δ_i(u_i, σ ∩ P_i))_i and the reward vector λ(u, σ) = (λ_i(u_i, σ ∩ P_i))_i.

§3.2: only the states reachable from u0 are built, by breadth-first search over the assignments σ
that every machine's ``assume`` allows (so incompatible histories such as term–term's (1, 1) never
appear).  Terminal product states are not expanded (the episode ends there).

Compiled tables (S product states, M = 2**|P| assignment masks, d objectives):
``next_state`` (S, M) int64 (−1 for impossible σ), ``reward`` (S, M, d) float64,
``terminal`` (S,) bool.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from morl_robot.errors import ConfigError
from morl_robot.reward_machines.guards import MAX_PROPOSITIONS, format_assignment
from morl_robot.reward_machines.machine import RewardMachine

__all__ = ["ProductMachine", "build_product"]


@dataclass
class ProductMachine:
    """A MORM with its tables; see the module docstring for shapes."""

    machines: tuple[RewardMachine, ...]
    propositions: tuple[str, ...]
    states: tuple[tuple[int, ...], ...]
    next_state: NDArray[np.int64]
    reward: NDArray[np.float64]
    terminal: NDArray[np.bool_]
    possible: NDArray[np.bool_]

    @property
    def num_objectives(self) -> int:
        return len(self.machines)

    @property
    def num_states(self) -> int:
        return len(self.states)

    @property
    def num_nonterminal(self) -> int:
        return int((~self.terminal).sum())

    @property
    def nonterminal_states(self) -> NDArray[np.int64]:
        """Indices of U \\ F: the machine states CRM generates experience for (MORM eq. 4)."""
        return np.flatnonzero(~self.terminal)

    @property
    def objective_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.machines)

    @property
    def initial(self) -> int:
        return 0

    def state_name(self, s: int) -> str:
        return "(" + ", ".join(m.states[u] for m, u in zip(self.machines, self.states[s])) + ")"

    def mask(self, true_props: set[str] | frozenset[str] | Sequence[str]) -> int:
        """Assignment mask of σ ∩ P (a labelling function may define more propositions than the
        machines read, as in MORM Def. 4)."""
        return sum(1 << i for i, p in enumerate(self.propositions) if p in true_props)

    def step(self, s: int, mask: int) -> tuple[int, NDArray[np.float64]]:
        """δ(u, σ) and λ(u, σ) (d,) for product state index ``s``."""
        nxt = int(self.next_state[s, mask])
        if nxt < 0:
            raise ValueError(f"assignment {format_assignment(mask, self.propositions)} is excluded by a machine's "
                             f"'assume'; the labelling function produced an impossible event")
        return nxt, self.reward[s, mask]

    def step_all(self, mask: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Counterfactual step of every state on one σ: next (S,), reward (S, d)."""
        return self.next_state[:, mask], self.reward[:, mask]

    def one_hot(self, s: int) -> NDArray[np.float32]:
        out = np.zeros(self.num_states, dtype=np.float32)
        out[s] = 1.0
        return out

    def to_dot(self, max_edges_per_state: int | None = None) -> str:
        """Graphviz dot text: product states, edges labelled by the assignments that take them and
        the reward vector; terminal states drawn as double circles."""
        lines = ["digraph MORM {", "  rankdir=LR;", '  node [shape=circle, fontname="Helvetica"];',
                 '  start [shape=point];', "  start -> s0;"]
        for s in range(self.num_states):
            shape = "doublecircle" if self.terminal[s] else "circle"
            lines.append(f'  s{s} [label="{self.state_name(s)}", shape={shape}];')
        for s in range(self.num_states):
            if self.terminal[s]:
                continue
            groups: dict[tuple[int, tuple[float, ...]], list[str]] = {}
            for mask in np.flatnonzero(self.possible):
                nxt = int(self.next_state[s, mask])
                key = (nxt, tuple(float(x) for x in self.reward[s, mask]))
                groups.setdefault(key, []).append(format_assignment(int(mask), self.propositions))
            for k, ((nxt, rew), sigmas) in enumerate(sorted(groups.items())):
                if max_edges_per_state is not None and k >= max_edges_per_state:
                    break
                label = " ".join(sigmas)
                if any(rew):
                    label += " / (" + ", ".join(f"{r:g}" for r in rew) + ")"
                lines.append(f'  s{s} -> s{nxt} [label="{label}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"


def build_product(machines: Sequence[RewardMachine]) -> ProductMachine:
    """The reachable product of ``machines`` by breadth-first search from u0 (MORM §3.1–3.2)."""
    if not machines:
        raise ConfigError("a MORM needs at least one reward machine")
    names = [m.name for m in machines]
    props: list[str] = []
    for m in machines:
        for p in m.propositions:
            if p not in props:
                props.append(p)
    if len(props) > MAX_PROPOSITIONS:
        raise ConfigError(f"MORM of {', '.join(names)}: {len(props)} propositions in all; at most "
                          f"{MAX_PROPOSITIONS} are supported")
    masks = np.arange(2 ** len(props), dtype=np.int64)
    # projection σ → σ ∩ P_i as machine i's own mask: (d, M)
    proj = np.zeros((len(machines), masks.size), dtype=np.int64)
    for i, m in enumerate(machines):
        for j, p in enumerate(m.propositions):
            proj[i] |= ((masks >> props.index(p)) & 1) << j
    possible = np.ones(masks.size, dtype=bool)
    for i, m in enumerate(machines):
        possible &= m.possible[proj[i]]
    if not possible.any():
        raise ConfigError(f"MORM of {', '.join(names)}: the machines' 'assume' formulas exclude every assignment")
    start = tuple(m.initial_index for m in machines)
    index = {start: 0}
    states: list[tuple[int, ...]] = [start]
    next_rows: list[NDArray[np.int64]] = []
    reward_rows: list[NDArray[np.float64]] = []
    terminal: list[bool] = []
    queue = deque([start])
    while queue:
        u = queue.popleft()
        term = any(m.is_terminal(ui) for m, ui in zip(machines, u))
        terminal.append(term)
        nxt = np.full(masks.size, -1, dtype=np.int64)
        rew = np.zeros((masks.size, len(machines)), dtype=np.float64)
        s = index[u]
        if term:
            nxt[possible] = s
        else:
            for mask in np.flatnonzero(possible):
                v = tuple(int(m.next_state[ui, proj[i, mask]]) for i, (m, ui) in enumerate(zip(machines, u)))
                rew[mask] = [m.reward[ui, proj[i, mask]] for i, (m, ui) in enumerate(zip(machines, u))]
                if v not in index:
                    index[v] = len(states)
                    states.append(v)
                    queue.append(v)
                nxt[mask] = index[v]
        next_rows.append(nxt)
        reward_rows.append(rew)
    return ProductMachine(
        machines=tuple(machines), propositions=tuple(props), states=tuple(states),
        next_state=np.stack(next_rows), reward=np.stack(reward_rows), terminal=np.array(terminal, dtype=bool),
        possible=possible,
    )
