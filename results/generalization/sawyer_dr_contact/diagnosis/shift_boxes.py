"""Hypothesis: inside_mix's residual (stalls, rim hits) comes from the approach boxes not moving with hole_offset.

Ran on the code before 0092a4c. From 0092a4c on the product moves the boxes itself (CompiledRules.placed, in
SafetyShield.begin and the arrival limit): there 'nominal' already gives the moved boxes and 'shift' moves them twice.
"""
import sys, dataclasses
import numpy as np
from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.safety.shield import SafetyShield
from morl_robot.evaluation.protocol import load_policy, run_episode
from morl_robot.safety.inner import InnerSafety

policy, shift = sys.argv[1], sys.argv[2] == "shift"
off = np.array([0.002, -0.002, 0.0])
act = load_policy(policy, preference=(0.1, 0.005)).act
env = MORobotEnv("sawyer_peg_in_hole", overrides={"contexts": "inside_mix"})
shield = SafetyShield(env)
def moved(rules):
    a = rules.approach
    lo, hi = a.lower.copy(), a.upper.copy()
    for i, n in enumerate(a.names):
        if n.startswith("fixture"):
            lo[i] += off; hi[i] += off
    return dataclasses.replace(rules, approach=dataclasses.replace(a, lower=lo, upper=hi))
if shift:
    shield.rules = moved(shield.rules)
    inner = InnerSafety(moved(InnerSafety.load("sawyer").rules))
    env._arrival = (inner, tuple(env.robot.spec.command_labels(env.robot.control_mode)))
recs = [run_episode(env, act, s, shield) for s in range(90000, 90000 + int(sys.argv[3]))]
print(policy.split("/")[-2:], "shift" if shift else "nominal boxes", "inserted", sum(r.success for r in recs), "/", len(recs),
      "past30", sum(float(np.max(r.forces)) > 30 for r in recs))
