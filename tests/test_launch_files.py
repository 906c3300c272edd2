"""The launch files, checked statically (ROS's `launch` packages are not on PyPI, so CI cannot
run `ros2 launch`): they parse, they build the session graph from config/sessions/*.yaml, every
executable they start is a console script in setup.py and every config file they name exists."""
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
    mods["launch.actions"].OpaqueFunction = type("OpaqueFunction", (_Recorder,), {})
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch_ros.actions"].Node = type("Node", (_Recorder,), {})
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.delitem(sys.modules, "morl_robot.session.launch_actions", raising=False)
    return mods


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nodes(path: Path, **args: str) -> list:
    entities = _load(path).generate_launch_description()
    context = {e.args[0]: e.kwargs["default_value"] for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
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


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_arguments_are_the_documented_ones(fake_launch, path):
    entities = _load(path).generate_launch_description()
    names = {e.args[0] for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
    assert {"robot", "task", "backend", "actors", "namespace", "policy", "use_sim_time"} <= names


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_executable_is_a_console_script_and_every_config_exists(fake_launch, path):
    from morl_robot.resources import config_path

    scripts = console_scripts()
    nodes = _nodes(path, policy="/tmp/policy.onnx", actors="2")
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
    nodes = _nodes(ROOT / "launch" / "train.launch.py", actors="3", namespace="lab", task="shadow_touch")
    by_exe: dict[str, list] = {}
    for n in nodes:
        by_exe.setdefault(n.kwargs["executable"], []).append(n)
    assert len(by_exe["learner_node"]) == 1 and by_exe["learner_node"][0].kwargs["namespace"] == "/lab"
    for exe in ("robot_node", "safety_monitor", "policy_server"):
        assert sorted(n.kwargs["namespace"] for n in by_exe[exe]) == ["/lab/actor0", "/lab/actor1", "/lab/actor2"]
    for n in by_exe["policy_server"]:
        remaps = dict(n.kwargs["remappings"])
        assert remaps == {"policy_snapshot": "/lab/policy_snapshot", "experience": "/lab/experience",
                          "experience_allowance": "/lab/experience_allowance"}
    assert {n.kwargs["parameters"][0]["task"] for n in by_exe["robot_node"]} == {"shadow_touch"}
