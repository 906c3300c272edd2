"""``morl-robot experiment NAME --out DIR``: the papers' experiments, reproduced: MO-MPO's bandit and
Deep Sea Treasure (§5), its Sawyer and Shadow Hand fronts (§6), the EPIC and MORM papers' experiments,
and the ε-conditioned policy for every preference.

* ``simple-world``: the 3-armed bandit of §5.1 (exact Q-values, exact policy improvement);
  MO-MPO vs scalarized MPO, balanced vs objective 1 ×20.  Seconds.
* ``deep-sea-treasure``: §5.2 on MO-Gymnasium's ``deep-sea-treasure-v0``; an ε sweep for MO-MPO
  and a weight sweep for scalarized MPO through the learner's ``train``/``evaluate``.  Minutes to
  hours depending on ``--steps`` and the sweep size; ``--quick`` is a smoke run.
* ``sawyer-peg-in-hole``: a short MO-MPO run on the Sawyer task (§6.4) with learning curves.
* ``sawyer-front``: the Sawyer ε_force front (§6.4, Fig. 7), by default from one ε-conditioned
  policy per seed, or (``--method per-setting``) one policy per setting; resumable.
* ``dst-exact``: exact tabular MO-MPO on Deep Sea Treasure (the learned runs' reference).
* ``dst-diagnose``: one learned Deep Sea Treasure run held against the exact algorithm.
* ``shadow-front``: the Shadow Hand fronts (§6.2, Table 1): MO-MPO's ε sweep against scalarized
  MPO's weight sweep at equal budget on touch / turn, hypervolume with the paper's reference point;
  on orient, MO-MPO against the random policy.  Resumable; ``--quick`` is a smoke run.
* ``epic-gridworld`` / ``epic-pointmass``: the EPIC paper's reward-distance reproductions (exact / sampled).
* ``sawyer-rm``: the Sawyer peg task with a MORM objective, trained with CRM, evaluated with the protocol.
* ``conditioned``: one ε-conditioned MO-MPO policy for a whole box of preferences on any
  MO-Gymnasium-style env, against an MO-MPO ε sweep or CAPQL at equal steps (``conditioned-report``
  summarises seeds).
* ``button-world``: the MORM paper's ButtonWorld (product state counts, exact fronts, MO-MPO with
  and without counterfactual experience).

Each prints a table and writes ``results.json`` plus PNG plots into ``--out``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from morl_robot.cli.options import (
    add_epsilon,
    add_set,
    deprecated,
    epsilon_alias,
    epsilon_hint,
    epsilons,
)
from morl_robot.errors import UsageError

if TYPE_CHECKING:
    from morl_robot.experiments.deep_sea_treasure import LearnerKnobs


#: The Sawyer peg-in-hole task's objectives (the names ``--epsilon`` takes).
SAWYER_OBJECTIVES = ("task", "wrist_force")
#: ``sawyer-front --method per-setting``'s learner profile (the best measured; docs/howto/choose_learner.md).
SAWYER_FRONT_PER_SETTING_LEARNER = "learner/sawyer_front_clone_lr.yaml"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("experiment", help="reproduce a paper experiment: MO-MPO bandit and Deep Sea Treasure, "
                                                "Sawyer and Shadow Hand fronts, EPIC, reward machines, ε-conditioned")
    exp_sub = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    exp_sub.required = True

    sw = exp_sub.add_parser("simple-world", help="MO-MPO §5.1: 3-armed bandit, scale invariance")
    sw.add_argument("--out", required=True, type=Path, help="output folder (results.json, plots)")
    sw.add_argument("--beta", type=float, default=0.001, help="M-step KL bound β (default 0.001)")
    sw.add_argument("--tol", type=float, default=1e-8,
                    help="convergence: stop when max |Δπ(a)| < tol (default 1e-8)")
    sw.add_argument("--max-steps", type=int, default=20_000, help="improvement steps at most (default 20000)")
    sw.set_defaults(func=_run_simple_world)

    dst = exp_sub.add_parser("deep-sea-treasure", help="MO-MPO §5.2: ε sweep vs weight sweep on DST")
    dst.add_argument("--out", required=True, type=Path, help="output folder (results.json, plots)")
    dst.add_argument("--processes", type=int, default=2, help="parallel training processes (default 2)")
    dst.add_argument("--steps", type=int, default=None,
                     help="environment steps per training run (default: 8000, --quick: 300)")
    dst.add_argument("--quick", action="store_true",
                     help="smoke run: 2 settings per algorithm, few steps, small networks")
    dst.add_argument("--c-values", type=int, default=7,
                     help="points of the ε_treasure/ε_time ratio grid c over [0.5, 1.5] (paper: 101)")
    dst.add_argument("--c-range", type=float, nargs=2, default=(0.5, 1.5), metavar=("LO", "HI"),
                     help="range of c = ε_treasure/ε_time (paper: 0.5 1.5)")
    add_epsilon(dst, ("time",), "ε_time values, a grid (default time=0.01,0.02,0.05, the paper's); ε_treasure = c ε_time")
    dst.add_argument("--weights", type=int, default=None,
                     help="scalarized-MPO weights [w, 1−w] (default: as many runs as the ε sweep)")
    dst.add_argument("--eval-episodes", type=int, default=1,
                     help="evaluation episodes per policy (the env is deterministic; default 1)")
    dst.add_argument("--seed", type=int, default=0, help="seed of every training run")
    dst.add_argument("--time-limit", type=float, default=None,
                     help="seconds for this sitting; settings not finished by then are reported as not run "
                          "(--resume continues them) (default: no limit)")
    dst.add_argument("--resume", action="store_true",
                     help="keep the settings an earlier sitting finished in OUT (same per-run options) and run "
                          "only the rest, so the paper's 3 x 101 settings can span several sittings")
    dst.add_argument("--algorithms", default="mo-mpo,scalarized-mpo",
                     help="comma-separated subset of mo-mpo,scalarized-mpo")
    dst.add_argument("--converge", type=int, nargs=2, default=None, metavar=("EVERY", "COUNT"),
                     help="run to convergence: evaluate the greedy policy every EVERY steps and stop once "
                          "COUNT evaluations in a row agree (--steps is then the cap), e.g. 1000 5 (default: a fixed "
                          "number of steps)")
    dst.add_argument("--exact-reference", type=Path, default=None, metavar="RESULTS_JSON",
                     help="a dst-exact results.json: drawn in c_to_treasure.png and compared setting by setting "
                          "(default: none)")
    dst.add_argument("--exploring-starts", type=float, default=0.0, metavar="P",
                     help="probability that a training episode starts in a uniformly drawn open cell (the "
                          "exact reference's state distribution; evaluation always starts at the corner; "
                          "default 0: the paper's protocol)")
    dst.add_argument("--exploring-horizon", type=int, default=None, metavar="H",
                     help="cut an exploring-start episode after H steps (a truncation: the learner bootstraps), "
                          "so the replay stays near the start distribution (default: the 100-step limit)")
    _add_dst_learner_options(dst)
    dst.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(dst, "--epsilon-time", "--epsilon", convert=epsilon_alias("time"), append=True, nargs="+", type=float, hint=epsilon_hint)
    dst.set_defaults(func=_run_deep_sea_treasure)

    peg = exp_sub.add_parser("sawyer-peg-in-hole", help="MO-MPO §6.4: a short training run with learning curves")
    peg.add_argument("--out", required=True, type=Path, help="run folder (checkpoints, CSVs, plots, results.json)")
    peg.add_argument("--steps", type=int, default=40_000, help="environment steps (default 40000)")
    peg.add_argument("--learner", default=None, metavar="NAME|PATH",
                     help="learner profile, name under config/learner/ or path (default mo_mpo_cpu_small)")
    add_epsilon(peg, SAWYER_OBJECTIVES, "KL bound ε_k of an objective, both or neither (default: the profile's)")
    add_set(peg, ("learner", "task"))
    peg.add_argument("--seed", type=int, default=0, help="seed of the training run")
    peg.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(peg, "--config", "--learner")
    deprecated(peg, "--epsilons", "--epsilon", append=True, nargs=2, type=float,
               convert=lambda v: [("task", [float(v[0])]), ("wrist_force", [float(v[1])])], hint=epsilon_hint)
    peg.set_defaults(func=_run_sawyer)

    exact = exp_sub.add_parser("dst-exact", help="exact tabular MO-MPO on Deep Sea Treasure over ε_time x c "
                                                 "(the reference for the learned runs; paper Fig. 5 right)")
    exact.add_argument("--out", required=True, type=Path, help="folder for results.json and c_to_treasure.png")
    exact.add_argument("--c-values", type=int, default=101, help="values of c in [0.5, 1.5] (default 101, the paper's)")
    add_epsilon(exact, ("time",), "ε_time values, a grid (default time=0.01,0.02,0.05)")
    exact.add_argument("--gamma", type=float, default=0.99, help="discount of the exact evaluation (default 0.99)")
    exact.add_argument("--processes", type=int, default=2, help="worker processes, one setting each at a time")
    exact.add_argument("--state-distribution", choices=["uniform", "visitation", "exploring"], default="uniform",
                       help="the E-step's state distribution: uniform on the map (default), the current "
                            "policy's discounted visitation from the start, or from starts drawn uniformly on "
                            "open water (exploring starts)")
    exact.add_argument("--exploring-horizon", type=int, default=None, metavar="H",
                       help="with --state-distribution exploring: visitation of episodes cut after H steps "
                            "(deep-sea-treasure --exploring-horizon H) (default: no cut)")
    exact.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(exact, "--eps-time", "--epsilon", convert=epsilon_alias("time"), append=True, nargs="+", type=float, hint=epsilon_hint)
    exact.set_defaults(func=_run_dst_exact)

    diag = exp_sub.add_parser("dst-diagnose", help="train one learned MO-MPO run on Deep Sea Treasure and hold its final "
                                                   "policy against exact MO-MPO (critic errors; where the exact "
                                                   "algorithm goes from the learned policy)")
    diag.add_argument("--out", required=True, type=Path, help="the diagnosis JSON to write")
    diag.add_argument("--c", type=float, required=True, help="c = ε_treasure / ε_time")
    add_epsilon(diag, ("time",), "ε_time, one value (default time=0.02)")
    diag.add_argument("--seed", type=int, default=0, help="seed of the training run")
    diag.add_argument("--steps", type=int, default=30_000, help="environment steps, a cap with --converge (default 30000)")
    diag.add_argument("--converge", type=int, nargs=2, default=(1000, 8), metavar=("EVERY", "COUNT"),
                      help="stop once COUNT greedy evaluations EVERY steps apart agree (default 1000 8)")
    diag.add_argument("--exploring-starts", type=float, choices=[0.0, 1.0], default=1.0,
                      help="1: every training episode starts on a uniformly drawn open cell (default); 0: the corner")
    diag.add_argument("--exploring-horizon", type=int, default=None, metavar="H",
                      help="cut exploring-start episodes after H steps (as deep-sea-treasure --exploring-horizon) "
                           "(default: the 100-step limit)")
    diag.add_argument("--quick", action="store_true", help="tiny networks and batches (a smoke test, not a result)")
    _add_dst_learner_options(diag)
    deprecated(diag, "--eps-time", "--epsilon", convert=epsilon_alias("time"), append=True, type=float, hint=epsilon_hint)
    diag.set_defaults(func=_run_dst_diagnose)

    from morl_robot.experiments import sawyer_front  # light: the defaults live there

    front = exp_sub.add_parser("sawyer-front", help="MO-MPO §6.4 / Fig. 7: the ε_force front, by default from one "
                                                     "ε-conditioned policy per seed, or a resumable per-setting sweep "
                                                     "(policies, protocol evaluation, front with CIs across seeds)")
    front.add_argument("--out", required=True, type=Path,
                       help="sweep folder: runs/ (checkpoints) and the small results (results.json, policies/, plots/)")
    add_epsilon(front, SAWYER_OBJECTIVES, "task: ε_task, one value (default task=0.1); wrist_force: the ε_force "
                                          "settings, a grid (default wrist_force=0.005,0.01,0.02,0.05,0.1)")
    front.add_argument("--method", choices=("conditioned", "per-setting"), default=None,
                       help="conditioned (default): one ε-conditioned policy per seed for every setting; "
                            "per-setting: one MO-MPO policy per (ε_force, seed), the paper's way")
    front.add_argument("--seeds", type=int, nargs="+", default=None,
                       help="seeds (default 0 1 2 conditioned, 0 1 per-setting)")
    front.add_argument("--steps", type=int, default=40_000, help="environment steps per run (default 40000)")
    front.add_argument("--learner", default=None, metavar="NAME|PATH",
                       help=f"learner profile, name under config/learner/ or path (default "
                            f"{sawyer_front.DEFAULT_CONDITIONED_LEARNER} conditioned, {SAWYER_FRONT_PER_SETTING_LEARNER} "
                            "per-setting)")
    add_set(front, ("learner", "task"))
    front.add_argument("--eval-episodes", type=int, default=20, help="protocol episodes per policy (default 20)")
    front.add_argument("--eval-seed", type=int, default=10_000, help="first evaluation seed (default 10000)")
    front.add_argument("--processes", type=int, default=2, help="runs at a time, one process (core) each (default 2)")
    front.add_argument("--time-limit", type=float, default=None,
                       help="seconds for this sitting; unfinished runs keep their checkpoints and resume next time "
                            "(default: no limit)")
    front.add_argument("--reference-gains", type=float, nargs="*", default=None, metavar="G",
                       help="gains (1/s) of the scripted controller evaluated as the reference front (default "
                            "0.5 1 1.5 2 3 5; none: no reference)")
    front.add_argument("--reference-only", action="store_true",
                       help="only evaluate the scripted reference into OUT/scripted_reference.json (no training; "
                            "results.json is left as it is)")
    front.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(front, "--eps-task", "--epsilon", convert=epsilon_alias("task"), append=True, type=float, hint=epsilon_hint)
    deprecated(front, "--eps-force", "--epsilon", convert=epsilon_alias("wrist_force"), append=True, nargs="+",
               type=float, hint=epsilon_hint)
    deprecated(front, "--config", "--learner")
    deprecated(front, "--parallel", "--processes")
    deprecated(front, "--conditioned", "--method", nargs=0, convert=lambda _: "conditioned",
               hint=lambda _: "--method conditioned")
    front.set_defaults(func=_run_sawyer_front)

    sh = exp_sub.add_parser("shadow-front", help="MO-MPO §6.2 / Table 1: Shadow Hand touch/turn, MO-MPO ε sweep vs "
                                                 "scalarized MPO weight sweep at equal budget (orient: vs random)")
    sh.add_argument("--task", required=True, choices=["shadow_touch", "shadow_turn", "shadow_orient"],
                    help="the Shadow Hand task")
    sh.add_argument("--out", required=True, type=Path,
                    help="sweep folder: runs/ (checkpoints) and the small results (results.json, policies/, plots/)")
    sh.add_argument("--quick", action="store_true",
                    help="smoke run: 2 settings per algorithm, 1 seed, 300 steps, tiny networks, 2 evaluation "
                         "episodes (checks the pipeline, not a result)")
    add_epsilon(sh, ("task", "pain"), "MO-MPO's ε: task, one value (default task=0.1); pain, the settings grid "
                                      "(default pain=0.001,0.01,0.03,0.1; on shadow_orient the ε shared by its "
                                      "three objectives)")
    sh.add_argument("--weights-pain", type=float, nargs="+", default=None,
                    help="scalarized-MPO pain weights w, weights [1 - w, w] (default 0.01 0.05 0.2 0.5)")
    sh.add_argument("--scalarized-epsilon", type=float, default=None, help="scalarized MPO's ε (default 0.1)")
    sh.add_argument("--algorithms", default=None,
                    help="comma-separated subset of mo-mpo,scalarized-mpo (default both; orient: mo-mpo)")
    sh.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds per setting (default 0 1)")
    sh.add_argument("--steps", type=int, default=None,
                    help="environment steps per run, the same for every run (default 20000, --quick 300)")
    sh.add_argument("--learner", default=None, metavar="NAME|PATH",
                    help="learner profile, name under config/learner/ or path (default shadow_front)")
    add_set(sh, ("learner", "task"))
    sh.add_argument("--eval-episodes", type=int, default=None, help="protocol episodes per policy (default 20)")
    sh.add_argument("--action-mode", choices=["absolute", "delta"], default=None,
                    help="the hand's actions: absolute motor targets or changes of them from the measured "
                         "positions (task config action_mode; default: the task YAML's, absolute)")
    sh.add_argument("--eval-seed", type=int, default=10_000, help="first evaluation seed (default 10000)")
    sh.add_argument("--processes", type=int, default=1, help="runs at a time, one process (core) each (default 1)")
    sh.add_argument("--time-limit", type=float, default=None,
                    help="seconds for this sitting; unfinished runs keep their checkpoints and resume next time "
                         "(default: no limit)")
    sh.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(sh, "--eps-task", "--epsilon", convert=epsilon_alias("task"), append=True, type=float, hint=epsilon_hint)
    deprecated(sh, "--eps-pain", "--epsilon", convert=epsilon_alias("pain"), append=True, nargs="+", type=float, hint=epsilon_hint)
    deprecated(sh, "--config", "--learner")
    deprecated(sh, "--parallel", "--processes")
    sh.set_defaults(func=_run_shadow_front)

    bw = exp_sub.add_parser("button-world", help="MORM paper: ButtonWorld reward machines, product state counts, "
                                                  "exact fronts, MO-MPO with and without counterfactual experience")
    bw.add_argument("--out", required=True, type=Path, help="output folder (results.json, runs/, plots/)")
    bw.add_argument("--quick", action="store_true",
                    help="smoke run: 4000 steps, 1 seed, 2 ε settings, evaluation every 500 steps")
    bw.add_argument("--steps", type=int, default=None, help="environment steps per run (default 50000, --quick 4000)")
    bw.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds (default 0 1 2, --quick 0)")
    bw.add_argument("--eval-every", type=int, default=None, help="steps between evaluations (default 1000, --quick 500)")
    bw.add_argument("--pairs", nargs="+", default=None, metavar="X-Y",
                    help="variant pairs (default: term-term once-once term-cycle once-cycle cycle-cycle)")
    bw.add_argument("--exact-only", action="store_true", help="product state counts and exact fronts only (no training)")
    bw.add_argument("--finished-only", action="store_true",
                    help="train nothing: summarise the runs already in DIR/runs and list the missing ones")
    bw.add_argument("--no-progress", action="store_true", help="no progress bar")
    bw.set_defaults(func=_run_button_world)

    srm = exp_sub.add_parser("sawyer-rm", help="Sawyer peg-in-hole with a multi-objective reward machine (touch "
                                                "lightly then insert vs. never cross the force limit twice), "
                                                "MO-MPO with counterfactual experience, evaluated with the protocol")
    srm.add_argument("--out", required=True, type=Path, help="folder: run/ (checkpoints, CSVs), results.json, evaluation.md")
    srm.add_argument("--steps", type=int, default=40_000, help="environment steps (default 40000)")
    srm.add_argument("--no-crm", action="store_true", help="train without counterfactual experience (the baseline)")
    srm.add_argument("--learner", default=None, metavar="NAME|PATH",
                     help="learner profile, name under config/learner/ or path (default mo_mpo_cpu_small; "
                          "sawyer_front_demos learns from the scripted controller's demonstrations)")
    add_set(srm, ("learner", "task"))
    srm.add_argument("--crm-updates", choices=["scaled", "same"], default=None,
                     help="with CRM: 'scaled' counts each real step as |U \\ F| inserts (|U \\ F| times the "
                          "updates), 'same' keeps the baseline's update budget (default: the YAML's)")
    srm.add_argument("--seed", type=int, default=0, help="seed of the training run")
    srm.add_argument("--eval-episodes", type=int, default=20, help="protocol episodes (default 20)")
    srm.add_argument("--eval-seed", type=int, default=10_000, help="first evaluation seed (default 10000)")
    srm.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(srm, "--config", "--learner")
    srm.set_defaults(func=_run_sawyer_rm)

    grid = exp_sub.add_parser("epic-gridworld", help="EPIC paper Fig. A.2: exact distances between the 3x3 "
                                                     "gridworld rewards (Sparse, Dense, Penalty, Center, Path, Cliff)")
    grid.add_argument("--out", required=True, type=Path, help="folder for results.json, results.md, epic_gridworld.png")
    grid.set_defaults(func=_run_epic_gridworld)

    pm = exp_sub.add_parser("epic-pointmass", help="EPIC paper Fig. 2: sampled distances between PointMass rewards "
                                                   "(sparse, dense, magnitude, with/without control penalty)")
    pm.add_argument("--out", required=True, type=Path, help="folder for results.json, results.md, epic_pointmass.png")
    pm.add_argument("--precise", action="store_true", help="the paper's precise setting N_V = N_M = 32768 "
                                                           "(default 4096 x 4096)")
    pm.add_argument("--coverage", type=int, default=100_000, help="random-policy transitions (default 100000)")
    pm.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% CIs (default 1000)")
    pm.add_argument("--seed", type=int, default=0, help="seed of the coverage rollouts and the samples")
    pm.set_defaults(func=_run_epic_pointmass)

    cond = exp_sub.add_parser("conditioned", help="one ε-conditioned MO-MPO policy for every preference "
                              "(or, at equal steps, an MO-MPO ε sweep or CAPQL), evaluated on a preference grid")
    cond.add_argument("--env", required=True, help="MO-Gymnasium-style id, e.g. mo-halfcheetah-v5, "
                      "deep-sea-treasure-v0, morl_robot/SawyerPegInHole-v0")
    cond.add_argument("--steps", required=True, type=int, help="environment steps in all")
    cond.add_argument("--seed", type=int, default=0, help="seed of the training run(s)")
    cond.add_argument("--method", choices=("conditioned", "sweep", "capql"), default="conditioned",
                      help="conditioned (default): one ε-conditioned policy; sweep: one MO-MPO policy per ε "
                           "setting, steps split evenly; capql: morl-baselines' CAPQL")
    cond.add_argument("--out", required=True, type=Path, help="output folder (results.json, front.png)")
    cond.add_argument("--learner", default=None, metavar="NAME|PATH",
                      help="learner profile with a 'preferences' section, name or path (default: conditioned_spi64)")
    add_set(cond, ("learner",))
    cond.add_argument("--points", type=int, default=11, help="evaluation preferences (default 11)")
    cond.add_argument("--eval-episodes", type=int, default=3, help="deterministic episodes per preference (default 3)")
    cond.add_argument("--ref", type=float, nargs="+", default=None,
                      help="hypervolume reference point, one value per objective (default -100 each)")
    cond.add_argument("--sweep-settings", type=int, default=5, help="--method sweep: ε settings (default 5)")
    cond.add_argument("--min-replay", type=int, default=None,
                      help="override replay.min_size_to_sample (for tiny budgets) (default: the profile's)")
    cond.add_argument("--no-progress", action="store_true", help="no progress bar")
    deprecated(cond, "--config", "--learner")
    cond.set_defaults(func=_run_conditioned)

    crep = exp_sub.add_parser("conditioned-report", help="hypervolume IQM and CI per method over several "
                              "'experiment conditioned' results")
    crep.add_argument("results", nargs="+", type=Path, help="results.json files or their folders")
    crep.add_argument("--out", type=Path, default=None,
                      help="write summary.json and fronts.png here (default: print only)")
    crep.add_argument("--ref", type=float, nargs="+", default=None,
                      help="recompute every hypervolume at this reference point, one value per objective (default: "
                           "each result's own)")
    crep.set_defaults(func=_run_conditioned_report)

    peer = exp_sub.add_parser("peer-comparison", help="issue 36's peer comparison in one command: conditioned "
                              "MO-MPO, the MO-MPO sweep and CAPQL on HalfCheetah and Hopper, seeds x methods, "
                              "hypervolume IQM + CIs at reference -100 beside the do-nothing policy's")
    peer.add_argument("--out", required=True, type=Path, help="folder: <env>/<method>_s<seed>/, <env>/report/, summary.json")
    peer.add_argument("--steps", type=int, default=200_000, help="environment steps per run (default 200000)")
    peer.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per method and env (default 5)")
    peer.add_argument("--envs", nargs="+", default=None, help="default: mo-halfcheetah-v5 mo-hopper-v5")
    peer.add_argument("--methods", nargs="+", default=None, help="default: conditioned sweep capql")
    peer.add_argument("--min-replay", type=int, default=None,
                      help="override replay.min_size_to_sample (tiny budgets) (default: the profiles')")
    peer.add_argument("--dry-run", action="store_true", help="print the plan and its estimated wall time only")
    peer.set_defaults(func=_run_peer_comparison)

    from morl_robot.cli.hopper_dynamics import add_parser as add_hopper_dynamics

    add_hopper_dynamics(exp_sub)


def _run_peer_comparison(args: argparse.Namespace) -> int:
    from morl_robot.experiments import peer_comparison as pc

    cfg = pc.PeerComparison(out=args.out, steps=args.steps, seeds=args.seeds, min_size_to_sample=args.min_replay,
                            **({"envs": args.envs} if args.envs else {}),
                            **({"methods": args.methods} if args.methods else {}))
    cfg.validate()
    if args.dry_run:
        print(pc.plan_text(cfg))
        return 0
    pc.run(cfg)
    print(f"wrote {args.out / 'summary.json'}")
    return 0


def _run_conditioned(args: argparse.Namespace) -> int:
    from morl_robot.experiments import conditioned

    cfg = conditioned.ConditionedExperiment(
        env_id=args.env, steps=args.steps, seed=args.seed, method=args.method,
        **({"learner": args.learner} if args.learner else {}),  # None: the experiment's default config
        points=args.points, eval_episodes=args.eval_episodes, ref=list(args.ref or []),
        sweep_settings=args.sweep_settings, min_size_to_sample=args.min_replay)
    results = conditioned.run(cfg, args.out, progress=not args.no_progress)
    print(conditioned.format_result(results))
    print(f"wrote {args.out / 'results.json'} and {args.out / 'front.png'}")
    return 0


def _run_conditioned_report(args: argparse.Namespace) -> int:
    from morl_robot.experiments import conditioned

    summary = conditioned.report(args.results, args.out, args.ref)
    print(conditioned.format_report(summary))
    if args.out is not None:
        print(f"wrote {args.out / 'summary.json'} and {args.out / 'fronts.png'}")
    return 0


def _run_epic_gridworld(args: argparse.Namespace) -> int:
    from morl_robot.evaluation.epic import markdown_table
    from morl_robot.experiments import epic_gridworld

    r = epic_gridworld.run(args.out)
    names = r["names"]
    import numpy as np

    print(markdown_table(names, np.array([[r["epic"][a][b] for b in names] for a in names])), end="")
    b = r["regret_bound"]
    print(f"paper: Sparse-Dense 0, Path-Cliff 0.27; here: Sparse-Dense {r['epic']['Sparse']['Dense']:.3f}, "
          f"Path-Cliff {r['epic']['Path']['Cliff']:.3f}")
    print(f"Theorem 4.9 (Path vs Cliff, start top-left): regret {b['regret_path']:.3f} <= bound "
          f"{b['bound_path']:.1f} (K = {b['coverage_ratio_K']:.0f})")
    print(f"wrote {args.out}/results.json, results.md, epic_gridworld.png")
    return 0


def _run_epic_pointmass(args: argparse.Namespace) -> int:
    from morl_robot.experiments import epic_pointmass

    if args.coverage < 1 or args.bootstrap < 0:
        raise UsageError("--coverage must be >= 1 and --bootstrap >= 0")
    r = epic_pointmass.run(args.out, precise=args.precise, seed=args.seed, coverage_size=args.coverage,
                           resamples=args.bootstrap)
    print((args.out / "results.md").read_text(), end="")
    pairs = ", ".join(f"{k} {v:.2e}" for k, v in r["equivalent_pairs"].items())
    print(f"equivalent pairs (goal < 1e-3): {pairs}; N_V={r['n_v']} N_M={r['n_m']}: {r['seconds']:.1f} s")
    print(f"wrote {args.out}/results.json, results.md, epic_pointmass.png")
    return 0


def _run_button_world(args: argparse.Namespace) -> int:
    import torch

    from morl_robot.experiments import button_world as bw

    torch.set_num_threads(1)  # tiny networks: one thread is fastest and leaves the other core free
    pairs = tuple(args.pairs or bw.PAIRS)
    for pair in pairs:
        if pair not in bw.PAIRS:
            raise UsageError(f"--pairs: unknown pair {pair!r}; allowed: {', '.join(bw.PAIRS)}")
    for name in ("steps", "eval_every"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    default = bw.Budget()
    budget = bw.Budget(
        steps=args.steps or (4000 if args.quick else default.steps),
        eval_every=args.eval_every or (500 if args.quick else default.eval_every),
        seeds=tuple(args.seeds) if args.seeds else ((0,) if args.quick else default.seeds),
        epsilons=((0.05, 0.005), (0.005, 0.05)) if args.quick else default.epsilons,
        quick=args.quick,
    )
    if args.exact_only and args.finished_only:
        raise UsageError("--exact-only and --finished-only exclude each other")
    results = bw.run_experiment(args.out, budget, pairs=pairs, learn=not args.exact_only,
                                progress=not args.no_progress, finished_only=args.finished_only)
    print(bw.format_table(results))
    for pair, entry in results["pairs"].items():
        if entry.get("missing_runs"):
            print(f"{pair}: {len(entry['missing_runs'])} runs not finished yet: {', '.join(entry['missing_runs'])}")
        for name, why in entry.get("mismatched_runs", {}).items():
            print(f"{pair}: {name} exists but was not counted: {why}")
    print(f"wall time {results['wall_time_s']:.0f} s; wrote {args.out}/results.json and {args.out}/plots/")
    return 0


def _run_sawyer_rm(args: argparse.Namespace) -> int:
    import torch

    from morl_robot.experiments import sawyer_rm

    if args.steps < 1 or args.eval_episodes < 1:
        raise UsageError(f"--steps and --eval-episodes must be >= 1, got {args.steps} and {args.eval_episodes}")
    torch.set_num_threads(1)
    res = sawyer_rm.run(args.out, steps=args.steps, crm=not args.no_crm, seed=args.seed,
                        eval_episodes=args.eval_episodes, eval_seed=args.eval_seed, learner_config=args.learner,
                        progress=not args.no_progress,
                        crm_scale_updates=None if args.crm_updates is None else args.crm_updates == "scaled")
    print((Path(args.out) / "evaluation.md").read_text().rstrip())
    b = res["budget"]
    print(f"{b['env_steps']} steps, {b['updates']} updates, {b['train_wall_time_s']:.0f} s training; "
          f"wrote {args.out}/results.json")
    return 0


def _run_simple_world(args: argparse.Namespace) -> int:
    from morl_robot.experiments import simple_world

    if args.beta <= 0:
        raise UsageError(f"--beta must be > 0, got {args.beta}")
    result = simple_world.write_report(str(args.out), beta=args.beta, tol=args.tol, max_steps=args.max_steps)
    print(simple_world.format_table(result["policies"]))
    unconverged = [r for r in result["runs"] if not r["converged"]]
    for algorithm in ("mo-mpo", "scalarized-mpo"):
        shifts = {
            pref: simple_world.shifted_to_first_objective(result["policies"], algorithm, pref)  # type: ignore[arg-type]
            for pref in ("equal", "prefer_first", "prefer_second")
        }
        print(f"{algorithm}: p(right) imbalanced − balanced: "
              + ", ".join(f"{k} {v:+.3f}" for k, v in shifts.items()))
    if unconverged:
        print(f"warning: {len(unconverged)} runs did not converge within --max-steps")
    print(f"wall time {result['wall_time_s']:.1f} s; wrote {args.out}/results.json, runs.json, "
          "action_probabilities.png, policy_trajectories.png")
    return 0


def _run_sawyer(args: argparse.Namespace) -> int:
    from morl_robot.experiments import sawyer_peg_in_hole

    if args.steps < 1:
        raise UsageError(f"--steps must be >= 1, got {args.steps}")
    eps = epsilons(args.epsilon, SAWYER_OBJECTIVES)
    if eps and (len(eps) != 2 or any(len(v) != 1 for v in eps.values())):
        raise UsageError("--epsilon: give one value for both task and wrist_force, or neither (the profile's)")
    pair = (eps["task"][0], eps["wrist_force"][0]) if eps else None
    r = sawyer_peg_in_hole.run(args.out, args.steps, args.learner, pair, args.seed, progress=not args.no_progress)
    print(f"budget: {r['budget']}")
    print(f"{'objective':<14} {'first 10% episodes':>20} {'last 10% episodes':>20}")
    for n in r["objectives"]:
        print(f"{n:<14} {r['episode_return_first_10pct'][n]:>20.2f} {r['episode_return_last_10pct'][n]:>20.2f}")
    print(f"wrote {args.out}/results.json, learning_curves.png, eval_curves.png")
    return 0


def _run_dst_exact(args: argparse.Namespace) -> int:
    from morl_robot.experiments import dst_exact

    eps_time = epsilons(args.epsilon, ("time",)).get("time", [0.01, 0.02, 0.05])
    if args.c_values < 1 or args.processes < 1 or not 0 < args.gamma < 1 or any(not e > 0 for e in eps_time):
        raise UsageError("--c-values and --processes must be >= 1, --gamma in (0, 1), --epsilon time values > 0")
    try:
        dst_exact.check_horizon(args.state_distribution, args.exploring_horizon)
    except ValueError as e:
        raise UsageError(f"--exploring-horizon with --state-distribution {args.state_distribution}: {e}") from None
    r = dst_exact.run_sweep_exact(args.out, tuple(eps_time), args.c_values, args.gamma, args.processes,
                                  progress=not args.no_progress, distribution=args.state_distribution,
                                  horizon=args.exploring_horizon)
    print(f"exact MO-MPO: {r['pareto_points_found_greedy']} of 10 Pareto points from greedy policies "
          f"(treasures {r['treasures_found_greedy']}), {r['pareto_points_found_stochastic']} from stochastic ones; "
          f"{r['converged']} of {len(r['runs'])} runs converged; {r['wall_time_s']} s")
    print(f"wrote {args.out}/results.json, c_to_treasure.png")
    return 0


def _add_dst_learner_options(parser: argparse.ArgumentParser) -> None:
    """Changes to the Deep Sea Treasure learner: the levers on critic accuracy and the policy network
    (default: the experiment's config; ``LearnerKnobs``)."""
    g = parser.add_argument_group("learner changes (default: the experiment's learner config)")
    g.add_argument("--critic-lr", type=float, default=None, help="critic learning rate (default 1e-3)")
    g.add_argument("--target-update-period", type=int, default=None, metavar="UPDATES",
                   help="learner updates between target-network copies (default 20)")
    g.add_argument("--samples-per-insert", type=float, default=None, metavar="R",
                   help="replay sequences sampled per environment step; updates per step = R / batch size "
                        "(default 8, i.e. one update per 4 steps)")
    g.add_argument("--batch-size", type=int, default=None, help="sequences per update (default 32)")
    g.add_argument("--policy-hidden", type=int, nargs="*", default=None, metavar="SIZE",
                   help="policy hidden layer sizes (default 64 64); none (`--policy-hidden` alone): a table "
                        "of logits over the one-hot cells, as in the exact algorithm")


def _dst_learner_knobs(args: argparse.Namespace) -> LearnerKnobs:
    from morl_robot.experiments.deep_sea_treasure import LearnerKnobs

    knobs = LearnerKnobs(critic_lr=args.critic_lr, target_update_period=args.target_update_period,
                         samples_per_insert=args.samples_per_insert, batch_size=args.batch_size,
                         policy_hidden=None if args.policy_hidden is None else tuple(args.policy_hidden))
    try:
        knobs.validate()
    except ValueError as e:
        raise UsageError(f"--{str(e).replace('_', '-')}") from e
    return knobs


def _run_dst_diagnose(args: argparse.Namespace) -> int:
    from morl_robot.evaluation.provenance import write_results_json
    from morl_robot.experiments import dst_exact

    every, count = args.converge
    eps_values = epsilons(args.epsilon, ("time",)).get("time", [0.02])
    if len(eps_values) != 1:
        raise UsageError(f"--epsilon time=…: dst-diagnose takes one value, got {len(eps_values)}")
    eps_time = eps_values[0]
    if args.steps < 1 or not args.c > 0 or not eps_time > 0 or every < 1 or count < 2:
        raise UsageError("--steps >= 1, --c and --epsilon time > 0, --converge EVERY >= 1 COUNT >= 2")
    if args.exploring_horizon is not None and (args.exploring_starts == 0 or args.exploring_horizon < 1):
        raise UsageError(f"--exploring-horizon {args.exploring_horizon}: needs --exploring-starts 1 and H >= 1")
    r = dst_exact.diagnose_learned(eps_time, args.c, seed=args.seed, steps=args.steps,
                                   exploring_starts=args.exploring_starts, exploring_horizon=args.exploring_horizon,
                                   eval_every=every, stable_evals=count, quick=args.quick,
                                   learner=_dst_learner_knobs(args))
    write_results_json(args.out, r)
    names = ("treasure", "time")
    print(f"learned MO-MPO, ε_time {eps_time:g}, c {args.c:g}, seed {args.seed}: {r['steps']} steps, "
          f"{r['updates']} updates, greedy return {r['learned_greedy_return']}"
          + (f" (stable since {r['converged_at']})" if r["converged_at"] is not None else " (not stable at the cap)")
          + (f"; learner changes {r['learner_changes']}" if r["learner_changes"] else ""))
    print("critic |Q_learned - Q^pi| over open water: " + ", ".join(
        f"{n} mean {m:.3f} max {x:.3f}" for n, m, x in zip(names, r["critic_error"]["mean_abs"],
                                                          r["critic_error"]["max_abs"])))
    print(f"exact MO-MPO ({r['state_distribution']}) from the learned policy -> "
          f"{r['exact_from_learned']['greedy_return']}; from the uniform policy -> "
          f"{r['exact_from_uniform']['greedy_return']}")
    print(f"wrote {args.out}")
    return 0


def _run_sawyer_front(args: argparse.Namespace) -> int:
    from morl_robot.experiments import sawyer_front

    eps = epsilons(args.epsilon, SAWYER_OBJECTIVES)
    eps_task = eps.get("task", [0.1])
    if len(eps_task) != 1:
        raise UsageError(f"--epsilon task=…: ε_task is fixed, one value, got {len(eps_task)}")
    conditioned = (args.method or "conditioned") == "conditioned"
    learner = args.learner or ("" if conditioned else SAWYER_FRONT_PER_SETTING_LEARNER)
    cfg = sawyer_front.FrontSweepConfig(
        eps_task=eps_task[0], eps_force=eps.get("wrist_force", [0.005, 0.01, 0.02, 0.05, 0.1]),
        seeds=list(args.seeds or []), steps=args.steps,
        learner_config=learner, eval_episodes=args.eval_episodes, eval_seed=args.eval_seed,
        parallel=args.processes, conditioned=conditioned,
        reference_gains=list(sawyer_front.REFERENCE_GAINS if args.reference_gains is None else args.reference_gains))
    if args.reference_only:
        cfg.validate()
        if not cfg.reference_gains:
            raise UsageError("--reference-only needs --reference-gains (at least one gain)")
        args.out.mkdir(parents=True, exist_ok=True)
        for e in sawyer_front.scripted_reference(args.out, cfg):
            print(f"scripted gain {e['gain']:g}/s: insertion {e['success_rate']:.0%}, returns "
                  f"{', '.join(f'{r:.1f}' for r in e['returns'])}, mean force {e['mean_force']:.2f} N")
        print(f"wrote {args.out}/scripted_reference.json")
        return 0
    r = sawyer_front.run(args.out, cfg, progress=not args.no_progress, time_limit_s=args.time_limit)
    print(sawyer_front.format_table(r))
    print(f"wrote {args.out}/results.json, policies/, plots/front.png, plots/force_traces.png")
    return 0 if r["runs_finished"] == r["runs_total"] else 3


def _run_shadow_front(args: argparse.Namespace) -> int:
    from morl_robot.experiments import shadow_front

    orient = shadow_front.aligned(args.task)  # a task whose objectives all align (one shared ε)
    eps = epsilons(args.epsilon, ("task", "pain"))
    if len(eps.get("task", [0])) != 1:
        raise UsageError("--epsilon task=…: ε_task is fixed, one value")
    eps_task = eps["task"][0] if "task" in eps else None
    eps_pain = eps.get("pain")
    default = shadow_front.ShadowFrontConfig()
    quick = {"eps_pain": [0.1] if orient else [0.01, 0.1], "weights_pain": [0.05, 0.5], "seeds": [0],
             "steps": 300, "eval_episodes": 2} if args.quick else {}

    def pick(value: object, key: str) -> object:
        return value if value is not None else quick.get(key, getattr(default, key))

    algorithms = (["mo-mpo"] if orient else list(shadow_front.ALGORITHMS)) if args.algorithms is None else \
        [a.strip() for a in args.algorithms.split(",") if a.strip()]
    cfg = shadow_front.ShadowFrontConfig(
        task=args.task, eps_task=pick(eps_task, "eps_task"),
        eps_pain=list(pick(eps_pain, "eps_pain") if not orient or eps_pain or args.quick else [0.1]),
        weights_pain=list(pick(args.weights_pain, "weights_pain")),
        scalarized_epsilon=pick(args.scalarized_epsilon, "scalarized_epsilon"),
        seeds=list(pick(args.seeds, "seeds")), steps=pick(args.steps, "steps"),
        learner_config=args.learner or default.learner_config, eval_episodes=pick(args.eval_episodes, "eval_episodes"),
        eval_seed=args.eval_seed, parallel=args.processes, algorithms=algorithms, quick=args.quick,
        action_mode=args.action_mode)
    r = shadow_front.run(args.out, cfg, progress=not args.no_progress, time_limit_s=args.time_limit)
    print(shadow_front.format_table(r))
    for e in r["errors"]:
        print(f"run {e['setting']['name']} failed: {e['error'].strip().splitlines()[-1]}")
    print(f"wrote {args.out}/results.json, policies/, plots/front.png")
    return 0 if r["runs_finished"] == r["runs_total"] and not r["errors"] else 3


def _run_deep_sea_treasure(args: argparse.Namespace) -> int:
    from morl_robot.experiments import deep_sea_treasure

    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    unknown = sorted(set(algorithms) - {"mo-mpo", "scalarized-mpo"})
    if unknown or not algorithms:
        raise UsageError(f"--algorithms: unknown {unknown}; allowed: mo-mpo, scalarized-mpo")
    if args.processes < 1:
        raise UsageError(f"--processes must be >= 1, got {args.processes}")
    lo, hi = args.c_range
    if not 0 < lo <= hi:
        raise UsageError(f"--c-range needs 0 < LO <= HI, got {lo} {hi}")
    epsilon_time = epsilons(args.epsilon, ("time",)).get("time", [0.01, 0.02, 0.05])
    if args.c_values < 1 or any(e <= 0 for e in epsilon_time):
        raise UsageError("--c-values must be >= 1 and every --epsilon time value > 0")
    if args.steps is not None and args.steps < 1:
        raise UsageError(f"--steps must be >= 1, got {args.steps}")
    every, count = args.converge or (0, 0)
    if args.exact_reference is not None and not args.exact_reference.is_file():
        raise UsageError(f"--exact-reference: no such file {args.exact_reference}")
    if args.converge and (every < 1 or count < 2):
        raise UsageError(f"--converge EVERY COUNT needs EVERY >= 1 and COUNT >= 2, got {every} {count}")
    if not 0.0 <= args.exploring_starts <= 1.0:
        raise UsageError(f"--exploring-starts must be a probability in [0, 1], got {args.exploring_starts}")
    if args.exploring_horizon is not None and (args.exploring_starts <= 0 or args.exploring_horizon < 1):
        raise UsageError(f"--exploring-horizon {args.exploring_horizon}: needs --exploring-starts P > 0 and H >= 1")
    result = deep_sea_treasure.run_experiment(
        out_dir=args.out,
        processes=args.processes,
        steps=args.steps,
        quick=args.quick,
        c_values=args.c_values,
        c_range=tuple(args.c_range),
        epsilon_time=tuple(epsilon_time),
        num_weights=args.weights,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
        time_limit_s=args.time_limit,
        algorithms=algorithms,
        progress=not args.no_progress,
        eval_every=every,
        stable_evals=count,
        exact_reference=args.exact_reference,
        exploring_starts=args.exploring_starts,
        exploring_horizon=args.exploring_horizon,
        learner=_dst_learner_knobs(args),
        resume=args.resume,
    )
    print(deep_sea_treasure.format_table(result))
    print(f"wrote {args.out}/results.json, fronts.png" + (", c_to_treasure.png" if "mo-mpo" in result else ""))
    return 0
