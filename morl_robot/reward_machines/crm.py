"""Counterfactual experience for reward machines (CRM) in MO-MPO's sequence replay.

CRM (Toro Icarte et al., 2022; MORM paper §3.4, eq. 4): for a real transition ⟨s, u, a, s', u'⟩
with labels σ = L(s, a, s'), every non-terminal MORM state u_c ∈ U \\ F gives the synthetic
experience ⟨(s, u_c), a, λ(u_c, σ), (s', δ(u_c, σ))⟩ — the machine is known, so how it would have
moved and paid from any other state is known too.

Sequences (MO-MPO trains its critics with T-step Retrace sequences).  The replay keeps each real
transition once, with its label mask σ and the environment's own termination flag.  When a
sequence is sampled, :meth:`CounterfactualRelabeller.relabel` draws its starting machine state
u_c uniformly from U \\ F (with probability ``fraction``; otherwise it keeps the real one) and rolls
the machine forward along the stored σ_0 … σ_{T−1}:

    u_{t+1} = δ(u_t, σ_t),   r_t[MORM part] = λ(u_t, σ_t),   obs_t[machine one-hot] = onehot(u_t).

Every step of such a sequence is an experience of eq. 4 (from the counterfactual state the
machine reached), and at the first step every u_c is equally likely: each real transition
contributes its |U \\ F| counterfactuals in expectation, without storing |U \\ F| copies.  The
sequence is cut (``terminated``) where the counterfactual machine reaches F (or the environment
itself terminated), and is ``truncated`` (bootstrap from V(s')) where the real episode ended only
because the *real* machine terminated or the time limit struck.  The behaviour log-probability
stays the stored log μ(a|s, u_real): that is the probability with which the action was really
chosen, which is what Retrace's importance ratio min(1, π/μ) needs for any behaviour policy.

Shapes: observations [T+1, B, O] with the machine one-hot in columns ``obs_offset : obs_offset+S``;
rewards [T, B, K] with the MORM's d objectives in columns ``reward_offset : reward_offset+d``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from morl_robot.reward_machines.product import ProductMachine

__all__ = ["CounterfactualRelabeller"]


@dataclass
class CounterfactualRelabeller:
    """Rewrites sampled sequences from counterfactual machine states (see the module docstring).

    Args:
        product: the MORM.
        obs_offset: first observation column of the machine-state one-hot (width S).
        reward_offset: first reward column of the MORM objectives (width d).
        fraction: probability that a sampled sequence starts in a counterfactual state (1.0: CRM as
            in the paper, every sequence counterfactual; the real state is one of U \\ F anyway).
    """

    product: ProductMachine
    obs_offset: int
    reward_offset: int
    fraction: float = 1.0
    #: sequences relabelled so far, and of them those started in a machine state other than the
    #: real one (counterfactual experience that reached the learner; not checkpointed)
    sequences: int = field(default=0, init=False)
    counterfactual_sequences: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"crm fraction must be in [0, 1], got {self.fraction}")
        self._nonterminal = self.product.nonterminal_states
        self._eye = np.eye(self.product.num_states, dtype=np.float32)

    @property
    def num_states(self) -> int:
        return self.product.num_states

    def real_states(self, obs: np.ndarray) -> np.ndarray:
        """[B] machine state indices read back from observations [B, O]."""
        S = self.product.num_states
        return np.argmax(obs[:, self.obs_offset:self.obs_offset + S], axis=1)

    def relabel(self, observations: np.ndarray, rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
                mask: np.ndarray, labels: np.ndarray, env_terminated: np.ndarray, episode_end: np.ndarray,
                rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Counterfactual versions of a sampled batch (arrays as :class:`SequenceBatch`, time-major).

        Args:
            labels: [T, B] int64 label masks σ_t of the stored transitions.
            env_terminated: [T, B] the environment's own termination (not the machine's).
            episode_end: [T, B] the real episode ended after this step (terminated or truncated).

        Returns a dict with new ``observations``, ``rewards``, ``terminated``, ``truncated``, ``mask``
        and ``machine_states`` [T+1, B] (the counterfactual u_t).
        """
        T, B = rewards.shape[:2]
        S, d = self.product.num_states, self.product.num_objectives
        o, k = self.obs_offset, self.reward_offset
        obs = observations.copy()
        rew = rewards.copy()
        real = self.real_states(observations[0])
        swap = rng.random(B) < self.fraction
        u = np.where(swap, rng.choice(self._nonterminal, size=B), real)
        self.sequences += B
        self.counterfactual_sequences += int(np.count_nonzero((u != real) & (mask[0] > 0)))
        states = np.empty((T + 1, B), np.int64)
        term = np.zeros((T, B), np.float32)
        trunc = np.zeros((T, B), np.float32)
        new_mask = mask.copy()
        alive = np.ones(B, np.float32)
        for t in range(T):
            states[t] = u
            obs[t, :, o:o + S] = self._eye[u]
            sigma = labels[t]
            nxt = self.product.next_state[u, sigma]  # [B]
            if np.any(nxt < 0):
                bad = int(sigma[np.flatnonzero(nxt < 0)[0]])
                raise ValueError(f"stored label mask {bad} is impossible for the MORM (excluded by an 'assume')")
            rew[t, :, k:k + d] = self.product.reward[u, sigma]
            new_mask[t] *= alive
            ends = np.maximum(env_terminated[t], self.product.terminal[nxt].astype(np.float32))
            term[t] = ends * new_mask[t]
            trunc[t] = episode_end[t] * (1.0 - ends) * new_mask[t]
            alive = alive * (1.0 - term[t]) * (1.0 - trunc[t])
            u = nxt
        states[T] = u
        obs[T, :, o:o + S] = self._eye[u]
        return {"observations": obs, "rewards": rew, "terminated": term, "truncated": trunc, "mask": new_mask,
                "machine_states": states}
