"""PRISM (issue 38): mirror maps (involutions that fit their spaces; the environment symmetric under
an exact one), the SymReg loss (zero for an equivariant policy) and its place in the learner's M-step,
and the densified critic's hooks (replace, the TorchScript file re-read when retrained)."""
import functools

import numpy as np
import pytest
import torch

from morl_robot.errors import ConfigError
from morl_robot.learning import mpo
from morl_robot.learning.config import config_from_dict
from morl_robot.learning.learner import MOMPOLearner
from morl_robot.learning.networks import ActionSpec
from morl_robot.learning.replay import SequenceBatch
from morl_robot.prism.mirror import (
    MirrorMap,
    is_involution,
    load_mirror_map,
    symmetry_defect,
)
from morl_robot.resources import config_names

mo_gymnasium = pytest.importorskip("mo_gymnasium")
MAPS = config_names("prism/mirror")


def test_the_papers_maps_are_shipped():
    assert {"mo-hopper-v5", "mo-walker2d-v5", "mo-halfcheetah-v5", "mo-swimmer-v5", "mo-swimmer-v5-exact"} <= set(MAPS)
    hopper = load_mirror_map("mo-hopper-v5")  # Table 4
    assert hopper.observation_negate == [2, 3, 4, 8, 9, 10] and hopper.action_negate == [0, 1, 2]


@pytest.mark.parametrize("name", MAPS)
def test_every_map_is_an_involution_that_fits_its_environment(name):
    mirror = load_mirror_map(name)
    assert is_involution(mirror)
    env = mo_gymnasium.make(mirror.env_id)
    mirror.check_spaces(env.observation_space, env.action_space)
    env.close()


def test_the_exact_swimmer_map_is_a_symmetry_of_the_environment():
    """Reflected rollouts give reflected observations (up to round-off) under the exact map; the
    paper's Table 7 map (tip angle kept) and Table 4 hopper map are not symmetries of the dynamics."""
    exact = load_mirror_map("mo-swimmer-v5-exact")
    make = functools.partial(mo_gymnasium.make, exact.env_id)
    assert exact.exact
    assert max(symmetry_defect(exact, make, steps=30, seed=s) for s in range(2)) < 1e-6
    assert symmetry_defect(load_mirror_map("mo-swimmer-v5"), make, steps=30, seed=0) > 0.1
    hopper = load_mirror_map("mo-hopper-v5")
    assert not hopper.exact
    assert symmetry_defect(hopper, functools.partial(mo_gymnasium.make, "mo-hopper-v5"), steps=30, seed=0) > 0.1


def test_map_errors_name_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("env_id: mo-hopper-v5\nobservation_dim: 11\naction_dim: 3\nobservation_negate: [11]\n")
    with pytest.raises(ConfigError, match=r"observation_negate.*\[0, 11\)"):
        load_mirror_map(bad)
    bad.write_text("env_id: x\nobservation_dim: 2\naction_dim: 1\nexact: true\n")
    with pytest.raises(ConfigError, match="exact map needs its state"):
        load_mirror_map(bad)
    env = mo_gymnasium.make("mo-swimmer-v5")
    with pytest.raises(ConfigError, match="widths 11/3, the environment has 8/2"):
        load_mirror_map("mo-hopper-v5").check_spaces(env.observation_space, env.action_space)


def _linear_policy(w):
    return lambda s: s @ w.T


def test_symmetry_loss_is_zero_for_an_equivariant_policy_and_positive_otherwise():
    g = torch.Generator().manual_seed(0)
    obs_sign = torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0])
    act_sign = torch.tensor([-1.0, 1.0, -1.0])
    w = torch.randn(3, 5, generator=g)
    mu = _linear_policy(w)
    # the orbit average Q(π)(s) = ½(π(s) + K π(L s)) is equivariant (paper Lemma C.4)
    mu_eq = lambda s: 0.5 * (mu(s) + mu(s * obs_sign) * act_sign)
    s = torch.randn(64, 5, generator=g)
    for norm in ("l1_squared", "l2_squared"):
        assert float(mpo.symmetry_loss(mu_eq(s * obs_sign), mu_eq(s), act_sign, norm=norm)) == pytest.approx(0.0, abs=1e-10)
        assert float(mpo.symmetry_loss(mu(s * obs_sign), mu(s), act_sign, norm=norm)) > 1e-2
    # log σ: invariant σ adds nothing; a σ that changes under the reflection is penalised
    ls = torch.randn(64, 3, generator=g)
    assert float(mpo.symmetry_loss(mu_eq(s * obs_sign), mu_eq(s), act_sign, ls, ls)) == pytest.approx(0.0, abs=1e-10)
    assert float(mpo.symmetry_loss(mu_eq(s * obs_sign), mu_eq(s), act_sign, ls + 0.5, ls)) == pytest.approx(1.5 ** 2)


def _batch(t=4, b=16, o=5, d=2, k=2, seed=0):
    rng = np.random.default_rng(seed)
    return SequenceBatch(rng.normal(size=(t + 1, b, o)).astype(np.float32), rng.uniform(-1, 1, (t, b, d)).astype(np.float32),
                         rng.normal(size=(t, b, k)).astype(np.float32), np.zeros((t, b), np.float32),
                         np.zeros((t, b), np.float32), np.zeros((t, b), np.float32), np.ones((t, b), np.float32))


SMALL = {"batch_size": 16, "sequence_length": 4, "num_samples": 5, "networks": {"policy_hidden": [16], "critic_hidden": [16]}}


def test_symreg_in_the_m_step_is_logged_and_pulls_the_policy_towards_equivariance():
    sym = {"weight": 50.0, "observation_negate": [1, 2], "action_negate": [0]}
    learner = MOMPOLearner(5, ActionSpec.box(2), 2, config_from_dict({**SMALL, "symreg": sym}), seed=0)
    obs_sign, act_sign = learner.symreg_signs
    s = torch.randn(256, 5, generator=torch.Generator().manual_seed(1))

    def defect():
        with torch.no_grad():
            return float(mpo.symmetry_loss(learner.policy(s * obs_sign)[0], learner.policy(s)[0], act_sign))

    before = defect()
    stats = [learner.update(_batch(seed=i)) for i in range(30)]
    assert all("loss/symreg" in st for st in stats)
    assert defect() < 0.5 * before
    plain = MOMPOLearner(5, ActionSpec.box(2), 2, config_from_dict(SMALL), seed=0)
    assert "loss/symreg" not in plain.update(_batch())


def test_symreg_and_densify_errors():
    with pytest.raises(ConfigError, match=r"symreg.observation_negate: indices must be < 5"):
        MOMPOLearner(5, ActionSpec.box(2), 2, config_from_dict({**SMALL, "symreg": {"observation_negate": [5]}}))
    with pytest.raises(ConfigError, match="continuous"):
        MOMPOLearner(5, ActionSpec.discrete(3), 2, config_from_dict({**SMALL, "symreg": {}}))
    with pytest.raises(ConfigError, match=r"densify.objectives'?: indices must be < 2"):
        MOMPOLearner(5, ActionSpec.box(2), 2, config_from_dict({**SMALL, "densify": {"objectives": [2]}}))


def test_densified_critic_learns_the_model_and_rereads_a_retrained_file(tmp_path):
    from morl_robot.prism.resymnet import (
        Densifier,
        ReSymNet,
        RewardEnsemble,
        export_densifier,
    )

    path = tmp_path / "model.pt"
    cfg = config_from_dict({**SMALL, "densify": {"objectives": [0], "model": str(path)}})
    learner = MOMPOLearner(5, ActionSpec.box(2), 2, cfg, seed=0)
    assert "densify/predicted_mean/objective_0" not in learner.update(_batch())  # no model yet: released rewards

    def constant(value):
        net = ReSymNet(5 + 2 + 1, hidden=8)
        with torch.no_grad():
            for p in net.parameters():
                p.zero_()
            net.head.bias.fill_(value)
        return Densifier([RewardEnsemble([net], torch.zeros(8), torch.ones(8))], dense=[1])

    export_densifier(constant(3.0), path)
    assert learner.update(_batch())["densify/predicted_mean/objective_0"] == pytest.approx(3.0)
    export_densifier(constant(-2.0), path)  # retrained: every later sample is relabelled
    assert learner.update(_batch())["densify/predicted_mean/objective_0"] == pytest.approx(-2.0)


def test_mirror_map_validation_of_widths():
    m = MirrorMap(env_id="x", observation_dim=3, action_dim=1, observation_negate=[0, 0])
    with pytest.raises(ConfigError, match="distinct indices"):
        m.validate()
