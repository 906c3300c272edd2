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


@pytest.mark.parametrize("architecture", ["separate", "shared"])
def test_blocked_relu_inference_at_the_conditioned_shapes(architecture: str) -> None:
    """At the conditioned profile's target scoring (N + 1 = 11 action blocks of (T+1)·B = 640
    states, 256-unit layers) the ReLU critic's inference goes one action block at a time: bit for
    bit the autograd path's Q, laid out alike (member-major for separate critics), and not a view
    of the scratch storage (the next call does not change it)."""
    torch.manual_seed(0)
    critic = Critic(19, 6, 2, (256, 256), architecture=architecture, output_scale=1.0, torso="relu")
    obs = torch.randn(5, 128, 19)
    action = torch.rand(11, 5, 128, 6) * 2 - 1
    with torch.no_grad():
        fast = critic(obs, action)
        kept = fast.clone()
        assert critic._scratch[1].shape == (critic.first.weight.shape[0], 640, 256)  # one block's rows
        critic(obs, torch.rand(11, 5, 128, 6))
    slow = critic(obs, action).detach()
    assert torch.equal(fast, slow) and torch.equal(fast, kept)
    assert fast.stride() == slow.stride()
