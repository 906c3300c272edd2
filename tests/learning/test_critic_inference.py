"""The critic's inference path (the target scoring: no autograd, activations in reused storage)
computes what the autograd path does, bit for bit, for both torsos and any call sequence."""
from __future__ import annotations

import pytest
import torch

from morl_robot.learning.networks import Critic


@pytest.mark.parametrize("torso", ["relu", "layernorm"])
@pytest.mark.parametrize("architecture", ["separate", "shared"])
def test_inference_equals_autograd_path_and_reuses_storage(torso: str, architecture: str) -> None:
    torch.manual_seed(0)
    critic = Critic(7, 3, 2, (32, 16, 8), architecture=architecture, output_scale=1.0, torso=torso)
    obs = torch.randn(5, 4, 7)
    for n in (6, 6, 2):  # a repeated shape reuses the storage, a new one replaces it
        action = torch.rand(n, 5, 4, 3) * 2 - 1
        with torch.no_grad():
            fast = critic(obs, action)
            ptr = critic._scratch[1].data_ptr()
            again = critic(obs, action)
            assert critic._scratch[1].data_ptr() == ptr
        slow = critic(obs, action).detach()
        assert fast.shape == (n, 5, 4, 2)
        assert torch.equal(fast, slow) and torch.equal(again, slow)
    assert "_scratch" not in "".join(critic.state_dict())  # scratch is not state
