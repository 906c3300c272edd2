"""MO-MPO learner core in pure PyTorch (Abdolmaleki et al. 2020): losses, networks, sequence
replay, the update step, checkpoint payloads.  Imports only torch, numpy and the row-0 modules
(errors, configuration, resources); a learner *run* (restore, intake, demonstrations, snapshots,
metrics, the in-process ``train()``) is :mod:`morl_robot.training`.  docs/explanation/architecture.md.

Public API (stable; other packages import from here):

* maths (:mod:`.mpo`): ``temperature_dual``, ``e_step_weights``, ``kl_to_prior``,
  ``solve_temperature``, ``multi_objective_e_step``, ``scalarize_q``, ``gaussian_m_step``,
  ``categorical_m_step``, ``retrace_targets``, ``n_step_targets``
* configuration (:mod:`.config`): ``MPOConfig``, ``load_learner_config``
* networks (:mod:`.networks`): ``ActionSpec``, ``GaussianPolicy``, ``CategoricalPolicy``, ``Critic``
* replay (:mod:`.replay`): ``SequenceReplay``, ``SequenceBatch``, ``SampleToInsertRatio``
* learner (:mod:`.learner`): ``MOMPOLearner``, ``PolicyActor``
* checkpoints (:mod:`.checkpoint`): ``save_checkpoint``, ``load_checkpoint``, ``latest_checkpoint``,
  ``CheckpointError``
"""
from morl_robot.learning.config import MPOConfig, load_learner_config
from morl_robot.learning.learner import MOMPOLearner, PolicyActor
from morl_robot.learning.mpo import (
    categorical_m_step,
    e_step_weights,
    gaussian_m_step,
    kl_to_prior,
    multi_objective_e_step,
    n_step_targets,
    retrace_targets,
    scalarize_q,
    solve_temperature,
    temperature_dual,
)
from morl_robot.learning.networks import (
    ActionSpec,
    CategoricalPolicy,
    Critic,
    GaussianPolicy,
)
from morl_robot.learning.replay import (
    SampleToInsertRatio,
    SequenceBatch,
    SequenceReplay,
)

__all__ = [
    "ActionSpec",
    "CategoricalPolicy",
    "Critic",
    "GaussianPolicy",
    "MOMPOLearner",
    "MPOConfig",
    "PolicyActor",
    "SampleToInsertRatio",
    "SequenceBatch",
    "SequenceReplay",
    "categorical_m_step",
    "e_step_weights",
    "gaussian_m_step",
    "kl_to_prior",
    "load_learner_config",
    "multi_objective_e_step",
    "n_step_targets",
    "retrace_targets",
    "scalarize_q",
    "solve_temperature",
    "temperature_dual",
]

from morl_robot.learning.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)

__all__ += [
    "CheckpointError",
    "latest_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
]
