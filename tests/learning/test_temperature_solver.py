"""The exact temperature solver on many groups at once (the ε-conditioned E-step solves K·B of
them per update): every group lands on its own root, however long the others take."""
import math

import torch

from morl_robot.learning import mpo


def _mean_kl(q: torch.Tensor, log_eta: torch.Tensor) -> torch.Tensor:
    log_w = torch.log_softmax(q / log_eta.exp()[:, None, None], dim=1)
    return (log_w.exp() * (log_w + math.log(q.shape[1]))).sum(1).mean(-1)


def test_every_group_reaches_its_bound_while_others_still_converge():
    """256 groups with bounds spread over 50x: each group's mean KL equals its ε to ~1e-12 (a group
    that converged first is not moved off its root by bisection while the rest finish)."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(256, 10, 4, generator=g, dtype=torch.float64) * torch.logspace(-2, 2, 256, dtype=torch.float64)[:, None, None]
    eps = torch.exp(torch.empty(256, dtype=torch.float64).uniform_(math.log(0.01), math.log(0.5), generator=g))
    log_eta = mpo.solve_log_temperatures(q, eps)
    assert torch.allclose(_mean_kl(q, log_eta) / eps, torch.ones_like(eps), rtol=0, atol=1e-10)
    for i in (0, 97, 255):  # the same root as the group solved alone
        alone = mpo.solve_log_temperatures(q[i:i + 1], eps[i:i + 1])
        assert abs(float(alone[0] - log_eta[i])) < 1e-9
