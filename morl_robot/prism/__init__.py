"""PRISM in MO-MPO (issue 38): learned densification of sparse objectives and mirror symmetry.

After "Parallel Reward Integration with Symmetry" (../shared/papers/prism_parallel-reward-integration-symmetry.txt):

* :mod:`~morl_robot.prism.sparse` — a wrapper paying an objective only on release (probability
  p_rel per step, always at episode end), recording the released segments;
* :mod:`~morl_robot.prism.resymnet` — ReSymNet, its ensemble, the segment-sum loss (eq. 1) and its
  training (Table 8), exported as the TorchScript reward model the learner densifies with;
* :mod:`~morl_robot.prism.mirror` — reflection maps L_g / K_g per task (config/prism/mirror/*.yaml);
* :mod:`~morl_robot.prism.config` — the PRISM YAML (config/prism/*.yaml, Table 8 defaults);
* :mod:`~morl_robot.prism.diagnostics` — predicted vs true per-step reward, EPIC distance;
* :mod:`~morl_robot.prism.experiment` — oracle / baseline / PRISM runs (``morl-robot prism``).

The learner's side (SymReg in the M-step, densified critics) is in :mod:`morl_robot.learning`
(``symreg:`` and ``densify:`` of the learner config).  See docs/explanation/prism.md.
"""
