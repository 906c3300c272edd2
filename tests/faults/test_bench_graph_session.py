"""Issue 40: ``morl-robot bench graph`` built its own node specs and drifted from the sessions (its
safety monitor had no task, so it held the task's ``vx, vy, vz`` commands and the lockstep loop
never ran).  Its graph now comes from the session builder; these checks fail if it builds its
own again.  (That it runs end to end: tests/bench/test_every_bench_runs.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

TASK = "sawyer_peg_in_hole"


#: parameters each call of the session builder sets afresh (the session's id and start time)
PER_SESSION = ("session", "session_started")


def _key(spec) -> tuple:
    params = {k: v for k, v in spec.parameters.items() if k not in PER_SESSION}
    return spec.executable, spec.name, spec.namespace, params, spec.remappings


@pytest.mark.parametrize("with_monitor", [True, False])
def test_the_bench_graph_is_the_training_sessions_actor_pipeline(tmp_path: Path, with_monitor: bool) -> None:
    from morl_robot.bench.graph import bench_session, graph_specs
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import train_nodes
    from morl_robot.tasks.registry import load_task

    policy = tmp_path / "policy.onnx"
    specs, ns = graph_specs(bench_session(TASK, policy), tmp_path / "run", with_monitor)
    session = load_session_config("train", {"task": TASK, "actors": 1, "actors_kind": "per-step",
                                            "namespace": "bench", "total_steps": 0,
                                            "policy_server": {"policy": str(policy)}})
    expected = [s for s in train_nodes(session, tmp_path / "run") if s.executable != "learner_node"]
    if not with_monitor:
        expected = [s for s in expected if s.executable != "safety_monitor"]
        for s in expected:
            if s.executable == "policy_server":
                s.remappings["command"] = "command_safe"
    assert [_key(s) for s in specs] == [_key(s) for s in expected]
    assert ns == "/bench/actor0" and {s.namespace for s in specs} == {ns}
    assert len({s.parameters["session"] for s in specs}) == 1  # one session: the robot node acts on its commands
    by_exe = {s.executable: s.parameters for s in specs}
    assert by_exe["robot_node"]["timing"] == "lockstep" and by_exe["robot_node"]["task"] == TASK
    assert by_exe["policy_server"]["mode"] == "train" and by_exe["policy_server"]["policy"] == str(policy)
    if with_monitor:  # the parameter whose absence held every command
        assert by_exe["safety_monitor"]["action_labels"] == ",".join(load_task(TASK).action_labels) == "vx,vy,vz"
        assert by_exe["safety_monitor"]["watchdogs"] is False


def test_a_parameter_the_session_builder_adds_reaches_the_bench_graph(tmp_path: Path, monkeypatch) -> None:
    """A new per-node parameter in morl_robot/session/graph.py (as the session id was) needs no edit of the bench."""
    import morl_robot.session.graph as session_graph
    from morl_robot.bench.graph import bench_session, graph_specs

    with_clock = session_graph.with_clock

    def with_new_parameter(cfg, nodes, *args, **kwargs):
        for spec in nodes:
            spec.parameters["a_new_parameter"] = "i40"
        return with_clock(cfg, nodes, *args, **kwargs)

    monkeypatch.setattr(session_graph, "with_clock", with_new_parameter)
    for with_monitor in (True, False):
        specs, _ = graph_specs(bench_session(TASK, tmp_path / "p.onnx"), tmp_path / "run", with_monitor)
        assert specs and all(s.parameters.get("a_new_parameter") == "i40" for s in specs)
