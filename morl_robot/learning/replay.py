"""Sequence replay for Retrace (Munos et al. 2016) as used by MO-MPO (paper section 4.1).

A fixed-size ring of numpy arrays holding one environment step per slot: observation, action,
reward vector ``[K]``, terminated/truncated flags and the behaviour policy's log-probability
``log μ(a|s)`` (Retrace's importance ratios need it).  The next observation of a transition is the
observation in the next slot; when an episode ends, the final observation is written into the next
slot, which is marked *not a transition*, and the next episode starts one slot later.  Sampling
picks sequence starts uniformly among transitions and returns ``T`` steps (``T + 1``
observations); steps after an episode end (or past the newest transition) have ``mask = 0``.

Reward machines: with a :class:`~morl_robot.reward_machines.crm.CounterfactualRelabeller`
(``relabeller=``), each step also stores its label mask σ and the environment's own termination,
and sampled sequences are rewritten from counterfactual machine states (CRM; the MORM paper eq. 4;
how the sequences are built is described in :mod:`morl_robot.reward_machines.crm`).

:class:`SampleToInsertRatio` limits learning to a samples-per-insert ratio (reverb semantics, in
sampled sequences per inserted transition).

Shapes of a :class:`SequenceBatch` (time-major): observations ``[T+1, B, O]``, actions
``[T, B, D]`` (float32) or ``[T, B]`` (int64, discrete), rewards ``[T, B, K]``, the rest ``[T, B]``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np


@dataclass
class SequenceBatch:
    """A batch of B sequences of T steps (time-major numpy arrays)."""

    observations: np.ndarray  # [T+1, B, O]
    actions: np.ndarray  # [T, B, D] float32 | [T, B] int64
    rewards: np.ndarray  # [T, B, K]
    terminated: np.ndarray  # [T, B] float32
    truncated: np.ndarray  # [T, B] float32
    behaviour_log_prob: np.ndarray  # [T, B]
    mask: np.ndarray  # [T, B] float32, 1 = real transition of the same episode as step 0

    @property
    def sequence_length(self) -> int:
        return int(self.rewards.shape[0])

    @property
    def batch_size(self) -> int:
        return int(self.rewards.shape[1])

    def as_dict(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class SequenceReplay:
    """Fixed-size numpy ring of steps, sampled as sequences of length T.

    Args:
        capacity: number of slots (one per step, plus one per episode end).
        obs_dim: observation width O; action_dim: D (``discrete=True``: actions are integers).
        num_objectives: K.
        seed: for the sampling RNG (its state is part of :meth:`state_dict`).
    """

    def __init__(self, capacity: int, obs_dim: int, action_dim: int, num_objectives: int,
                 discrete: bool = False, seed: int | None = None, relabeller: Any = None):
        if capacity < 2:
            raise ValueError(f"capacity must be >= 2, got {capacity}")
        self.capacity = int(capacity)
        self.obs_dim, self.action_dim, self.num_objectives = int(obs_dim), int(action_dim), int(num_objectives)
        self.discrete = bool(discrete)
        c = self.capacity
        self._obs = np.zeros((c, obs_dim), np.float32)
        self._action = np.zeros((c,), np.int64) if discrete else np.zeros((c, action_dim), np.float32)
        self._reward = np.zeros((c, num_objectives), np.float32)
        self._terminated = np.zeros((c,), np.float32)
        self._truncated = np.zeros((c,), np.float32)
        self._log_mu = np.zeros((c,), np.float32)
        self._valid = np.zeros((c,), bool)
        self.relabeller = relabeller
        self._label = np.zeros((c,), np.int64)  # σ of the step (reward machines; -1 = not labelled)
        self._env_term = np.zeros((c,), np.float32)  # the environment's own termination (vs. the machine's)
        self._pos = 0  # slot of the next transition
        self._filled = 0  # slots ever written (≤ capacity)
        self._num_valid = 0
        self.inserts = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        """Number of stored transitions."""
        return self._num_valid

    def add(self, obs: np.ndarray, action: Any, reward: np.ndarray, next_obs: np.ndarray,
            terminated: bool, truncated: bool, behaviour_log_prob: float, label: int = -1,
            env_terminated: bool | None = None) -> None:
        """Store one step ``(s, a, r[K], s', terminated, truncated, log μ(a|s))``; with a reward
        machine also its label mask σ and whether the environment (not the machine) terminated."""
        if self.relabeller is not None and label < 0:
            raise ValueError("this replay relabels counterfactual machine states (CRM) and needs each step's "
                             "label mask; add(..., label=σ, env_terminated=...)")
        c, p = self.capacity, self._pos
        q = (p + 1) % c
        if not self._valid[p]:
            self._num_valid += 1
        self._obs[p] = obs
        self._action[p] = action
        self._reward[p] = reward
        self._terminated[p] = float(terminated)
        self._truncated[p] = float(truncated)
        self._log_mu[p] = behaviour_log_prob
        self._label[p] = label
        self._env_term[p] = float(terminated if env_terminated is None else env_terminated)
        self._valid[p] = True
        if self._valid[q]:
            self._num_valid -= 1
        self._obs[q] = next_obs
        self._valid[q] = False
        self._terminated[q] = 0.0
        self._truncated[q] = 0.0
        self._pos = (p + 2) % c if (terminated or truncated) else q
        self._filled = min(c, max(self._filled, p + 2))
        self.inserts += 1

    def sample_starts(self, batch_size: int) -> np.ndarray:
        """``[B]`` slot indices of sequence starts, uniform over stored transitions."""
        if self._num_valid == 0:
            raise RuntimeError("cannot sample from an empty replay")
        out = np.empty(0, np.int64)
        hi = max(self._filled, 1)
        while out.size < batch_size:
            cand = self.rng.integers(0, hi, size=max(2 * (batch_size - out.size), 16))
            out = np.concatenate([out, cand[self._valid[cand]]])
        return out[:batch_size]

    def sample(self, batch_size: int, sequence_length: int) -> SequenceBatch:
        """``B`` sequences of ``T`` steps (see :class:`SequenceBatch`)."""
        T = int(sequence_length)
        starts = self.sample_starts(batch_size)
        idx = (starts[None, :] + np.arange(T + 1)[:, None]) % self.capacity  # [T+1, B]
        steps = idx[:T]
        mask = np.cumprod(self._valid[steps], axis=0).astype(np.float32)  # [T, B]
        if self.relabeller is not None:
            ends = np.maximum(self._terminated[steps], self._truncated[steps])
            cf = self.relabeller.relabel(self._obs[idx], self._reward[steps], self._terminated[steps] * mask,
                                         self._truncated[steps] * mask, mask, self._label[steps],
                                         self._env_term[steps], ends, self.rng)
            return SequenceBatch(observations=cf["observations"], actions=self._action[steps], rewards=cf["rewards"],
                                 terminated=cf["terminated"], truncated=cf["truncated"],
                                 behaviour_log_prob=self._log_mu[steps], mask=cf["mask"])
        return SequenceBatch(
            observations=self._obs[idx],
            actions=self._action[steps],
            rewards=self._reward[steps],
            terminated=self._terminated[steps] * mask,
            truncated=self._truncated[steps] * mask,
            behaviour_log_prob=self._log_mu[steps],
            mask=mask,
        )

    # -- checkpointing -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        n = self._filled
        return {
            "capacity": self.capacity, "obs_dim": self.obs_dim, "action_dim": self.action_dim,
            "num_objectives": self.num_objectives, "discrete": self.discrete,
            "obs": self._obs[:n].copy(), "action": self._action[:n].copy(), "reward": self._reward[:n].copy(),
            "terminated": self._terminated[:n].copy(), "truncated": self._truncated[:n].copy(),
            "log_mu": self._log_mu[:n].copy(), "valid": self._valid[:n].copy(),
            "label": self._label[:n].copy(), "env_term": self._env_term[:n].copy(),
            "pos": self._pos, "filled": self._filled, "num_valid": self._num_valid, "inserts": self.inserts,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key in ("capacity", "obs_dim", "action_dim", "num_objectives", "discrete"):
            if state[key] != getattr(self, key):
                raise ValueError(f"replay {key} mismatch: checkpoint has {state[key]}, replay has {getattr(self, key)}")
        n = int(state["filled"])
        for name, arr in (("obs", self._obs), ("action", self._action), ("reward", self._reward),
                          ("terminated", self._terminated), ("truncated", self._truncated),
                          ("log_mu", self._log_mu), ("valid", self._valid)):
            arr[:n] = np.asarray(state[name])
            arr[n:] = 0
        for name, arr in (("label", self._label), ("env_term", self._env_term)):  # absent in older checkpoints
            arr[:n] = np.asarray(state[name]) if name in state else (-1 if name == "label" else self._terminated[:n])
            arr[n:] = 0
        self._pos, self._filled = int(state["pos"]), n
        self._num_valid, self.inserts = int(state["num_valid"]), int(state["inserts"])
        self.rng.bit_generator.state = state["rng"]


class SampleToInsertRatio:
    """Keeps ``sampled items / inserted items`` near ``samples_per_insert`` (reverb semantics).

    Sampling is allowed once ``min_size_to_sample`` items were inserted and while
    ``inserts·spi - samples ≥ min_size·spi - error_buffer``; inserting is allowed while
    ``inserts·spi - samples ≤ min_size·spi + error_buffer``.  A synchronous loop calls
    :meth:`can_sample` after every insert and learns while it is true.
    """

    def __init__(self, samples_per_insert: float, min_size_to_sample: int, error_buffer: float):
        if samples_per_insert <= 0:
            raise ValueError(f"samples_per_insert must be > 0, got {samples_per_insert}")
        self.samples_per_insert = float(samples_per_insert)
        self.min_size_to_sample = int(min_size_to_sample)
        offset = self.samples_per_insert * self.min_size_to_sample
        self.min_diff = offset - float(error_buffer)
        self.max_diff = offset + float(error_buffer)
        self.inserts = 0
        self.samples = 0

    def _diff(self) -> float:
        return self.inserts * self.samples_per_insert - self.samples

    def can_sample(self, num_items: int) -> bool:
        return self.inserts >= self.min_size_to_sample and self._diff() - num_items >= self.min_diff

    def can_insert(self) -> bool:
        return self.inserts < self.min_size_to_sample or self._diff() + self.samples_per_insert <= self.max_diff

    def max_inserts(self) -> int:
        """The insert count up to which :meth:`can_insert` holds with the samples taken so far (the
        actors' back-pressure: past it, acting waits for learning).  Grows by ``batch / spi`` with
        every sampled batch."""
        spi = self.samples_per_insert

        def fits(n: int) -> bool:  # can_insert() with n - 1 inserts, in the same float arithmetic
            return ((n - 1) * spi - self.samples) + spi <= self.max_diff

        n = int((self.max_diff + self.samples) // spi)
        while n > 0 and not fits(n):
            n -= 1
        while fits(n + 1):
            n += 1
        return max(self.min_size_to_sample, n)

    def samples_allowed(self) -> float:
        """Items :meth:`can_sample` would let the learner sample now (0 before ``min_size_to_sample``
        inserts): the learner's backlog, in sampled items."""
        if self.inserts < self.min_size_to_sample:
            return 0.0
        return max(0.0, self._diff() - self.min_diff)

    def max_backlog(self) -> float:
        """The most :meth:`samples_allowed` can reach while inserts stop at :meth:`max_inserts`
        (``2 · error_buffer``, plus ``spi`` per insert beyond it): the bound on the updates a
        learner owes to actors that respect the allowance."""
        return self.max_diff - self.min_diff

    def insert(self, n: int = 1) -> None:
        self.inserts += n

    def sample(self, num_items: int) -> None:
        self.samples += num_items

    def state_dict(self) -> dict[str, Any]:
        return {"inserts": self.inserts, "samples": self.samples}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.inserts, self.samples = int(state["inserts"]), int(state["samples"])
