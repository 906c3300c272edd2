"""ReSymNet (PRISM §4.1, Appendix B, Table 8): a per-step reward model trained on released sums.

Features ``h_t = [s_t, a_t, r_t^dense]`` (``[d]``, standardised with the training set's mean and
std).  Architecture (Fig. 2): ``Linear(d, H) → LayerNorm → ReLU`` then ``residual_blocks`` blocks
``x ↦ LN(W₂ Dropout(ReLU(LN(W₁ x)))) + x`` then ``Linear(H, 1)``; Kaiming initialisation; an
ensemble of members whose mean is the prediction.  Loss (eq. 1) over released segments τ_j::

    L(ψ) = Σ_j ( Σ_{t∈τ_j} R_pred(h_t; ψ) − R^sp(τ_j) )²        (mean over j in a minibatch)

Training: AdamW, exponential learning-rate decay per epoch, gradient-norm clipping, early stopping
on a validation split of the segments (patience in epochs; the best validation state is kept).
:func:`export_densifier` writes the TorchScript model the learner reads (``densify.model``).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from morl_robot.errors import ConfigError
from morl_robot.prism.config import ReSymNetConfig
from morl_robot.prism.sparse import Episode

Tensor = torch.Tensor


class ResidualBlock(nn.Module):
    """``x ↦ LN(W₂ Dropout(ReLU(LN(W₁ x)))) + x`` (without the ``+ x`` when ``residual`` is false)."""

    def __init__(self, width: int, dropout: float, residual: bool = True):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.ReLU(), nn.Dropout(dropout),
                                  nn.Linear(width, width), nn.LayerNorm(width))
        self.residual = residual

    def forward(self, x: Tensor) -> Tensor:  # [M, H] -> [M, H]
        y = self.body(x)
        return y + x if self.residual else y


class ReSymNet(nn.Module):
    """One member: ``[M, d]`` standardised features → ``[M]`` per-step predictions."""

    def __init__(self, in_dim: int, hidden: int = 256, blocks: int = 2, dropout: float = 0.3, residual: bool = True):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(in_dim, hidden), nn.LayerNorm(hidden), nn.ReLU())
        self.blocks = nn.Sequential(*[ResidualBlock(hidden, dropout, residual) for _ in range(blocks)])
        self.head = nn.Linear(hidden, 1)
        for m in self.modules():
            if isinstance(m, nn.Linear):  # Kaiming (He et al. 2015), Table 8
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)

    def forward(self, h: Tensor) -> Tensor:
        return self.head(self.blocks(self.stem(h))).squeeze(-1)


class RewardEnsemble(nn.Module):
    """Mean of the members on features standardised by the buffers ``mean``/``std`` ``[d]``."""

    def __init__(self, members: Sequence[ReSymNet], mean: Tensor, std: Tensor):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.register_buffer("mean", mean.float())
        self.register_buffer("std", std.float())

    def forward(self, h: Tensor) -> Tensor:  # [M, d] raw features -> [M]
        z = (h - self.mean) / self.std
        out = torch.zeros(h.shape[0], dtype=h.dtype, device=h.device)
        for m in self.members:
            out = out + m(z)
        return out / len(self.members)


class Densifier(nn.Module):
    """What the learner calls: ``(obs [M, O], actions [M, D], rewards [M, K]) → r̂ [M, S]``, one
    ensemble per sparse objective, fed ``h = [s, a, r[dense]]``."""

    def __init__(self, ensembles: Sequence[RewardEnsemble], dense: Sequence[int]):
        super().__init__()
        self.ensembles = nn.ModuleList(ensembles)
        self.register_buffer("dense", torch.as_tensor(list(dense), dtype=torch.long))

    def forward(self, obs: Tensor, actions: Tensor, rewards: Tensor) -> Tensor:
        h = torch.cat([obs, actions, rewards.index_select(1, self.dense)], dim=1)
        return torch.stack([e(h) for e in self.ensembles], dim=1)


# --------------------------------------------------------------------------------------------
# data and loss
# --------------------------------------------------------------------------------------------


@dataclass
class SegmentData:
    """Released segments laid end to end: features ``[N, d]``, the segment of each step
    ``segment [N]`` (0 … S−1, contiguous), the released sums ``returns [S]`` and the segments'
    step ranges ``offsets [S+1]`` (segment j is ``features[offsets[j]:offsets[j+1]]``)."""

    features: np.ndarray
    segment: np.ndarray
    returns: np.ndarray
    offsets: np.ndarray

    @property
    def num_segments(self) -> int:
        return int(self.returns.shape[0])


def features_of(episode: Episode, dense: Sequence[int]) -> np.ndarray:
    """``h_t = [s_t, a_t, r_t^dense]`` for every step: ``[T, O + D + len(dense)]`` (the dense channels
    are released every step, so their released value is the per-step reward)."""
    return np.concatenate([episode.observations, episode.actions.reshape(len(episode), -1),
                           episode.released_rewards[:, list(dense)]], axis=1).astype(np.float32)


def segment_data(episodes: Sequence[Episode], objective: int, dense: Sequence[int]) -> SegmentData:
    """The released segments of ``objective`` over ``episodes`` (Algorithm 1 lines 11-16)."""
    feats, seg, rets, offsets = [], [], [], [0]
    for ep in episodes:
        h = features_of(ep, dense)
        for start, stop, total in ep.segments(objective):
            feats.append(h[start:stop])
            seg.append(np.full(stop - start, len(rets), np.int64))
            rets.append(total)
            offsets.append(offsets[-1] + stop - start)
    if not rets:
        raise ConfigError(f"no released segments of objective {objective} in {len(episodes)} episodes")
    return SegmentData(np.concatenate(feats), np.concatenate(seg), np.asarray(rets, np.float32),
                       np.asarray(offsets, np.int64))


def segment_sum_loss(pred: Tensor, segment: Tensor, returns: Tensor) -> Tensor:
    """Eq. 1 per minibatch: ``mean_j (Σ_{t: segment[t]=j} pred_t − returns_j)²``.

    ``pred [N]``, ``segment [N]`` (long, 0 … S−1), ``returns [S]`` → scalar.
    """
    sums = torch.zeros_like(returns).index_add(0, segment, pred)
    return ((sums - returns) ** 2).mean()


def _batch(data: SegmentData, seg_ids: np.ndarray) -> tuple[Tensor, Tensor, Tensor]:
    """Features ``[n, d]``, local segment index ``[n]`` and returns ``[len(seg_ids)]`` of the segments."""
    ranges = [np.arange(data.offsets[j], data.offsets[j + 1]) for j in seg_ids]
    idx = np.concatenate(ranges)
    local = np.concatenate([np.full(len(r), i, np.int64) for i, r in enumerate(ranges)])
    return (torch.as_tensor(data.features[idx]), torch.as_tensor(local), torch.as_tensor(data.returns[seg_ids]))


@dataclass
class MemberReport:
    epochs: int
    best_epoch: int
    train_loss: float
    val_loss: float


def train_member(data: SegmentData, cfg: ReSymNetConfig, mean: Tensor, std: Tensor, seed: int
                 ) -> tuple[ReSymNet, MemberReport]:
    """One ensemble member on its own train/validation split of the segments (early stopping)."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    order = rng.permutation(data.num_segments)
    n_val = max(1, round(cfg.validation_split * data.num_segments))
    if data.num_segments - n_val < 1:
        raise ConfigError(f"ReSymNet needs at least 2 released segments (train and validation), got {data.num_segments}")
    val_ids, train_ids = order[:n_val], order[n_val:]
    model = ReSymNet(data.features.shape[1], cfg.hidden, cfg.residual_blocks, cfg.dropout, cfg.residual)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=cfg.lr_decay)
    xv, sv, rv = _batch(data, val_ids)
    xv = (xv - mean) / std
    best, best_state, best_epoch, since, train_loss = float("inf"), None, 0, 0, float("nan")
    epoch = 0
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        perm = rng.permutation(train_ids)
        losses = []
        for lo in range(0, len(perm), cfg.batch_size):
            x, s, r = _batch(data, perm[lo: lo + cfg.batch_size])
            loss = segment_sum_loss(model((x - mean) / std), s, r)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
        sched.step()
        train_loss = float(np.mean(losses))
        model.eval()
        with torch.no_grad():
            val = float(segment_sum_loss(model(xv), sv, rv))
        if val < best:
            best, best_epoch, since = val, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            since += 1
            if since >= cfg.patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return model, MemberReport(epoch, best_epoch, train_loss, best)


def train_ensemble(data: SegmentData, cfg: ReSymNetConfig, seed: int = 0) -> tuple[RewardEnsemble, list[MemberReport]]:
    """``cfg.ensemble`` members (seeds ``seed``, ``seed + 1`` …), inputs standardised by the mean
    and std of all steps (a constant column gets std 1)."""
    x = torch.as_tensor(data.features)
    mean = x.mean(0)
    std = x.std(0, unbiased=False)
    std = torch.where(std > 1e-6, std, torch.ones_like(std))
    members, reports = [], []
    for i in range(cfg.ensemble):
        m, rep = train_member(data, cfg, mean, std, seed + 1000 * i)
        members.append(m)
        reports.append(rep)
    return RewardEnsemble(members, mean, std).eval(), reports


def train_densifier(episodes: Sequence[Episode], sparse: Sequence[int], dense: Sequence[int], cfg: ReSymNetConfig,
                    seed: int = 0) -> tuple[Densifier, dict[int, list[MemberReport]]]:
    """One ensemble per sparse objective, on the released segments of ``episodes``."""
    ensembles, reports = [], {}
    for j, k in enumerate(sparse):
        ens, rep = train_ensemble(segment_data(episodes, k, dense), cfg, seed + 17 * j)
        ensembles.append(ens)
        reports[int(k)] = rep
    return Densifier(ensembles, dense).eval(), reports


def export_densifier(densifier: Densifier, path: str | os.PathLike[str]) -> Path:
    """TorchScript ``densifier`` to ``path`` atomically (a learner re-reading the file never sees a
    half-written model)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.jit.script(densifier.eval()).save(str(tmp))
    os.replace(tmp, path)
    return path
