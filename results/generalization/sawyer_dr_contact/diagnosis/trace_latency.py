"""Per-tick trace of the scripted demonstrator on sawyer_peg_in_hole under a context (issue 37 diagnosis).

Usage: python trace_latency.py CONTEXT SEED,SEED,... (CONTEXT: a name, PATH.yaml:NAME or none).  Per episode
past 30 N: the step of the first such peak, the ticks above 30 N (2 ms each), the tip speed 6 ms before the
peak, the executed command and the approach limit at the live distance, lead-clamp ticks, hold command.
Records per physics tick through CartesianController.tick (the reference of run_period).  "exec": the
command that arrived through the link, before the arrival limit; "live": the approach limit of it at the
newest reading (what the robot executes since the arrival limit)."""
import json
import math
import sys

import mujoco
import numpy as np

from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.safety.shield import SafetyShield

ctx = sys.argv[1]
seeds = [int(s) for s in sys.argv[2].split(",")]
verbose = len(sys.argv) > 3
over = {"contexts": ctx} if ctx != "none" else {}
env = MORobotEnv("sawyer_peg_in_hole", overrides=over or None)
act, _ = env.task.scripted_policy(env)
shield = SafetyShield(env)
robot = env.robot
cart = robot._cartesian
ticks = []  # per tick records of the current step
orig_run = cart.run_period

def run_period(model, data, target, actuators, force_slice, substeps):
    dt = model.opt.timestep
    out = target.copy()
    site = cart.site
    for _ in range(substeps):
        R = data.site_xmat[cart.sensor_site].reshape(3, 3)
        f = cart.contact_force(R, data.sensordata[force_slice])
        q = data.qpos[cart.qadr]
        cart.admittance.offset.copy()
        # what the admittance would output
        fn = float(np.linalg.norm(f))
        new = cart.tick(out, q, f, dt)
        lead_bind = bool(np.any(np.abs(new[cart.actuator_mask] - q[cart.actuator_joint]) >= cart.config.max_tracking_error - 1e-12))
        out = new
        data.ctrl[actuators] = out
        p0 = data.site_xpos[site].copy()
        mujoco.mj_step(model, data)
        v_tip = (data.site_xpos[site] - p0) / dt
        ticks.append((data.time, fn, cart._v_ref.copy(), v_tip, lead_bind, cart.admittance.offset.copy()))
    return out

cart.run_period = run_period
from morl_robot.safety.inner import InnerSafety

inner = InnerSafety.load("sawyer")
labels = robot.spec.command_labels(robot.control_mode)
summary = []
for seed in seeds:
    obs, info = env.reset(seed=seed)
    shield.begin(env.state)
    hole = env.task._hole[:3].copy(); depth = env.task._hole_depth
    steps = []
    done = False; k = 0
    while not done:
        a = np.asarray(act(obs))
        ex = shield.filter(a, env.state.stamp)
        ticks.clear()
        pos_before = env.state.position.copy()
        obs, r, term, trunc, info = env.step(ex)
        shield.observe(env.state)
        st = env.state
        tip = st.ee_pose[:3]
        arrived = env._held  # executed command (twist) or None (hold)
        live = None if arrived is None else inner.limit_approach(arrived, labels, pos_before)[:3]
        peak = max(t[1] for t in ticks)
        ipk = int(np.argmax([t[1] for t in ticks]))
        vz_at_peak_prev = ticks[max(ipk - 3, 0)][3][2]
        steps.append({"k": k, "t": st.stamp, "a": a.tolist(), "ex": ex.tolist(), "exec": None if arrived is None else arrived[:3].tolist(),
                          "hold": arrived is None, "live": None if live is None else live.tolist(), "over_ticks": [t[1] for t in ticks], "tip_rel": (tip - hole).tolist(), "peak": peak, "fn": info["force_norm"],
                          "vz_before_peak": vz_at_peak_prev, "lead_bind": sum(t[4] for t in ticks),
                          "ticks_over20": sum(t[1] > 20 for t in ticks), "ticks_over30": sum(t[1] > 30 for t in ticks),
                          "vtip_min": min(t[3][2] for t in ticks), "term": info.get("termination")})
        k += 1
        done = term or trunc
    mx = max(s["peak"] for s in steps)
    first30 = next((s for s in steps if s["peak"] > 30), None)
    summary.append({"seed": seed, "peak": mx, "success": bool(info["success"]), "term": info.get("termination"), "steps": k,
                        "over30_steps": sum(s["peak"] > 30 for s in steps)})
    if first30:
        ex = first30["exec"]; lv = first30["live"]
        summary[-1].update(dur_ms=sum(t > 30 for t in first30["over_ticks"]) * 2, exec_vz=ex and ex[2], live_vz=lv and lv[2],
                           vz_pre=first30["vz_before_peak"], lead=first30["lead_bind"], hold=first30["hold"], k=first30["k"],
                           tip_z_mm=first30["tip_rel"][2] * 1e3, lat_mm=1e3 * math.hypot(*first30["tip_rel"][:2]),
                           sustained=sum(s["ticks_over30"] for s in steps))
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in summary[-1].items()}))
    if verbose or first30:
        i0 = first30["k"] if first30 else int(np.argmax([s["peak"] for s in steps]))
        for s in steps[max(0, i0 - 6): i0 + 3]:
            print("  k=%3d t=%.2f hold=%d a_z=%+.3f ex_z=%+.3f exec_vz=%s tip_rel=(%+.4f %+.4f %+.4f) peak=%6.1f fn=%5.1f vz_pre=%+.4f vtipmin=%+.4f lead=%d >20:%d >30:%d %s" % (
                s["k"], s["t"], s["hold"], s["a"][2], s["ex"][2], "{:+.4f}".format(s["exec"][2]) if s["exec"] else "None",
                *s["tip_rel"], s["peak"], s["fn"], s["vz_before_peak"], s["vtip_min"], s["lead_bind"], s["ticks_over20"], s["ticks_over30"], s["term"] or ""))

over = [x for x in summary if x["peak"] > 30]
print("episodes", len(summary), "past30", len(over), "inserted", sum(x["success"] for x in summary))
if over:
    print("max ticks>30 per episode (2ms each):", [x["sustained"] for x in over])
    print("speed into contact (tip vz 6 ms before peak, m/s):", [round(x["vz_pre"], 3) for x in over])
    print("executed vz vs live-limited vz:", [(round(x["exec_vz"], 3) if x["exec_vz"] is not None else None, round(x["live_vz"], 3) if x["live_vz"] is not None else None) for x in over])
    print("lead clamp ticks in that step:", [x["lead"] for x in over], "hold cmd:", [x["hold"] for x in over], "step:", [x["k"] for x in over])
    print("tip z rel opening mm:", [round(x["tip_z_mm"], 1) for x in over], "lateral mm:", [round(x["lat_mm"], 1) for x in over])
