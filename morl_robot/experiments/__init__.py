"""The MO-MPO paper's toy experiments (Abdolmaleki et al., 2020, §5), runnable from the CLI.

* :mod:`morl_robot.experiments.simple_world` — §5.1, the 3-armed two-objective bandit with exact
  policy evaluation and exact policy improvement; scale invariance of MO-MPO vs scalarized MPO.
* :mod:`morl_robot.experiments.deep_sea_treasure` — §5.2, MO-Gymnasium's ``deep-sea-treasure-v0``
  with an ε sweep (MO-MPO) and a weight sweep (scalarized MPO) through the learner's ``train``.

``morl-robot experiment simple-world --out DIR`` and ``morl-robot experiment deep-sea-treasure
--out DIR`` (see :mod:`morl_robot.cli.experiment`) print a table and write ``results.json`` and
plots into DIR.
"""
