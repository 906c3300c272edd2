"""Policy and critic networks for MO-MPO (Abdolmaleki et al. 2020, section 4 and appendix B).

* :class:`GaussianPolicy` — MLP (300, 200) whose first layer is Linear → LayerNorm → tanh (acme's
  LayerNormMLP; later layers ELU), then a diagonal Gaussian head: ``mean = tanh(·)`` so the mean
  lies in the normalised action box [-1, 1], ``std = softplus(·)·(init_std/softplus(0)) + min_std``.
  Samples are clipped to [-1, 1] before they reach the environment or the critic.
* :class:`CategoricalPolicy` — the same torso with logits over A actions (the toy domains).
* :class:`Critic` — K action-value functions ``Q_k(s, a)`` (Q-decomposition, paper section 4.1),
  input ``[obs, action]`` (discrete actions one-hot), LayerNorm torso (400, 300), or (``torso:
  relu``) a plain ReLU MLP: with bootstrapped targets far from zero the LayerNorm → tanh first
  layer can fit Q's dependence on the action with the wrong sign (a synthetic task with
  r₂ = −|a|², γ = 0.99: fitted slope +0.29 where the targets' is −1.05; ReLU: −1.31).

Critic design: K networks, not one network with K heads (``critic_architecture: separate``, the
default).  The paper trains ``Q_k(s, a; φ_k)`` with separate parameters, and MO-MPO's point is
invariance to the *scale* of each reward: with a shared torso the squared TD errors of an objective
whose rewards are 100x larger dominate the shared features' gradients (and Adam's normalisation
cannot undo that inside one parameter tensor), which reintroduces the scale dependence that the
per-objective ε_k removes.  The K networks are evaluated as one ensemble: every layer's weights are
stacked ``[K, in, out]`` and applied with one batched matmul, so on CPU it costs about K× the FLOPs
of one critic but no extra Python/kernel-launch overhead.  ``critic_architecture: shared`` (one
torso, K heads, ~1× FLOPs) is available for speed when the objectives' scales are alike.

Shapes: observations ``[..., O]``, actions ``[..., D]`` (continuous, in [-1, 1]) or ``[...]``
integer (discrete); critic output ``[..., K]``.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

Tensor = torch.Tensor


@dataclass(frozen=True)
class ActionSpec:
    """What the policy outputs: ``kind='box'`` with ``dim`` dims in [-1, 1] or ``kind='discrete'``
    with ``num_actions`` choices."""

    kind: Literal["box", "discrete"]
    dim: int = 0
    num_actions: int = 0

    @staticmethod
    def box(dim: int) -> ActionSpec:
        return ActionSpec("box", dim=int(dim))

    @staticmethod
    def discrete(num_actions: int) -> ActionSpec:
        return ActionSpec("discrete", num_actions=int(num_actions))

    @staticmethod
    def from_space(space: Any) -> ActionSpec:
        """From a Gymnasium ``Box`` (should be normalised to [-1, 1]) or ``Discrete`` space."""
        from gymnasium import spaces

        if isinstance(space, spaces.Discrete):
            return ActionSpec.discrete(int(space.n))
        if isinstance(space, spaces.Box):
            return ActionSpec.box(int(np.prod(space.shape)))
        raise TypeError(f"unsupported action space {space!r}: expected Box or Discrete")

    @property
    def is_discrete(self) -> bool:
        return self.kind == "discrete"

    @property
    def input_dim(self) -> int:
        """Width of the action as a critic input (one-hot for discrete)."""
        return self.num_actions if self.is_discrete else self.dim

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "dim": self.dim, "num_actions": self.num_actions}


def _uniform_init(weight: Tensor, bias: Tensor, fan_in: int) -> None:
    bound = 1.0 / math.sqrt(fan_in)
    with torch.no_grad():
        weight.uniform_(-bound, bound)
        bias.uniform_(-bound, bound)


class LayerNormMLP(nn.Module):
    """Linear → LayerNorm → tanh, then (Linear → ELU) for the remaining hidden layers; no hidden
    layers: the identity (the head then sees the observation itself)."""

    def __init__(self, in_dim: int, hidden: Sequence[int]):
        super().__init__()
        if not hidden:
            self.net: nn.Module = nn.Identity()
            self.out_dim = int(in_dim)
            return
        layers: list[nn.Module] = [nn.Linear(in_dim, hidden[0]), nn.LayerNorm(hidden[0]), nn.Tanh()]
        for a, b in itertools.pairwise(hidden):
            layers += [nn.Linear(a, b), nn.ELU()]
        self.net = nn.Sequential(*layers)
        self.out_dim = int(hidden[-1])

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class GaussianPolicy(nn.Module):
    """π_θ(a|s) = N(mean(s), diag(std(s)²)), mean in (-1, 1)."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int] = (300, 200),
                 min_std: float = 1e-4, init_std: float = 0.7):
        super().__init__()
        self.torso = LayerNormMLP(obs_dim, hidden)
        self.mean_head = nn.Linear(self.torso.out_dim, action_dim)
        self.std_head = nn.Linear(self.torso.out_dim, action_dim)
        self.min_std = float(min_std)
        self.std_scale = float(init_std - min_std) / math.log(2.0)  # softplus(0) = log 2
        with torch.no_grad():  # start near mean 0, std init_std
            self.mean_head.weight.mul_(1e-2)
            self.mean_head.bias.zero_()
            self.std_head.weight.mul_(1e-2)
            self.std_head.bias.zero_()

    def forward(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """``[..., O]`` → ``(mean [..., D], std [..., D])``."""
        h = self.torso(obs)
        mean = torch.tanh(self.mean_head(h))
        std = F.softplus(self.std_head(h)) * self.std_scale + self.min_std
        return mean, std

    def deterministic_action(self, obs: Tensor) -> Tensor:
        return self.forward(obs)[0]


class CategoricalPolicy(nn.Module):
    """π_θ(a|s) = softmax(logits(s)).  Without hidden layers the logits are linear in the observation
    and have no bias, so on one-hot observations (a tabular state) the policy is a table: one row of
    logits per state, an update at one state leaves every other state's policy as it was."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: Sequence[int] = (300, 200)):
        super().__init__()
        self.torso = LayerNormMLP(obs_dim, hidden)
        self.logits_head = nn.Linear(self.torso.out_dim, num_actions, bias=bool(hidden))
        with torch.no_grad():  # start (nearly) uniform
            self.logits_head.weight.mul_(1e-2)
            if self.logits_head.bias is not None:
                self.logits_head.bias.zero_()

    def forward(self, obs: Tensor) -> Tensor:
        """``[..., O]`` → logits ``[..., A]``."""
        return self.logits_head(self.torso(obs))

    def deterministic_action(self, obs: Tensor) -> Tensor:
        return torch.argmax(self.forward(obs), dim=-1)


class EnsembleLinear(nn.Module):
    """``M`` independent linear layers applied as one batched matmul: ``[M, R, in] → [M, R, out]``
    (an input ``[R, in]`` is shared by all members)."""

    def __init__(self, members: int, in_dim: int, out_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(members, in_dim, out_dim))
        self.bias = nn.Parameter(torch.empty(members, 1, out_dim))
        _uniform_init(self.weight, self.bias, in_dim)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 2:
            return torch.matmul(x, self.weight) + self.bias  # broadcast [R,in] @ [M,in,out]
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleLayerNorm(nn.Module):
    """Per-member LayerNorm over the last dim with per-member affine parameters."""

    def __init__(self, members: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(members, 1, dim))
        self.bias = nn.Parameter(torch.zeros(members, 1, dim))
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return torch.addcmul(self.bias, F.layer_norm(x, (self.dim,)), self.weight)


#: states per action block from which the ReLU critic's inference goes block by block (below it a
#: block is too small to gain, and MKL's kernel for a 1-wide output layer may change with the row
#: count: e.g. 20 rows of an 8-wide last layer sum in another order than 120)
_BLOCK_ROWS = 256


class Critic(nn.Module):
    """K action-value functions: ``(obs [..., O], action features [..., A_in]) → Q [..., K]``.

    ``architecture='separate'``: K independent MLPs (an ensemble of K members, one output each);
    ``'shared'``: one MLP with K outputs.  See the module docstring for why separate is the default.
    """

    def __init__(self, obs_dim: int, action_input_dim: int, num_objectives: int,
                 hidden: Sequence[int] = (400, 300), architecture: Literal["separate", "shared"] = "separate",
                 output_scale: float = 1e-2, torso: Literal["layernorm", "relu"] = "layernorm"):
        super().__init__()
        self.torso = torso
        self.num_objectives = int(num_objectives)
        self.architecture = architecture
        members = num_objectives if architecture == "separate" else 1
        outputs = 1 if architecture == "separate" else num_objectives
        sizes = [obs_dim + action_input_dim, *hidden]
        self.first = EnsembleLinear(members, sizes[0], sizes[1])
        self.norm = EnsembleLayerNorm(members, sizes[1])
        self.hidden = nn.ModuleList(EnsembleLinear(members, a, b) for a, b in itertools.pairwise(sizes[1:]))
        self.out = EnsembleLinear(members, sizes[-1], outputs)
        with torch.no_grad():  # near-zero start (acme) unless output_scale says otherwise
            self.out.weight.mul_(float(output_scale))
            self.out.bias.zero_()
        #: inference scratch (not state): the hidden activations' storage, kept between calls
        self._scratch: dict[int, Tensor] = {}

    def _buffer(self, slot: int, shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
        """Storage for an inference activation, reused while the shape stays: a fresh tensor of the
        target scoring's size (``[K, N·(T+1)·B, h]``, megabytes) costs a page fault per 4 KiB at its
        first write, about as long as the write itself (docs: results/benchmarks/NOTES.md)."""
        buf = self._scratch.get(slot)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = self._scratch[slot] = torch.empty(shape, dtype=dtype)
        return buf

    def _relu_inference(self, h_obs: Tensor, action: Tensor, obs_dim: int) -> Tensor:
        """The ReLU torso's inference: ``h_obs [M, S, h]`` (the first layer's observation part with
        its bias) and ``action [P, S, A_in]`` to Q ``[P*S, K]``, one action block of S rows at a
        time, so a block's activations stay in the core's cache from layer to layer where the whole
        ``[M, P·S, h]`` made a pass through memory per layer and per in-place op.  Per row the same
        arithmetic as the autograd path (tests/learning/test_critic_inference.py)."""
        p, s = action.shape[:2]
        w = self.first.weight[:, obs_dim:]  # [M, A_in, h]: the action part
        m, width = w.shape[0], w.shape[-1]
        outputs = self.out.weight.shape[-1]
        q = self._buffer(3, (p, m, s, outputs), h_obs.dtype)
        for j in range(p):
            a = action[j]
            h = torch.bmm(a.expand(m, *a.shape), w, out=self._buffer(0, (m, s, width), w.dtype)).add_(h_obs).relu_()
            for i, layer in enumerate(self.hidden):
                h = torch.baddbmm(layer.bias, h, layer.weight,
                                  out=self._buffer(1 + i % 2, (m, s, layer.weight.shape[-1]), h.dtype)).relu_()
            torch.baddbmm(self.out.bias, h, self.out.weight, out=q[j])
        # not a view of the scratch; laid out as the unblocked path's output (member-major for
        # separate critics), so later reductions over it sum in the same order
        if self.architecture == "separate":
            result = torch.empty((m, p, s), dtype=q.dtype)
            result.copy_(q.squeeze(-1).permute(1, 0, 2))
            return result.view(m, p * s).t()
        result = torch.empty((p, s, outputs), dtype=q.dtype)
        result.copy_(q.squeeze(1))
        return result.view(p * s, outputs)

    def forward(self, obs: Tensor, action: Tensor) -> Tensor:
        """Q-values ``[..., K]``.

        ``obs`` is ``[*S, O]`` and ``action`` ``[*P, *S, A_in]``: extra leading action dims (e.g.
        N sampled actions per state) broadcast against the states.  The first layer is split into
        its observation and action parts so the observation part is computed once per state, not
        once per sampled action.
        """
        obs_dim = obs.shape[-1]
        state_shape = obs.shape[:-1]
        extra = action.shape[: action.dim() - obs.dim()]
        s = int(np.prod(state_shape)) if len(state_shape) else 1
        p = int(np.prod(extra)) if len(extra) else 1
        w = self.first.weight  # [M, O + A, h]
        m = w.shape[0]
        h_obs = torch.matmul(obs.reshape(s, obs_dim), w[:, :obs_dim])  # [M, S, h]
        inference = not torch.is_grad_enabled()
        if self.torso == "relu" and inference and s >= _BLOCK_ROWS:  # block by block, same arithmetic
            q = self._relu_inference(h_obs + self.first.bias, action.reshape(p, s, -1), obs_dim)
            return q.reshape(*extra, *state_shape, self.num_objectives)
        if inference:  # into reused storage (same arithmetic as the broadcast matmul)
            a = action.reshape(p * s, -1)
            h_act = torch.bmm(a.expand(m, *a.shape), w[:, obs_dim:], out=self._buffer(0, (m, p * s, w.shape[-1]), w.dtype))
        else:
            h_act = torch.matmul(action.reshape(p * s, -1), w[:, obs_dim:])  # [M, P*S, h]
        if self.torso == "relu" and inference:  # inference: in place, same arithmetic
            h = h_act.view(m, p, s, -1).add_((h_obs + self.first.bias).unsqueeze(1)).view(m, p * s, -1).relu_()
            for i, layer in enumerate(self.hidden):
                h = torch.baddbmm(layer.bias, h, layer.weight,
                                  out=self._buffer(1 + i % 2, (m, p * s, layer.weight.shape[-1]), w.dtype)).relu_()
        elif self.torso == "relu":  # plain ReLU MLP on [obs, action] (TD3/SAC-style critics)
            h = F.relu((h_act.view(m, p, s, -1) + (h_obs + self.first.bias).unsqueeze(1)).view(m, p * s, -1))
            for layer in self.hidden:
                h = F.relu(layer(h))
        elif torch.is_grad_enabled():
            h = (h_act.view(m, p, s, -1) + (h_obs + self.first.bias).unsqueeze(1)).view(m, p * s, -1)
            h = torch.tanh(self.norm(h))
            for layer in self.hidden:
                h = F.elu(layer(h))
        else:  # inference (target critic on N x T x B samples): in-place, fewer memory passes
            h = h_act.view(m, p, s, -1).add_((h_obs + self.first.bias).unsqueeze(1)).view(m, p * s, -1)
            h = F.layer_norm(h, (h.shape[-1],)).mul_(self.norm.weight).add_(self.norm.bias).tanh_()
            for i, layer in enumerate(self.hidden):
                h = F.elu(torch.baddbmm(layer.bias, h, layer.weight,
                                        out=self._buffer(1 + i % 2, (m, p * s, layer.weight.shape[-1]), w.dtype)), inplace=True)
        q = self.out(h)  # [M, P*S, out]
        if self.architecture == "separate":
            q = q.squeeze(-1).transpose(0, 1)  # [P*S, K]
        else:
            q = q.squeeze(0)  # [P*S, K]
        return q.reshape(*extra, *state_shape, self.num_objectives)


def action_features(action: Tensor, spec: ActionSpec) -> Tensor:
    """Critic input for an action: the (clipped) vector for ``box``, one-hot for ``discrete``."""
    if spec.is_discrete:
        return F.one_hot(action.long(), spec.num_actions).to(torch.float32)
    return torch.clamp(action, -1.0, 1.0)


def make_policy(obs_dim: int, spec: ActionSpec, hidden: Sequence[int], min_std: float = 1e-4,
                init_std: float = 0.7) -> nn.Module:
    if spec.is_discrete:
        return CategoricalPolicy(obs_dim, spec.num_actions, hidden)
    return GaussianPolicy(obs_dim, spec.dim, hidden, min_std=min_std, init_std=init_std)
