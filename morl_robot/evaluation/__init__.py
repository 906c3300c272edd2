"""Evaluation of multi-objective policies: Pareto filtering, hypervolume, EUM, sparsity, plots,
and preference sweeps.

Conventions: every objective is maximised; a set of return vectors is an array (P, K)
(P points, K objectives).  Plots import matplotlib lazily (``morl_robot.evaluation.plots``) so
that the metrics stay importable without it.
"""
from morl_robot.evaluation.hypervolume import hypervolume, hypervolume_contributions
from morl_robot.evaluation.pareto import (
    cardinality,
    dominates,
    expected_utility,
    pareto_front,
    pareto_mask,
    simplex_weights,
    sparsity,
)
from morl_robot.evaluation.sweep import (
    Setting,
    SweepRecord,
    SweepResult,
    run_sweep,
    settings_grid,
)

__all__ = [
    "Setting",
    "SweepRecord",
    "SweepResult",
    "cardinality",
    "dominates",
    "expected_utility",
    "hypervolume",
    "hypervolume_contributions",
    "pareto_front",
    "pareto_mask",
    "run_sweep",
    "settings_grid",
    "simplex_weights",
    "sparsity",
]
