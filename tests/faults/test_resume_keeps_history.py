"""Fault: after a resume, safety_violations.json was overwritten (the first session's counts lost)
and the actors' random streams restarted from the same seed (the first episodes repeated the first
session's).  Each session of a run is recorded; counts accumulate; actor seeds move on."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from morl_robot.cli.train import merge_violations
from morl_robot.session.config import load_session_config
from morl_robot.session.graph import SESSION_SEED_STRIDE, train_nodes


def test_violation_counts_accumulate_over_sessions():
    first = {"total": 3, "by_rule": {"wrench.force_norm/collision": 3}, "by_actor": {"/m/actor0": {"a": 3}}}
    merged = merge_violations(None, first, 0)
    second = {"total": 2, "by_rule": {"wrench.force_norm/collision": 1, "command.rate/soft": 1},
              "by_actor": {"/m/actor0": {"a": 2}}}
    merged = merge_violations(merged, second, 1)
    assert merged["total"] == 5 and merged["by_rule"] == {"wrench.force_norm/collision": 4, "command.rate/soft": 1}
    assert merged["by_actor"] == {"/m/actor0": {"a": 5}}
    assert [s["session"] for s in merged["sessions"]] == [0, 1] and merged["sessions"][0]["total"] == 3
    legacy = merge_violations(first, second, 1)  # a file written before sessions were recorded
    assert legacy["total"] == 5 and len(legacy["sessions"]) == 2


def test_a_resumed_session_gives_its_actors_new_seeds(tmp_path):
    cfg = load_session_config("train", {"task": "sawyer_peg_in_hole", "actors": 2})
    seeds = [{(s.name, s.namespace): s.parameters.get("seed") for s in train_nodes(cfg, tmp_path, session_index=k)}
             for k in (0, 1)]
    for key, seed in seeds[0].items():
        if key[0] in ("robot_node", "policy_server", "vector_actor"):
            assert seeds[1][key] == seed + SESSION_SEED_STRIDE


@pytest.mark.ros
def test_train_twice_into_one_run_records_both_sessions(tmp_path, domain_id):
    from morl_robot.session.processes import ros_env

    out = tmp_path / "run"
    # the recipe's behaviour cloning (3 000 updates after the demonstrations, ~50 s of a loaded
    # host per session) cut to 10 as in the docs harness: what is checked is the run's records
    demos = "learner.training.demonstrations"
    tiny = ["--set", f"{demos}.pretrain_updates=10", "--set", f"{demos}.critic_warmup_updates=2"]
    for steps in (300, 600):
        cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", "sawyer_peg_in_hole", "--steps", str(steps),
               "--out", str(out), "--no-progress", "--namespace", "resume", "--domain-id", str(domain_id), *tiny]
        done = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
    sessions = json.loads((out / "sessions.json").read_text())
    assert [s["session"] for s in sessions] == [0, 1]
    violations = json.loads((out / "safety_violations.json").read_text())
    assert [s["session"] for s in violations["sessions"]] == [0, 1]
    assert violations["total"] == sum(s["total"] for s in violations["sessions"])
