"""ButtonWorld (MORM paper, appendix A.1): a labelled 5×5 grid with no rewards of its own.

The agent starts at (0, 0) and moves one cell per step in the four cardinal directions (a move
off the grid leaves it in place).  Button A is at (1, 3) and button B at (3, 1), mirror images
across the diagonal through the start.  A button is *pressed* on the step the agent moves onto its
cell: the labelling function L(s, a, s') gives proposition ``a`` iff s' = A and ``b`` iff s' = B
(``info["labels"]``).  The objectives come from reward machines over {a, b}
(:class:`morl_robot.reward_machines.env.RewardMachineEnv`).

Observation: the one-hot cell (25,) (a tabular problem; the network sees the cell, not raw
coordinates).  Actions: 0 up (+y), 1 right (+x), 2 down (−y), 3 left (−x).  The 200-step time limit
of the paper's experiments is ``max_steps``.
"""
from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["BUTTONS", "MOVES", "SIZE", "START", "ButtonWorld"]

SIZE = 5
START = (0, 0)
#: proposition → cell (x, y)
BUTTONS: dict[str, tuple[int, int]] = {"a": (1, 3), "b": (3, 1)}
MOVES: tuple[tuple[int, int], ...] = ((0, 1), (1, 0), (0, -1), (-1, 0))


class ButtonWorld(gym.Env[np.ndarray, int]):
    """The grid; ``step`` returns an empty reward vector (0,) and the labels in ``info``."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    propositions = ("a", "b")

    def __init__(self, max_steps: int = 200):
        self.max_steps = int(max_steps)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(SIZE * SIZE,), dtype=np.float32)
        self.action_space = spaces.Discrete(4)
        self.reward_space = spaces.Box(0.0, 0.0, shape=(0,), dtype=np.float64)
        self.objective_names: list[str] = []
        self.cell = START
        self._steps = 0

    @staticmethod
    def cell_index(cell: tuple[int, int]) -> int:
        return cell[0] * SIZE + cell[1]

    def _obs(self) -> np.ndarray:
        out = np.zeros(SIZE * SIZE, np.float32)
        out[self.cell_index(self.cell)] = 1.0
        return out

    @staticmethod
    def move(cell: tuple[int, int], action: int) -> tuple[int, int]:
        dx, dy = MOVES[int(action)]
        return min(max(cell[0] + dx, 0), SIZE - 1), min(max(cell[1] + dy, 0), SIZE - 1)

    @staticmethod
    def labels_of(cell: tuple[int, int]) -> frozenset[str]:
        """L(s, a, s'): the buttons at the cell entered."""
        return frozenset(p for p, c in BUTTONS.items() if c == cell)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.cell, self._steps = START, 0
        return self._obs(), {"cell": self.cell, "labels": frozenset()}

    def step(self, action: int) -> tuple[np.ndarray, np.ndarray, bool, bool, dict]:
        if not self.action_space.contains(int(action)):
            raise ValueError(f"ButtonWorld action must be 0..3 (up, right, down, left), got {action!r}")
        self.cell = self.move(self.cell, action)
        self._steps += 1
        info = {"cell": self.cell, "labels": self.labels_of(self.cell),
                "termination": "time_limit" if self._steps >= self.max_steps else None}
        return self._obs(), np.zeros(0), False, self._steps >= self.max_steps, info
