"""A categorical policy without hidden layers is a table on one-hot states (what the exact tabular
MO-MPO on Deep Sea Treasure iterates): an update at one state leaves every other state's policy as it
was; with hidden layers it does not."""
import pytest
import torch

from morl_robot.errors import ConfigError
from morl_robot.learning.config import NetworkConfig
from morl_robot.learning.networks import CategoricalPolicy


def _step_on_one_state(hidden: list[int]) -> torch.Tensor:
    torch.manual_seed(0)
    policy = CategoricalPolicy(6, 4, hidden)
    states = torch.eye(6)
    before = torch.log_softmax(policy(states), -1).detach()
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for _ in range(20):  # push state 2 towards action 3
        loss = -torch.log_softmax(policy(states[2:3]), -1)[0, 3]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.log_softmax(policy(states), -1).detach() - before  # (6, 4)


def test_a_policy_without_hidden_layers_is_a_table():
    change = _step_on_one_state([])
    assert change[2, 3] > 0.1
    assert torch.equal(change[[0, 1, 3, 4, 5]], torch.zeros(5, 4))
    shared = _step_on_one_state([16])
    assert shared[[0, 1, 3, 4, 5]].abs().max() > 1e-3  # hidden layers carry the update to other states


def test_only_the_policy_may_have_no_hidden_layers():
    NetworkConfig(policy_hidden=[]).validate()
    with pytest.raises(ConfigError, match="critic_hidden"):
        NetworkConfig(critic_hidden=[]).validate()
    with pytest.raises(ConfigError, match="policy_hidden"):
        NetworkConfig(policy_hidden=[0]).validate()
