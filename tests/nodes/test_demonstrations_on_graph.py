"""Learning from demonstrations through the ROS graph (`morl-robot train` with a learner YAML whose
`training.demonstrations.episodes` > 0): the actors act the first episodes with the task's
scripted demonstrator through the safety rules — the default (auto) vector actor in its
environments, a per-step actor's policy server through the safety monitor — the learner node
receives them as experience, clones them and only then publishes the policy that acts next."""
import csv
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import tiny_learner_yaml

pytestmark = [pytest.mark.ros]

TINY_DEMOS = tiny_learner_yaml(2.0, demonstrations="{episodes: 2, action_noise: 0.05, pretrain_updates: 50, "
                                                  "critic_warmup_updates: 5}")


@pytest.mark.parametrize("actors", [
    ["--envs", "2", "--steps", "700"],  # auto: a vector actor (2 environments: one demonstration each)
    ["--actors-kind", "per-step", "--steps", "500"],
], ids=["vectorized", "per-step"])
def test_demonstrator_acts_the_first_episodes_and_the_clone_acts_after_them(tmp_path, domain_id, actors):
    pytest.importorskip("rclpy")
    from morl_robot.session.processes import ros_env

    learner = tmp_path / "tiny_demos.yaml"
    learner.write_text(TINY_DEMOS)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", "sawyer_peg_in_hole", *actors,
           "--learner", str(learner), "--out", str(out), "--no-progress", "--domain-id", str(domain_id)]
    done = subprocess.run(cmd, env={**ros_env(domain_id), **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}},
                          capture_output=True, text=True, timeout=600, check=False)
    logs = {p.stem: p.read_text() for p in (out / "logs").glob("*.log")} if (out / "logs").is_dir() else {}
    assert done.returncode == 0, done.stderr[-3000:] + "\n".join(v[-2000:] for v in logs.values())

    # what the learner received, episode by episode: the first two acted by the demonstrator
    # (policy_version 0 on the wire), every later one by a learned policy newer than the initial one
    with open(out / "episodes.csv") as f:
        episodes = list(csv.DictReader(f))
    versions = [int(float(e["policy_version"])) for e in episodes]
    assert len(versions) >= 3 and versions[:2] == [0, 0] and all(v >= 2 for v in versions[2:]), versions
    # the scripted controller drove the peg in through the safety monitor: far above what the
    # (barely trained) policy gets in the episodes after it
    demo_returns = [float(e["return/task"]) for e in episodes[:2]]
    policy_returns = [float(e["return/task"]) for e in episodes[2:]]
    assert max(demo_returns) > 50 > max(policy_returns), (demo_returns, policy_returns)

    # the learner cloned exactly the demonstration steps it received, before publishing the next policy
    demo_steps = sum(int(float(e["length"])) for e in episodes[:2])
    cloned = re.search(r"behaviour cloning: 50 updates on (\d+) demonstration steps \(2 episodes\)", logs["learner_node"])
    assert cloned is not None and int(cloned.group(1)) == demo_steps, logs["learner_node"][-2000:]
    assert "critic warm-up: 5 policy-evaluation updates" in logs["learner_node"]

    # the actor: demonstrations first, then it waited for the clone (no version > 1 served before)
    server = logs["policy_server" if "per-step" in actors else "vector_actor"]
    waiting = server.index("2 demonstration episodes acted; waiting for the learner's cloned policy (newer than version 1)")
    served = [(m.start(), int(m.group(1))) for m in re.finditer(r"policy version (\d+) from policy_snapshot", server)]
    assert [v for at, v in served if at < waiting] == [1], served
    assert any(v >= 2 for at, v in served if at > waiting), served


def test_demonstrations_are_shared_among_actors_and_not_repeated_on_resume(tmp_path):
    from morl_robot.errors import ConfigError
    from morl_robot.session.config import VectorActorSettings, load_session_config
    from morl_robot.session.graph import train_nodes

    learner = tmp_path / "tiny_demos.yaml"
    learner.write_text(TINY_DEMOS.replace("episodes: 2,", "episodes: 5,"))
    cfg = load_session_config("train", {"task": "sawyer_peg_in_hole", "actors": 2, "actors_kind": "per-step",
                                        "learner_node": {"config": str(learner)}})

    def shares(session_index: int) -> list[tuple[int, float]]:
        return [(n.parameters["demonstrations"], n.parameters["demonstration_noise"])
                for n in train_nodes(cfg, tmp_path / "run", session_index) if n.executable == "policy_server"]

    assert shares(0) == [(3, 0.05), (2, 0.05)]  # 5 episodes across two actors, with the YAML's noise
    assert [n for n, _ in shares(1)] == [0, 0]  # a resumed run: the learner clones what it has
    vectorized = load_session_config("train", {"task": "sawyer_peg_in_hole", "actors": 2, "actors_kind": "auto",
                                               "learner_node": {"config": str(learner)}})
    assert [(n.parameters["demonstrations"], n.parameters["demonstration_noise"])
            for n in train_nodes(vectorized, tmp_path / "run") if n.executable == "vector_actor"] == [(3, 0.05), (2, 0.05)]
    with pytest.raises(ConfigError, match="demonstrations"):
        VectorActorSettings(demonstrations=-1).validate()


def test_a_policy_server_refuses_demonstrations_outside_training():
    from morl_robot.errors import ConfigError
    from morl_robot.session.config import PolicyServerSettings

    with pytest.raises(ConfigError, match="demonstrations"):
        PolicyServerSettings(mode="deploy", demonstrations=3).validate()
    with pytest.raises(ConfigError, match="demonstration_noise"):
        PolicyServerSettings(mode="train", demonstrations=3, demonstration_noise=0.0).validate()
