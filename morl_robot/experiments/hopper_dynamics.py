"""The MORL-generalisation paper's finding in miniature (issue 37): on ``mo-hopper-v5``, multi-objective
MO-MPO against stable-baselines3's SAC on the scalar reward, both trained on the nominal hopper and
evaluated on unseen dynamics (the paper's Hopper Light/Heavy, ``config/contexts/gym/mo-hopper-v5.yaml``),
scored by SAC's own reward (Gymnasium Hopper-v5's: forward velocity − 0.001‖a‖² + 1 per step).

* ``mo-mpo``: one ε-conditioned MO-MPO policy per seed (``experiment conditioned``'s default recipe for
  Hopper, ``config/learner/conditioned_spi64.yaml``), evaluated at ``points`` preferences; its score on a
  context is, as in the paper, the best preference's mean scalar return there, and (no peeking at the
  test context) the preference best on the nominal context.
* ``sac``: SB3's SAC with its defaults on the scalar reward (``pip install stable-baselines3``, the
  ``sac`` extra: ``make sac-deps``).

``morl-robot experiment hopper-dynamics --out DIR [--steps N] [--seeds S] [--dry-run]``: every
(method, seed) run not yet done (``DIR/runs/<method>_s<seed>/result.json``), then ``results.json``
(returns and hypervolume per context with CIs over seeds, the do-nothing and random policies' beside),
``results.md`` and ``returns.png``.  Result: results/generalization/hopper_dynamics/.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import UsageError

ENV_ID = "mo-hopper-v5"
OBJECTIVES = ("velocity", "height", "energy")  # MO-Gymnasium's reward vector, each + 1 alive
METHODS = ("mo-mpo", "sac")
#: the paper's numbers (Hopper Heavy, SAC's own reward, MORL's best vs SAC; its Table 3: 3·10^6 environment
#: steps for MO-Hopper, trained with domain randomisation and a 2-step state-action history, 5 seeds)
PAPER = {"context": "heavy", "morl": 2109.0, "sac": 474.0, "steps": 3_000_000, "seeds": 5,
         "training": "domain randomisation over masses, damping and friction; 2-step state-action history"}
#: hypervolume reference per objective (experiment conditioned's for the MuJoCo tasks)
REF = -100.0
#: wall seconds per training step on the shared 2-core machine under nice 15 at load 13-19, measured by the
#: committed 6 000-step runs (results/generalization/hopper_dynamics: mo-mpo ≈ 600 s of training per run with
#: its 2 000 warm-up steps, ≈ 0.3 s per update after them; sac ≈ 580 s, SB3's one update per step)
SECONDS_PER_STEP = {"mo-mpo": 0.10, "sac": 0.10}
#: wall seconds per evaluation step (policy + MuJoCo, same machine)
SECONDS_PER_EVAL_STEP = 0.004


def context_file() -> Path:
    from morl_robot.resources import config_path

    return config_path("contexts") / "gym" / f"{ENV_ID}.yaml"


@dataclass
class HopperDynamics:
    """What ``experiment hopper-dynamics`` runs."""

    out: Path
    steps: int = 6_000
    seeds: int = 3
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    contexts: str = "nominal,light,heavy"  # or held_out: all six of the paper's
    eval_episodes: int = 5
    eval_seed: int = 50_000  # held-out reset seeds, the same for every policy and context
    points: int = 11  # MO-MPO preference grid
    learner: str = "conditioned_spi64"
    min_size_to_sample: int | None = None  # tiny budgets only (MO-MPO replay; SAC's learning_starts)
    max_episode_steps: int | None = None  # tiny budgets only (evaluation episodes; default the env's 1000)

    def validate(self) -> None:
        if self.seeds < 1:
            raise UsageError(f"--seeds must be >= 1, got {self.seeds}")
        if self.steps < 1:
            raise UsageError(f"--steps must be >= 1, got {self.steps}")
        if self.eval_episodes < 1:
            raise UsageError(f"--eval-episodes must be >= 1, got {self.eval_episodes}")
        if self.points < 2:
            raise UsageError(f"--points must be >= 2, got {self.points}")
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise UsageError(f"--methods: unknown {bad}; known: {', '.join(METHODS)}")
        self.context_list()  # unknown names: an error naming the file's contexts

    def context_list(self) -> list[Any]:
        from morl_robot.contexts import load_contexts

        cs = load_contexts(context_file())
        names = ["nominal", *cs.held_out] if self.contexts == "held_out" else \
            [s.strip() for s in self.contexts.split(",") if s.strip()]
        if not names:
            raise UsageError(f"--contexts {self.contexts!r} names no context")
        return [cs.named(n) for n in names]

    def runs(self) -> list[tuple[str, int, Path]]:
        """(method, seed, folder), seeds outermost (a stopped experiment has both methods at the same seeds)."""
        return [(m, s, self.out / "runs" / f"{m}_s{s}") for s in range(self.seeds) for m in self.methods]


def plan_text(cfg: HopperDynamics) -> str:
    runs = cfg.runs()
    todo = [r for r in runs if not (r[2] / "result.json").exists()]
    train = sum(SECONDS_PER_STEP[m] * cfg.steps for m, _s, _f in todo)
    per_policy = len(cfg.context_list()) * cfg.eval_episodes * (cfg.max_episode_steps or 1000)
    evals = sum((len(preference_grid(cfg)) if m == "mo-mpo" else 1) * per_policy
                for m, _s, _f in todo) * SECONDS_PER_EVAL_STEP
    return "\n".join([
        (f"hopper dynamics: {ENV_ID}, {', '.join(cfg.methods)} x {cfg.seeds} seeds, {cfg.steps} training steps "
         f"each on the nominal model; contexts {', '.join(c.name for c in cfg.context_list())}; "
         f"{len(runs)} runs, {len(runs) - len(todo)} done"),
        (f"estimated wall time of the rest on the shared 2-core machine: training {train / 60:.0f} min, "
         f"evaluation at most {evals / 60:.0f} min (episodes of the full 1000 steps; falls end them sooner)")])


def preference_grid(cfg: HopperDynamics) -> np.ndarray:
    """The ε grid MO-MPO is evaluated at (``points`` per the learner's preference space: 27 for 11 on
    Hopper's three objectives)."""
    from morl_robot.experiments.conditioned import (
        ConditionedExperiment,
        _learner_config,
    )
    from morl_robot.learning.preferences import PreferenceSpace

    config = _learner_config(ConditionedExperiment(env_id=ENV_ID, steps=cfg.steps, learner=cfg.learner,
                                                   min_size_to_sample=cfg.min_size_to_sample))
    space = PreferenceSpace.from_config(config.preferences, list(OBJECTIVES))  # type: ignore[arg-type]
    return space.grid(cfg.points)


# --------------------------------------------------------------------------------------------
# environments and evaluation
# --------------------------------------------------------------------------------------------


def scalar_reward(info: dict[str, Any]) -> float:
    """Gymnasium Hopper-v5's reward (SAC's): forward velocity + control reward (−0.001‖a‖²) + 1 alive."""
    return float(info["reward_forward"] + info["reward_ctrl"] + info["reward_survive"])


def make_env(context: Any = None, max_episode_steps: int | None = None) -> Any:
    """``mo-hopper-v5`` in ``context`` (None: nominal). Module-level so it pickles."""
    import mo_gymnasium

    from morl_robot.contexts.gym_mujoco import MujocoContextWrapper

    kwargs = {"max_episode_steps": max_episode_steps} if max_episode_steps else {}
    return MujocoContextWrapper(mo_gymnasium.make(ENV_ID, **kwargs), context)


def make_scalar_env(max_episode_steps: int | None = None) -> Any:
    """The nominal hopper with SAC's scalar reward (:func:`scalar_reward`)."""
    import gymnasium as gym

    class Scalar(gym.Wrapper):
        def step(self, action: Any) -> Any:
            obs, _vec, terminated, truncated, info = self.env.step(action)
            return obs, scalar_reward(info), terminated, truncated, info

    return Scalar(make_env(None, max_episode_steps))


def rollouts(act: Callable[[np.ndarray], np.ndarray], env: Any, episodes: int, seed: int) -> dict[str, Any]:
    """Deterministic episodes (reset seeds ``seed + i``): per-episode vector return, scalar return, length.
    ``act`` maps the flat float32 observation to an action in [-1, 1]."""
    from morl_robot.training.loop import ActionDecoder, ObservationEncoder

    enc, dec = ObservationEncoder(env.observation_space), ActionDecoder(env.action_space)
    vec, scalar, length = [], [], []
    for i in range(episodes):
        obs, _ = env.reset(seed=int(seed) + i)
        v, s, n, done = 0.0, 0.0, 0, False
        while not done:
            obs, r, terminated, truncated, info = env.step(dec(act(enc(obs))))
            v = v + np.asarray(r, np.float64)
            s += scalar_reward(info)
            n += 1
            done = bool(terminated or truncated)
        vec.append(np.asarray(v, np.float64).tolist())
        scalar.append(s)
        length.append(n)
    return {"returns": np.mean(vec, axis=0).tolist(), "scalar_return": float(np.mean(scalar)),
            "scalar_per_episode": [round(x, 3) for x in scalar], "length": float(np.mean(length))}


def evaluate_on_contexts(policies: list[Callable[[np.ndarray], np.ndarray]], cfg: HopperDynamics) -> dict[str, list[dict[str, Any]]]:
    """context name → one :func:`rollouts` result per policy."""
    out: dict[str, list[dict[str, Any]]] = {}
    for ctx in cfg.context_list():
        env = make_env(ctx, cfg.max_episode_steps)
        try:
            out[ctx.name] = [rollouts(p, env, cfg.eval_episodes, cfg.eval_seed) for p in policies]
        finally:
            env.close()
    return out


# --------------------------------------------------------------------------------------------
# the methods
# --------------------------------------------------------------------------------------------


def _train_mo_mpo(cfg: HopperDynamics, seed: int, folder: Path) -> dict[str, Any]:
    import functools

    from morl_robot.experiments.conditioned import (
        ConditionedExperiment,
        _learner_config,
    )
    from morl_robot.training.loop import train

    config = _learner_config(ConditionedExperiment(env_id=ENV_ID, steps=cfg.steps, seed=seed, learner=cfg.learner,
                                                   min_size_to_sample=cfg.min_size_to_sample))
    env_fn = functools.partial(make_env, None)
    names = list(OBJECTIVES)
    result = train(env_fn, config, cfg.steps, seed=seed, out_dir=folder / "run", progress=False)
    grid = preference_grid(cfg)
    policies = [_actor(result.policy.with_preference(e)) for e in grid]
    return {"preferences": grid.tolist(), "objective_names": names, "updates": int(result.updates),
            "contexts": evaluate_on_contexts(policies, cfg)}


def _actor(policy: Any) -> Callable[[np.ndarray], np.ndarray]:
    def act(x: np.ndarray) -> np.ndarray:
        return policy.act(x, True)[0] if hasattr(policy, "act") else policy(x)
    return act


def _train_sac(cfg: HopperDynamics, seed: int, folder: Path) -> dict[str, Any]:
    try:
        from stable_baselines3 import SAC
    except ImportError as e:
        raise UsageError("method sac needs stable-baselines3: `make sac-deps` or "
                         f"pip install -e '.[sac]' ({e})") from e
    import torch

    torch.manual_seed(seed)
    env = make_scalar_env()
    starts = 100 if cfg.min_size_to_sample is None else min(100, cfg.min_size_to_sample)
    model = SAC("MlpPolicy", env, seed=seed, device="cpu", learning_starts=starts, verbose=0)
    model.learn(total_timesteps=cfg.steps)
    env.close()
    low, high = np.asarray(env.action_space.low, np.float64), np.asarray(env.action_space.high, np.float64)

    def act(x: np.ndarray) -> np.ndarray:  # SB3 acts in env units; rollouts expect [-1, 1]
        a = np.asarray(model.predict(x, deterministic=True)[0], np.float64)
        return (2.0 * (a - low) / (high - low) - 1.0).astype(np.float32)

    return {"preferences": [None], "contexts": evaluate_on_contexts([act], cfg)}


def do_nothing(cfg: HopperDynamics) -> dict[str, Any]:
    """The middle-of-the-action-box policy (zero torque) on every context."""
    zero = np.zeros(3, np.float32)
    return {c: r[0] for c, r in evaluate_on_contexts([lambda x: zero], cfg).items()}


def random_actions(cfg: HopperDynamics) -> dict[str, Any]:
    """Uniform random actions in [-1, 1] on every context (the generator reseeded per context from
    ``eval_seed``, so a context's figure does not depend on which contexts come before it)."""
    out: dict[str, Any] = {}
    for ctx in cfg.context_list():
        rng = np.random.default_rng(cfg.eval_seed)
        env = make_env(ctx, cfg.max_episode_steps)
        try:
            out[ctx.name] = rollouts(lambda x, g=rng: g.uniform(-1.0, 1.0, 3).astype(np.float32), env,
                                     cfg.eval_episodes, cfg.eval_seed)
        finally:
            env.close()
    return out


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------


def run(cfg: HopperDynamics, progress: bool = True, echo: Callable[[str], Any] = print) -> dict[str, Any]:
    """Every run not yet done, then the summary (``results.json``, ``results.md``, ``returns.png``)."""
    import torch

    from morl_robot.records import write_json_atomic

    cfg.validate()
    echo(plan_text(cfg))
    torch.set_num_threads(1)
    todo = [r for r in cfg.runs() if not (r[2] / "result.json").exists()]
    for _m, _s, folder in cfg.runs():  # a kept run at another budget would be summarised as this one
        if (folder / "result.json").exists():
            kept = json.loads((folder / "result.json").read_text()).get("steps")
            if kept != cfg.steps:
                raise UsageError(f"{folder / 'result.json'} was trained for {kept} steps, not --steps {cfg.steps}: "
                                 "pass its budget or another --out")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="hopper dynamics", unit="run", dynamic_ncols=True)
    for method, seed, folder in todo:
        folder.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        body = (_train_mo_mpo if method == "mo-mpo" else _train_sac)(cfg, seed, folder)
        body.update({"method": method, "seed": seed, "steps": cfg.steps, "wall_time_s": round(time.monotonic() - start, 1)})
        write_json_atomic(folder / "result.json", body)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{method} seed {seed}: {body['wall_time_s']:.0f} s")
    if bar is not None:
        bar.close()
    return summarise(cfg)


def summarise(cfg: HopperDynamics) -> dict[str, Any]:
    from morl_robot.evaluation.front import iqm_with_ci
    from morl_robot.evaluation.hypervolume import hypervolume
    from morl_robot.evaluation.provenance import write_results_json

    runs = [json.loads((f / "result.json").read_text()) for _m, _s, f in cfg.runs() if (f / "result.json").exists()]
    still, rand = do_nothing(cfg), random_actions(cfg)
    ref = [REF] * 3
    contexts = [c.name for c in cfg.context_list()]
    table: dict[str, Any] = {}
    for c in contexts:
        row: dict[str, Any] = {name: {"scalar_return": b[c]["scalar_return"], "length": b[c]["length"],
                                      "hypervolume": hypervolume(np.asarray([b[c]["returns"]]), ref)}
                               for name, b in (("do_nothing", still), ("random", rand))}
        for m in cfg.methods:
            rs = [r for r in runs if r["method"] == m and c in r["contexts"]]
            if not rs:
                continue
            best, chosen, hv, length = [], [], [], []
            for r in rs:
                cells = r["contexts"][c]
                scal = [x["scalar_return"] for x in cells]
                best.append(max(scal))
                length.append(cells[int(np.argmax(scal))]["length"])
                nominal = r["contexts"].get("nominal", cells)
                chosen.append(scal[int(np.argmax([x["scalar_return"] for x in nominal]))])
                hv.append(hypervolume(np.asarray([x["returns"] for x in cells]), ref))
            row[m] = {"seeds": [r["seed"] for r in rs], "scalar_best": iqm_with_ci(best), "scalar_best_per_seed": best,
                      "length_best_per_seed": length, "hypervolume": iqm_with_ci(hv), "hypervolume_per_seed": hv}
            if m == "mo-mpo":
                row[m].update({"scalar_nominal_choice": iqm_with_ci(chosen), "scalar_nominal_choice_per_seed": chosen})
        table[c] = row
    results = {"env": ENV_ID, "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
               "paper": PAPER, "ref": ref, "contexts": table,
               "wall_time_s": {m: [r["wall_time_s"] for r in runs if r["method"] == m] for m in cfg.methods},
               "scalar_reward": "Gymnasium Hopper-v5: forward velocity - 0.001 |a|^2 + 1 per step"}
    cfg.out.mkdir(parents=True, exist_ok=True)
    write_results_json(cfg.out / "results.json", results)
    (cfg.out / "results.md").write_text(format_table(results) + "\n")
    _plot(results, cfg.out / "returns.png")
    return results


def _fmt(s: dict[str, float]) -> str:
    return f"{s['iqm']:.0f} [{s['ci_low']:.0f}, {s['ci_high']:.0f}]"


def format_table(results: dict[str, Any]) -> str:
    cfg = results["config"]
    lines = [(f"{results['env']}: SAC's own reward per context (mean over seeds, bootstrap 95 % CI; "
             f"{cfg['steps']} training steps per run on the nominal model, {cfg['eval_episodes']} episodes per cell)"),
             "",
             ("| context | MO-MPO best preference | MO-MPO nominal-chosen | SAC | do-nothing | random | HV MO-MPO | "
              "HV SAC | HV do-nothing | HV random |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c, row in results["contexts"].items():
        mo, sac = row.get("mo-mpo"), row.get("sac")
        lines.append(" | ".join([
            f"| {c}", _fmt(mo["scalar_best"]) if mo else "—", _fmt(mo["scalar_nominal_choice"]) if mo else "—",
            _fmt(sac["scalar_best"]) if sac else "—", f"{row['do_nothing']['scalar_return']:.0f}",
            f"{row['random']['scalar_return']:.0f}",
            f"{mo['hypervolume']['iqm']:.3g}" if mo else "—", f"{sac['hypervolume']['iqm']:.3g}" if sac else "—",
            f"{row['do_nothing']['hypervolume']:.3g}", f"{row['random']['hypervolume']:.3g} |"]))
    p = results["paper"]
    lines += ["", (f"The paper (Hopper {p['context'].capitalize()}, 3·10^6 steps with domain randomisation, 5 seeds): "
              f"MORL {p['morl']:.0f} vs "
              f"SAC {p['sac']:.0f}. HV at {results['ref']}.")]
    return "\n".join(lines)


def _plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from morl_robot.evaluation.plots import _save

    ctxs = list(results["contexts"])
    series = [("mo-mpo", "scalar_best", "MO-MPO (best preference)"),
              ("mo-mpo", "scalar_nominal_choice", "MO-MPO (preference chosen on nominal)"),
              ("sac", "scalar_best", "SAC (scalar reward)")]
    colour = {"MO-MPO (best preference)": "C0", "MO-MPO": "C0", "MO-MPO (preference chosen on nominal)": "C1",
              "SAC (scalar reward)": "C2", "SAC": "C2"}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / len(series)
    x = np.arange(len(ctxs))
    for ax, metric in zip(axes, ("scalar", "hypervolume")):
        todo = series if metric == "scalar" else [("mo-mpo", "hypervolume", "MO-MPO"), ("sac", "hypervolume", "SAC")]
        for i, (m, key, label) in enumerate(todo):
            vals = [results["contexts"][c].get(m, {}).get(key) for c in ctxs]
            if not all(vals):
                continue
            y = np.array([v["iqm"] for v in vals])
            err = np.array([[v["iqm"] - v["ci_low"] for v in vals], [v["ci_high"] - v["iqm"] for v in vals]])
            at = x + (i - (len(todo) - 1) / 2) * width
            ax.bar(at, y, width, yerr=err, capsize=3, label=label, color=colour[label])
            for xi, c in zip(at, ctxs):  # the seeds themselves: with 3 the bootstrap CI says little
                per_seed = results["contexts"][c][m].get(f"{key}_per_seed", [])
                ax.scatter([xi] * len(per_seed), per_seed, s=8, color="k", alpha=0.6, zorder=4)
        key = "scalar_return" if metric == "scalar" else "hypervolume"
        ax.scatter(x, [results["contexts"][c]["do_nothing"][key] for c in ctxs], marker="_", s=400, color="k",
                   zorder=3, label="do-nothing")
        ax.scatter(x, [results["contexts"][c]["random"][key] for c in ctxs], marker="x", s=40, color="0.4",
                   zorder=3, label="random actions")
        ax.set_xticks(x, ctxs)
        ax.set_ylabel("SAC's reward (return)" if metric == "scalar" else f"hypervolume at {results['ref'][0]:g}")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7)
    fig.suptitle(f"{results['env']}: trained on nominal, {results['config']['steps']} steps, "
                 f"{results['config']['seeds']} seeds (mean, 95 % CI)", fontsize=9)
    _save(fig, path)
