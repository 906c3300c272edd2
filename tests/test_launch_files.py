"""The launch files, checked without ROS's `launch` packages (they are not on PyPI, so the pip-only
venv and CI cannot run `ros2 launch`; tests/launch/ brings them up for real where ROS is
installed): they parse, they build the session graph from config/sessions/*.yaml, every
executable they start is a console script in setup.py, every config file they name exists, each
declares only its own arguments, bad arguments are clear errors, and every process is required."""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))


def console_scripts() -> set[str]:
    text = (ROOT / "setup.py").read_text()
    return set(re.findall(r'"([A-Za-z_][\w-]*) = morl_robot[\w.]*:main"', text))


class _Recorder:
    """Stands in for a launch action class; keeps its constructor arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:

    def __init__(self, name: str):
        self.name = name

    def perform(self, context) -> str:
        return context.get(self.name, "")


@pytest.fixture
def fake_launch(monkeypatch):
    mods = {name: types.ModuleType(name) for name in
            ("launch", "launch.actions", "launch.substitutions", "launch_ros", "launch_ros.actions")}
    mods["launch"].LaunchDescription = lambda entities: list(entities)
    mods["launch.actions"].DeclareLaunchArgument = type("DeclareLaunchArgument", (_Recorder,), {})
    for name in ("OpaqueFunction", "ExecuteProcess", "LogInfo", "Shutdown"):
        setattr(mods["launch.actions"], name, type(name, (_Recorder,), {}))
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch_ros.actions"].Node = type("Node", (_Recorder,), {})
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.delitem(sys.modules, "morl_robot.session.launch_actions", raising=False)
    yield mods
    # imported against the stand-ins: never leave it for a real launch (tests/launch_tests) to find
    sys.modules.pop("morl_robot.session.launch_actions", None)


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nodes(path: Path, **args: str) -> list:
    entities = _load(path).generate_launch_description()
    context = {e.args[0]: e.kwargs["default_value"] for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
    unknown = set(args) - set(context)
    assert not unknown, f"{path.name} declares no argument {unknown}"
    context.update(args)
    nodes = []
    for e in entities:
        if type(e).__name__ == "OpaqueFunction":
            nodes += e.kwargs["function"](context)
    return nodes


def test_three_launch_files_exist_and_parse():
    assert {p.name for p in LAUNCH_FILES} == {"train.launch.py", "deploy.launch.py", "safety_test.launch.py"}
    for path in LAUNCH_FILES:
        tree = ast.parse(path.read_text(), filename=str(path))
        assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)


EXPECTED_ARGUMENTS = {
    "train.launch.py": {"session", "task", "reward_machine", "backend", "actors", "actors_kind", "envs", "steps", "seed", "namespace",
                        "learner_config", "out", "use_sim_time", "record", "foxglove", "foxglove_port"},
    "deploy.launch.py": {"session", "policy", "robot", "backend", "seed", "namespace", "release", "use_sim_time",
                         "preference", "out", "record", "foxglove", "foxglove_port"},
    "safety_test.launch.py": {"session", "robot", "backend", "seed", "namespace", "out", "use_sim_time", "record",
                              "foxglove", "foxglove_port"},
}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_each_launch_file_declares_only_its_own_arguments(fake_launch, path):
    entities = _load(path).generate_launch_description()
    names = {e.args[0] for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
    assert names == EXPECTED_ARGUMENTS[path.name]
    doc = _load(path).__doc__
    for name in names:  # the usage line in the file's docstring names every argument
        assert f"{name}:=" in doc, name


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from morl_robot.bench.graph import _export_policy

    path = tmp_path_factory.mktemp("policy") / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", path)
    return str(path)


@pytest.mark.parametrize(("file", "args", "message"), [
    ("train.launch.py", {"actors": "abc"}, "actors:='abc': expected a whole number >= 1"),
    ("train.launch.py", {"actors": "0"}, "actors:='0': must be >= 1"),
    ("train.launch.py", {"steps": "1e3"}, "steps:='1e3': expected a whole number"),
    ("train.launch.py", {"use_sim_time": "yes"}, "use_sim_time:='yes': expected true or false"),
    ("train.launch.py", {"envs": "0"}, "envs:='0': must be >= 1"),
    ("train.launch.py", {"actors_kind": "batched"}, "allowed values: 'auto', 'per-step', 'vectorized'"),
    ("deploy.launch.py", {}, "needs policy:=FILE.onnx"),
    ("deploy.launch.py", {"release": "auto", "policy": "POLICY"}, "release:='auto': allowed values: operator, after_checks"),
    ("deploy.launch.py", {"release": "after_checks", "backend": "hardware", "policy": "POLICY"},
     "after_checks is allowed only with backend:=sim"),
    ("deploy.launch.py", {"use_sim_time": "true", "backend": "hardware", "policy": "POLICY"}, "needs backend sim"),
    ("deploy.launch.py", {"preference": "0.1,0.1", "policy": "POLICY"}, "not preference-conditioned"),
    ("deploy.launch.py", {"preference": "0.1,x", "policy": "POLICY"}, "preference:='0.1,x': expected numbers"),
])
def test_bad_launch_arguments_are_clear_errors(fake_launch, policy, file, args, message):
    from morl_robot.errors import MorlRobotError

    args = {k: policy if v == "POLICY" else v for k, v in args.items()}
    with pytest.raises(MorlRobotError, match=re.escape(message)):
        _nodes(ROOT / "launch" / file, **args)


def test_train_actors_kind_vectorized_starts_vector_actors(fake_launch):
    nodes = _nodes(ROOT / "launch" / "train.launch.py", actors_kind="vectorized", envs="4", actors="2", namespace="v")
    actors = [e for e in nodes if type(e).__name__ == "Node" and e.kwargs["executable"] == "vector_actor"]
    assert [a.kwargs["namespace"] for a in actors] == ["/v/actor0", "/v/actor1"]
    assert all(a.kwargs["parameters"][0]["envs"] == 4 for a in actors)
    assert not [e for e in nodes if type(e).__name__ == "Node" and e.kwargs["executable"] == "robot_node"]


def test_train_launch_default_is_vectorized_in_sim_per_step_when_recording(fake_launch, tmp_path):
    """train.yaml's actors_kind: auto: vector actors on backend sim; record:=true needs per-step (logged)."""
    def kinds(**args: str) -> tuple[set[str], list[str]]:
        nodes = _nodes(ROOT / "launch" / "train.launch.py", out=str(tmp_path), **args)
        return ({e.kwargs["executable"] for e in nodes if type(e).__name__ == "Node"},
                [e.kwargs["msg"] for e in nodes if type(e).__name__ == "LogInfo"])
    exes, logs = kinds()
    assert "vector_actor" in exes and "robot_node" not in exes and "actors: vectorized" in logs
    exes, logs = kinds(record="true")
    assert "robot_node" in exes and "vector_actor" not in exes
    assert any(m.startswith("actors: per-step, needed by a recording") for m in logs), logs


def test_deploy_release_is_explicit_and_logged(fake_launch, policy):
    operator = _nodes(ROOT / "launch" / "deploy.launch.py", policy=policy, namespace="d")
    logs = [e.kwargs["msg"] for e in operator if type(e).__name__ == "LogInfo"]
    assert any("release:=operator" in m and "ros2 service call /d/safety/reset" in m for m in logs), logs
    assert not [e for e in operator if type(e).__name__ == "ExecuteProcess"]
    auto = _nodes(ROOT / "launch" / "deploy.launch.py", policy=policy, namespace="d", release="after_checks")
    (release,) = [e for e in auto if type(e).__name__ == "ExecuteProcess"]
    assert release.kwargs["cmd"][-4:] == ["morl_robot.cli", "release", "--namespace", "/d"]
    assert any("release:=after_checks" in e.kwargs["msg"] for e in auto if type(e).__name__ == "LogInfo")
    robot = next(e for e in auto if type(e).__name__ == "Node" and e.kwargs["executable"] == "robot_node")
    assert robot.kwargs["parameters"][0]["task"] == "sawyer_peg_in_hole"  # from the policy's contract


def test_deploy_preference_argument_reaches_the_policy_server(fake_launch, tmp_path):
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.errors import MorlRobotError
    from morl_robot.learning import ActionSpec, MOMPOLearner
    from morl_robot.learning.config import config_from_dict
    from morl_robot.serving.contract import PreferenceInputs, contract_for_task, replace
    from morl_robot.serving.export import export_policy

    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        contract = contract_for_task(env.task, env.robot)
    finally:
        env.close()
    contract = replace(contract, preferences=PreferenceInputs(list(contract.objective_names), [[0.01, 1.0]] * 2))
    cfg = config_from_dict({"preferences": {"ranges": [[0.01, 1.0]] * 2},
                            "networks": {"policy_hidden": [8], "critic_hidden": [8]}})
    learner = MOMPOLearner(len(contract.observation_labels), ActionSpec.box(len(contract.action_labels)), 2, cfg)
    path = tmp_path / "conditioned.onnx"
    export_policy(learner.policy, contract, path)
    nodes = _nodes(ROOT / "launch" / "deploy.launch.py", policy=str(path), preference="0.01, 1.0")
    server = next(e for e in nodes if type(e).__name__ == "Node" and e.kwargs["executable"] == "policy_server")
    assert server.kwargs["parameters"][0]["preference"] == [0.01, 1.0]
    with pytest.raises(MorlRobotError, match=r"preference:=0.01,2: ε for objective 'wrist_force' is 2.0, outside"):
        _nodes(ROOT / "launch" / "deploy.launch.py", policy=str(path), preference="0.01,2")


class _Exited:
    def __init__(self, returncode: int):
        self.returncode = returncode


def _reasons(actions) -> list[str]:
    return [a.kwargs["reason"] for a in actions if type(a).__name__ == "Shutdown"]


def test_required_processes_shut_the_launch_down_with_the_reason(fake_launch, policy, tmp_path):
    train = _nodes(ROOT / "launch" / "train.launch.py", steps="100", out=str(tmp_path), actors_kind="per-step")
    by_exe = {n.kwargs["executable"]: n for n in train}
    assert by_exe["learner_node"].kwargs["parameters"][0]["total_steps"] == 100
    live = types.SimpleNamespace(is_shutdown=False)
    assert _reasons(by_exe["learner_node"].kwargs["on_exit"](_Exited(0), live)) == [
        "training finished: the learner reached its total steps"]
    assert "exited with code 1" in _reasons(by_exe["learner_node"].kwargs["on_exit"](_Exited(1), live))[0]
    assert "/morl/actor0/robot_node exited with code 2" in _reasons(by_exe["robot_node"].kwargs["on_exit"](
        _Exited(2), live))[0]
    # while the launch shuts down every node exits: no second shutdown, no misleading reason
    assert by_exe["policy_server"].kwargs["on_exit"](_Exited(0), types.SimpleNamespace(is_shutdown=True)) == []
    deploy = _nodes(ROOT / "launch" / "deploy.launch.py", policy=policy)
    server = next(n for n in deploy if n.kwargs["executable"] == "policy_server")
    assert "policy_server exited with code 2" in _reasons(server.kwargs["on_exit"](_Exited(2), live))[0]


def test_safety_test_launch_attaches_the_probes_to_its_graph(fake_launch, tmp_path):
    entities = _nodes(ROOT / "launch" / "safety_test.launch.py", robot="sawyer", out=str(tmp_path), namespace="s")
    nodes = [e for e in entities if type(e).__name__ == "Node"]
    assert sorted((n.kwargs["namespace"], n.kwargs["executable"]) for n in nodes) == [
        ("/s/cartesian_velocity", "robot_node"), ("/s/cartesian_velocity", "safety_monitor"),
        ("/s/position", "robot_node"), ("/s/position", "safety_monitor")]
    later = [n for n in nodes if n.kwargs["namespace"] == "/s/position"]
    assert all(n.kwargs["parameters"][0]["autostart"] is False for n in later)  # one phase at a time
    (probe,) = [e for e in entities if type(e).__name__ == "ExecuteProcess"]
    cmd = probe.kwargs["cmd"]
    assert cmd[cmd.index("safety-test"):cmd.index("safety-test") + 2] == ["safety-test", "--attach"]
    assert cmd[cmd.index("--out") + 1] == str(tmp_path) and cmd[cmd.index("--namespace") + 1] == "/s"
    from morl_robot.cli import build_parser

    build_parser().parse_args(cmd[cmd.index("safety-test"):])  # the command line the CLI accepts
    live = types.SimpleNamespace(is_shutdown=False)
    assert _reasons(probe.kwargs["on_exit"](_Exited(3), live)) == [
        f"safety test finished: INCOMPLETE; report in {tmp_path}/report.md"]


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_executable_is_a_console_script_and_every_config_exists(fake_launch, policy, path):
    from morl_robot.resources import config_path

    scripts = console_scripts()
    args = {"train.launch.py": {"actors": "2"}, "deploy.launch.py": {"policy": policy}}.get(path.name, {})
    nodes = [e for e in _nodes(path, **args) if type(e).__name__ == "Node"]
    assert nodes, f"{path.name} starts no nodes"
    for node in nodes:
        kw = node.kwargs
        assert kw["package"] == "morl_robot"
        assert kw["executable"] in scripts, f"{kw['executable']} is not a console script in setup.py"
        params = kw["parameters"][0]
        assert params["use_sim_time"] is False
        if kw["executable"] == "learner_node":
            name = params["config"]
            assert Path(config_path(f"learner/{name}.yaml")).is_file(), name
        if params.get("task"):
            assert Path(config_path(f"tasks/{params['task']}.yaml")).is_file()
        if params.get("robot") and kw["executable"] != "policy_server":
            assert Path(config_path(f"robots/{params['robot']}.yaml")).is_file()
        if kw["executable"] == "safety_monitor":
            assert Path(config_path(f"safety/{params['robot']}.yaml")).is_file()


def test_train_launch_builds_one_pipeline_per_actor(fake_launch):
    nodes = _nodes(ROOT / "launch" / "train.launch.py", actors="3", namespace="lab", task="shadow_touch",
                   actors_kind="per-step")
    by_exe: dict[str, list] = {}
    for n in (e for e in nodes if type(e).__name__ == "Node"):
        by_exe.setdefault(n.kwargs["executable"], []).append(n)
    assert len(by_exe["learner_node"]) == 1 and by_exe["learner_node"][0].kwargs["namespace"] == "/lab"
    for exe in ("robot_node", "safety_monitor", "policy_server"):
        assert sorted(n.kwargs["namespace"] for n in by_exe[exe]) == ["/lab/actor0", "/lab/actor1", "/lab/actor2"]
    for n in by_exe["policy_server"]:
        remaps = dict(n.kwargs["remappings"])
        assert remaps == {"policy_snapshot": "/lab/policy_snapshot", "experience": "/lab/experience",
                          "experience_allowance": "/lab/experience_allowance"}
    assert {n.kwargs["parameters"][0]["task"] for n in by_exe["robot_node"]} == {"shadow_touch"}
