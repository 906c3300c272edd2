"""PRISM (issue 38) through ``morl-robot train`` (the graph: robot node, policy server, learner node):
the Sawyer peg-in-hole task with its task reward paid once, at the episode's end (``--set
task.sparse={task: 0}``), learned by a densified critic whose reward model ReSymNet fitted on random
episodes of that task.  The actors' experience (vectorized and per-step actors) carries
``released/task``; the learner accepts it and logs the model's prediction."""
import csv

import numpy as np
import pytest

from morl_robot.envs.mo_env import open_task_env
from morl_robot.prism.config import ReSymNetConfig
from morl_robot.prism.resymnet import export_densifier, train_densifier
from morl_robot.prism.sparse import collect_episodes
from morl_robot.tasks.registry import load_task
from tests.conftest import run_cli, tiny_learner_yaml

pytestmark = [pytest.mark.ros, pytest.mark.extended]  # make test-extended: a graph run (~1-2 min loaded)

SHORT = {"sparse": {"task": 0.0}, "episode_duration": 1.0}  # 20 steps: episodes end (and release) in a tiny run


@pytest.mark.parametrize("kind", ["vectorized", "per-step"])
def test_sparse_densified_task_trains_through_the_graph(kind, tmp_path):
    env = open_task_env(load_task("sawyer_peg_in_hole", None, SHORT))
    episodes = collect_episodes(env, None, 12, seed=0)
    env.close()
    densifier, _ = train_densifier(episodes, [0], [1], ReSymNetConfig(hidden=16, ensemble=1, epochs=5, patience=5), 0)
    model = tmp_path / "reward_model.pt"
    export_densifier(densifier, model)
    learner = tmp_path / "learner.yaml"
    learner.write_text(tiny_learner_yaml(4.0, log_every=1) + f"densify: {{objectives: [0], model: '{model}'}}\n")
    out = tmp_path / "run"
    r = run_cli(["train", "--task", "sawyer_peg_in_hole", "--learner", str(learner), "--out", str(out),
                 "--steps", "120", "--no-progress", "--actors-kind", kind, "--set", "task.sparse={task: 0.0}",
                 "--set", "task.episode_duration=1.0", "--set", "learner.training.observation_normalization=true"],
                timeout=600, out=out)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    predicted = [float(row["densify/predicted_mean/task"]) for row in rows if row.get("densify/predicted_mean/task")]
    assert predicted and np.isfinite(predicted).all()  # the learner densified from the model
    with open(out / "episodes.csv") as f:
        eps = list(csv.DictReader(f))
    assert eps  # episodes ended (and released their segments) through the graph
    assert "rejected" not in r.stderr.lower()
    logs = "".join(p.read_text(errors="replace") for p in (out / "logs").glob("*.log"))
    assert "do not match the learner" not in logs  # the actors' released/task column is the learner's layout
