"""The Sawyer peg-in-hole task with a multi-objective reward machine, trained with CRM.

Objectives (``config/reward_machines/sawyer/peg_touch_then_insert.yaml``, Gymnasium id
``morl_robot/SawyerPegInHoleRM-v0``): the task's own ``task`` and ``wrist_force`` next to two
history-dependent objectives from reward machines over the labelling function
``config/reward_machines/labels/sawyer_peg_in_hole.yaml`` (wrist F/T and peg-tip pose):

* ``touch_then_insert``: 1, once, for an insertion that follows a light touch of the fixture
  (contact above 1 N while below the 15 N limit);
* ``force_budget``: −1 for the first crossing of the 15 N limit, −1 more and the end of the
  episode for a second one ("never cross the force limit twice").

MO-MPO learns on the product (observation + machine one-hot) with counterfactual experience
(``replay.crm``), then the trained policy is exported to ``OUT/policy.onnx`` (its contract records
the reward machine: ``morl-robot evaluate OUT/policy.onnx`` and ``morl-robot deploy`` rebuild the
product from it) and that ONNX policy is evaluated with the evaluation protocol
(:mod:`morl_robot.evaluation.protocol`: deterministic episodes on fixed seeds through the safety
rules; means with 95 % bootstrap CIs per objective, success rate, terminations, forces), so the
figures in ``results.json`` are what ``morl-robot evaluate`` reproduces.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from morl_robot.evaluation.provenance import write_results_json
from morl_robot.resources import resolve_config

SPEC = "sawyer/peg_touch_then_insert"
TASK = "sawyer_peg_in_hole"


def make_env() -> Any:
    from morl_robot.envs.registration import make_rm_task_env

    return make_rm_task_env(SPEC)


def run(out_dir: str | os.PathLike[str], steps: int = 40_000, crm: bool = True, seed: int = 0,
        eval_episodes: int = 20, eval_seed: int = 10_000, learner_config: str | None = None,
        progress: bool = True, crm_scale_updates: bool | None = None) -> dict[str, Any]:
    """Train (resumable: the run folder keeps checkpoints), export ``policy.onnx``, evaluate it with
    the protocol, write results.json and evaluation.md.

    ``learner_config``: a YAML path or a name under ``config/`` (e.g. ``learner/sawyer_front_demos.yaml``:
    with ``training.demonstrations`` the first episodes are acted by the scripted insertion
    controller, which reads the task part of the product observation).  ``crm_scale_updates``:
    None keeps the YAML's ``replay.crm_scale_updates``."""
    from morl_robot.evaluation.protocol import (
        evaluate_policy,
        onnx_policy,
        scripted_policy,
    )
    from morl_robot.learning import load_learner_config
    from morl_robot.reward_machines.env import load_rm_task
    from morl_robot.serving.contract import contract_for_env
    from morl_robot.serving.export import export_policy
    from morl_robot.training import train

    out = Path(out_dir)
    _, product, _ = load_rm_task(SPEC)
    cfg_path = resolve_config("learner", learner_config or "mo_mpo_cpu_small")
    replay: dict[str, Any] = {"crm": crm}
    if crm_scale_updates is not None:
        replay["crm_scale_updates"] = crm_scale_updates
    config = load_learner_config(cfg_path, {"replay": replay})
    demonstrator = scripted_policy(TASK).act if config.training.demonstrations.episodes else None
    t0 = time.monotonic()
    result = train(make_env, config, total_steps=steps, seed=seed, out_dir=out / "run", progress=progress,
                   demonstrator=demonstrator)
    train_s = time.monotonic() - t0
    env = make_env()
    try:  # the contract of the product env: task, observation with the one-hot, objectives, the machine
        contract = contract_for_env(env, config, policy_version=result.env_steps,
                                    run_id=f"sawyer_rm/{out.name}/seed{seed}")
    finally:
        env.close()
    export_policy(result.learner.policy, contract, out / "policy.onnx", normalizer=result.policy.normalizer)
    loaded = onnx_policy(out / "policy.onnx")
    evaluation = evaluate_policy(loaded.act, TASK, episodes=eval_episodes, seed=eval_seed,
                                 policy=f"MO-MPO{' + CRM' if crm else ''} seed {seed}", env_fn=loaded.make_env,
                                 progress=progress)
    summary = {
        "spec": SPEC, "task": TASK, "crm": crm, "crm_scale_updates": config.replay.crm_scale_updates if crm else None,
        "demonstrations": config.training.demonstrations.episodes, "seed": seed, "learner_config": learner_config or "mo_mpo_cpu_small",
        "objectives": list(result.objective_names),
        "morm": {"machines": list(product.objective_names), "product_states": product.num_states,
                 "nonterminal_states": product.num_nonterminal},
        "budget": {"env_steps": result.env_steps, "updates": result.updates, "episodes": result.episodes,
                   "train_wall_time_s": round(train_s, 1),  # this sitting's
                   "resumed_from": str(result.resumed_from) if result.resumed_from else None},
        "policy": "policy.onnx",  # the evaluated policy, next to this file
        "evaluation": evaluation.to_json(),
    }
    # the scripted insertion controller on the same seeds and machines: what the objectives give a
    # policy that does the task (the reference the learned policy is read against)
    reference = evaluate_policy(scripted_policy(TASK).act, TASK, episodes=eval_episodes, seed=eval_seed,
                                policy="scripted insertion controller (reference)", env_fn=make_env,
                                progress=False)
    summary["scripted_reference"] = reference.to_json()
    write_results_json(out / "results.json", summary)
    (out / "evaluation.md").write_text(evaluation.to_markdown() + "\n\n" + reference.to_markdown() + "\n")
    return summary
