"""Guards of reward-machine transitions: Boolean formulas over propositions.

A guard φ labels an edge u → u' of a reward machine (Toro Icarte et al., 2022; MORM paper §2.3,
Def. 2): the edge is taken on a truth assignment σ ⊆ P when σ ⊨ φ.

Syntax (whitespace-insensitive)::

    formula := or
    or      := and ( ("|" | "or") and )*
    and     := not ( ("&" | "and") not )*
    not     := ("!" | "~" | "not") not | atom
    atom    := "true" | "false" | PROPOSITION | "(" formula ")"

A proposition name is ``[A-Za-z_][A-Za-z0-9_]*`` (not a keyword).  A parsed guard is compiled to
its truth table over the machine's propositions: an assignment σ is an integer bit mask (bit i set
iff proposition i holds), and :meth:`Guard.table` returns a bool array of shape (2**|P|,).  The
validation of a machine (satisfiable, mutually exclusive, exhaustive) is then exact, by
enumerating the truth table — fine for the dozen or so propositions a robot task declares.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from morl_robot.errors import ConfigError

__all__ = ["MAX_PROPOSITIONS", "Guard", "assignments", "format_assignment", "parse_guard"]

#: Above this many propositions the 2**|P| truth tables stop being cheap; refuse clearly.
MAX_PROPOSITIONS = 16

_TOKEN = re.compile(r"\s*(?:(\()|(\))|(!|~)|(&&?)|(\|\|?)|([A-Za-z_][A-Za-z0-9_]*))")
_KEYWORDS = {"and", "or", "not", "true", "false"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Guard:
    """A parsed guard: the source text and its syntax tree.

    Tree nodes are tuples: ``("const", bool)``, ``("prop", name)``, ``("not", x)``,
    ``("and", x, y)``, ``("or", x, y)``.
    """

    text: str
    tree: tuple

    def propositions(self) -> set[str]:
        """The proposition names the guard mentions."""
        out: set[str] = set()

        def walk(node: tuple) -> None:
            if node[0] == "prop":
                out.add(node[1])
            elif node[0] != "const":
                for child in node[1:]:
                    walk(child)

        walk(self.tree)
        return out

    def table(self, propositions: Sequence[str]) -> NDArray[np.bool_]:
        """Truth table over ``propositions``: (2**|P|,) bools, index = assignment bit mask."""
        masks = np.arange(2 ** len(propositions), dtype=np.int64)
        index = {name: i for i, name in enumerate(propositions)}

        def ev(node: tuple) -> NDArray[np.bool_]:
            kind = node[0]
            if kind == "const":
                return np.full(masks.shape, node[1], dtype=bool)
            if kind == "prop":
                return ((masks >> index[node[1]]) & 1).astype(bool)
            if kind == "not":
                return ~ev(node[1])
            if kind == "and":
                return ev(node[1]) & ev(node[2])
            return ev(node[1]) | ev(node[2])

        return ev(self.tree)

    def holds(self, true_props: set[str] | frozenset[str]) -> bool:
        """σ ⊨ φ for the set of true propositions σ."""

        def ev(node: tuple) -> bool:
            kind = node[0]
            if kind == "const":
                return bool(node[1])
            if kind == "prop":
                return node[1] in true_props
            if kind == "not":
                return not ev(node[1])
            if kind == "and":
                return ev(node[1]) and ev(node[2])
            return ev(node[1]) or ev(node[2])

        return ev(self.tree)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            bad = text[pos:].lstrip()[:1]
            raise ValueError(f"unexpected character {bad!r} at position {pos + len(text[pos:]) - len(text[pos:].lstrip())}")
        pos = match.end()
        group = match.lastindex
        tok = match.group(group)
        if group == 3:
            tok = "not"
        elif group == 4:
            tok = "and"
        elif group == 5:
            tok = "or"
        tokens.append(tok)
    return tokens


def parse_guard(text: str) -> Guard:
    """Parse a guard; raises ``ValueError`` with the position of a syntax error."""
    if isinstance(text, bool):
        return Guard(str(text).lower(), ("const", text))
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a guard must be a non-empty formula string, got {text!r}")
    tokens = _tokenize(text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError("formula ends too early")
        pos += 1
        return tokens[pos - 1]

    def p_or() -> tuple:
        node = p_and()
        while peek() == "or":
            take()
            node = ("or", node, p_and())
        return node

    def p_and() -> tuple:
        node = p_not()
        while peek() == "and":
            take()
            node = ("and", node, p_not())
        return node

    def p_not() -> tuple:
        if peek() == "not":
            take()
            return ("not", p_not())
        return p_atom()

    def p_atom() -> tuple:
        tok = take()
        if tok == "(":
            node = p_or()
            if take() != ")":
                raise ValueError("missing ')'")
            return node
        if tok == "true":
            return ("const", True)
        if tok == "false":
            return ("const", False)
        if tok in _KEYWORDS or not _NAME.match(tok):
            raise ValueError(f"expected a proposition, 'true', 'false' or '(', got {tok!r}")
        return ("prop", tok)

    tree = p_or()
    if pos != len(tokens):
        raise ValueError(f"unexpected {tokens[pos]!r} after a complete formula")
    return Guard(text.strip(), tree)


def assignments(propositions: Sequence[str]) -> list[frozenset[str]]:
    """Every truth assignment σ ⊆ P, indexed by bit mask."""
    return [frozenset(p for i, p in enumerate(propositions) if mask >> i & 1)
            for mask in range(2 ** len(propositions))]


def format_assignment(mask: int, propositions: Sequence[str]) -> str:
    """A readable σ: ``{a, b}`` or ``{}`` (nothing true)."""
    true = [p for i, p in enumerate(propositions) if mask >> i & 1]
    return "{" + ", ".join(true) + "}"


def check_proposition_count(name: str, propositions: Sequence[str]) -> None:
    if len(propositions) > MAX_PROPOSITIONS:
        raise ConfigError(f"{name}: {len(propositions)} propositions; at most {MAX_PROPOSITIONS} are supported "
                          f"(guards are checked over all 2**|P| truth assignments)")
