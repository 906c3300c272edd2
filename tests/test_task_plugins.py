"""Tasks from outside the package (docs/howto/add_task.md): a module + a task YAML naming its class,
``$MORL_ROBOT_TASK_PATH``, an entry point; the errors a broken plugin gives; each task's reference
card (``Task.describe()``) against the environment it builds."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from morl_robot.cli import main
from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.tasks import registry
from tests.installed import installed_cli, user_env

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "howto" / "add_task"
CLI = installed_cli()  # the venv's, or a sourced workspace's on PATH


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed ``morl-robot`` in a fresh process (the plugin is found as a user's would be)."""
    extra = dict(env or {})
    full = user_env(drop=(registry.TASK_PATH_VAR,), pythonpath=tuple(p for p in [extra.pop("PYTHONPATH", "")] if p))
    full.update(extra)
    return subprocess.run([CLI, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=600,
                          check=False)


def user_task(tmp_path: Path) -> Path:
    """The how-to's task, copied out of the repository: ``my_tasks/sawyer_reach.{py,yaml}``."""
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    shutil.copy(EXAMPLE / "sawyer_reach.py", folder)
    shutil.copy(EXAMPLE / "sawyer_reach.yaml", folder)
    return folder


def cli_rollout_args(config: Path, task: str = "sawyer_reach") -> list[str]:
    """``rollout --task-config PATH`` (plus ``--task`` while the CLI still requires it)."""
    from morl_robot.cli import build_parser

    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "rollout" in a.choices)
    required = any(a.required for a in sub.choices["rollout"]._actions if "--task" in a.option_strings)
    return ["rollout", *(["--task", task] if required else []), "--task-config", str(config)]


# --- the how-to's path: a module + YAML, no package edit --------------------------------------
def test_a_task_module_on_pythonpath_runs_through_the_cli(tmp_path):
    """Module on PYTHONPATH, YAML passed by path: the real CLI rolls it out, from another folder."""
    folder = user_task(tmp_path)
    done = run_cli(*cli_rollout_args(folder / "sawyer_reach.yaml"), "--steps", "30", cwd=tmp_path,
                   env={"PYTHONPATH": str(folder)})
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["task"] == "sawyer_reach" and set(got["returns"]) == {"reach", "effort"} and got["steps"] == 30


def test_a_task_module_beside_its_yaml_needs_no_pythonpath(tmp_path):
    """The YAML's folder is where its ``class`` module is looked for when it is not on sys.path."""
    folder = user_task(tmp_path)
    done = run_cli(*cli_rollout_args(folder / "sawyer_reach.yaml"), "--steps", "10", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["task"] == "sawyer_reach"


def test_a_task_folder_on_the_task_path_is_listed_and_has_its_scripted_controller(tmp_path):
    """A folder on $MORL_ROBOT_TASK_PATH: ``morl-robot tasks`` lists the task, and ``evaluate scripted``
    uses the controller the task class provides (no name branch in the package)."""
    folder = user_task(tmp_path)
    env = {registry.TASK_PATH_VAR: str(folder)}
    listed = run_cli("tasks", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {r["task"]: r for r in json.loads(listed.stdout)}
    assert rows["sawyer_reach"]["objectives"] == ["reach", "effort"] and rows["sawyer_reach"]["observation_size"] == 24
    assert "sawyer_peg_in_hole" in rows
    done = run_cli("evaluate", "scripted", "--task", "sawyer_reach", "--episodes", "2", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout[done.stdout.index("{"):])
    assert got["success_rate"] == 1.0 and got["objectives"]["reach"]["mean"] > 40


def test_an_entry_point_plugin_is_found(tmp_path):
    """An installed distribution declaring ``[morl_robot.tasks] reach_ep = reach_plugin:ReachEP``
    (here a bare .dist-info on PYTHONPATH, as pip leaves it) is a task like the package's."""
    (tmp_path / "reach_plugin.py").write_text(
        (EXAMPLE / "sawyer_reach.py").read_text()
        + "\n\nclass ReachEP(SawyerReach):\n    name = 'reach_ep'\n    config_file = 'reach_ep.yaml'\n")
    (tmp_path / "reach_ep.yaml").write_text((EXAMPLE / "sawyer_reach.yaml").read_text().replace(
        "class: sawyer_reach:SawyerReach\n", ""))
    info = tmp_path / "reach_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reach-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[morl_robot.tasks]\nreach_ep = reach_plugin:ReachEP\n")
    env = {"PYTHONPATH": str(tmp_path)}
    listed = run_cli("tasks", "--json", cwd=ROOT, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "reach_ep" in [r["task"] for r in json.loads(listed.stdout)]
    done = run_cli("rollout", "--task", "reach_ep", "--steps", "10", cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["task"] == "reach_ep"


# --- errors a user can act on ------------------------------------------------------------------
def write_yaml(path: Path, klass: str, robot: str = "sawyer") -> Path:
    text = (EXAMPLE / "sawyer_reach.yaml").read_text()
    path.write_text(text.replace("class: sawyer_reach:SawyerReach", f"class: {klass}").replace(
        "robot: sawyer", f"robot: {robot}"))
    return path


@pytest.mark.parametrize(("klass", "robot", "message"), [
    ("no_such_module:Task", "sawyer", "key 'class': cannot import module 'no_such_module'"),
    ("morl_robot.tasks.base:Nope", "sawyer", "key 'class': module 'morl_robot.tasks.base'"),
    ("morl_robot.tasks.base:TaskConfig", "sawyer", "not a subclass of morl_robot.tasks.base.Task"),
    ("just_a_module", "sawyer", "key 'class': expected 'module:Class'"),
    ("morl_robot.tasks.shadow_hand:ShadowTouch", "sawyer", "ShadowTouch is task 'shadow_touch', not task 'sawyer_peg"),
])
def test_a_broken_task_yaml_is_refused_naming_the_file_and_key(tmp_path, capsys, klass, robot, message):
    path = write_yaml(tmp_path / "broken.yaml", klass, robot)
    named = ["--task", "sawyer_peg_in_hole"] if "ShadowTouch" in klass else []  # a name the YAML's class contradicts
    assert main(["rollout", *named, "--task-config", str(path), "--steps", "5"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err, err


def test_unknown_task_lists_the_known_ones_and_says_how_to_register(capsys):
    with pytest.raises(UnknownNameError) as info:
        registry.load_task("no_such_task")
    text = str(info.value)
    assert "known tasks: sawyer_peg_in_hole, shadow_touch" in text
    assert "class: module:Class" in text and registry.TASK_PATH_VAR in text and registry.ENTRY_POINT_GROUP in text
    assert main(["rollout", "--task", "no_such_task", "--steps", "1"]) == 2
    assert "docs/howto/add_task.md" in capsys.readouterr().err


def test_a_task_on_the_wrong_robot_is_refused(tmp_path, monkeypatch):
    folder = user_task(tmp_path)
    write_yaml(folder / "sawyer_reach.yaml", "sawyer_reach:SawyerReach", robot="shadow_hand")
    monkeypatch.setenv(registry.TASK_PATH_VAR, str(folder))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))  # restored after the YAML-folder import
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        with pytest.raises(ConfigError, match="key 'robot': task 'sawyer_reach' runs on robot 'sawyer', got 'shadow_hand'"):
            registry.load_task("sawyer_reach")
    finally:
        monkeypatch.undo()
        registry.reload_tasks()


# --- the reference card matches the environment ---------------------------------------------
@pytest.mark.parametrize(("task", "overrides"), [
    ("sawyer_peg_in_hole", None), ("sawyer_peg_in_hole", {"observe_hole_offset": False, "frame_stack": 2,
                                                          "action_axes": ["vx", "vy", "vz", "wz"]}),
    ("shadow_touch", None), ("shadow_touch", {"action_mode": "delta"}), ("shadow_turn", None), ("shadow_orient", None),
])
def test_the_description_matches_the_built_env(task, overrides):
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv(task, overrides=overrides)
    try:
        d = env.task.describe()
        assert d.name == task and d.robot == env.task.robot_name
        assert d.observation_size == env.observation_space.shape[0]
        assert d.action_size == env.action_space.shape[0]
        assert d.objective_names == tuple(env.objective_names)
        assert d.control_rate_hz == env.task.control_rate and d.episode_s == env.task.config.episode_duration
        for q, lo, hi in zip(d.rewards, env.task.reward_lower, env.task.reward_upper):  # the range states the bounds
            assert f"{lo:g}" in q.range.replace("−", "-") and f"{hi:g}" in q.range, (q, lo, hi)
        assert all(q.meaning and q.size >= 1 for q in (*d.observations, *d.actions, *d.rewards))
        assert (d.scripted is not None) == (task in registry.scripted_tasks())
    finally:
        env.close()


def test_every_package_task_has_a_description_and_its_per_task_behaviour():
    from morl_robot.experiments.shadow_front import aligned, front_tasks

    for name in registry.BUILTIN_TASKS:
        assert registry.describe_task(name).rewards
    assert registry.scripted_tasks()[:4] == tuple(registry.BUILTIN_TASKS)
    assert [aligned(t) for t in front_tasks()[:3]] == [False, False, True]
    assert registry.task_class("sawyer_peg_in_hole").scripted_options == ("gain", "clearance")


def test_a_plugin_task_trains_through_the_graph_and_its_policy_evaluates(tmp_path, domain_id):
    """The how-to's step 4 on a tiny budget: `train --task sawyer_reach` with the task's folder on
    $MORL_ROBOT_TASK_PATH (the ROS nodes are other processes: they find the task the same way), then
    `evaluate` of the run's policy (its contract names the plugin task, with its observation units)."""
    from morl_robot.session.processes import ros_env

    folder = user_task(tmp_path)
    env = ros_env(domain_id, user_env())
    env[registry.TASK_PATH_VAR] = str(folder)
    out = tmp_path / "runs" / "reach"
    train = subprocess.run([CLI, "train", "--task", "sawyer_reach", "--learner", "mo_mpo_cpu_small", "--session", "train",
                            "--steps", "200", "--out", str(out), "--no-progress"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600, check=False)
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-3000:]
    contract = json.loads(subprocess.run([CLI, "inspect", str(out), "--json"], cwd=tmp_path, env=env, capture_output=True,
                                         text=True, timeout=300, check=False).stdout or "{}")
    if contract:  # the units of the task's own labels reach the contract
        units = dict(zip(contract["observation_labels"], contract["observation_units"]))
        assert units["target_dx"] == "m"
    done = subprocess.run([CLI, "evaluate", str(out), "--episodes", "1", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout[done.stdout.index("{"):])
    assert set(got["objectives"]) == {"reach", "effort"}


def test_a_yaml_naming_its_class_is_enough_to_open_the_task(tmp_path):
    """``load_task(None, PATH)`` / ``MORobotEnv(None, config_file=PATH)``: the task comes from the
    YAML's ``class`` (what ``--task-config PATH`` without ``--task`` calls), and is then known by name
    in this process and, through $MORL_ROBOT_TASK_PATH, in the processes it starts."""
    folder = user_task(tmp_path)
    code = ("import os, subprocess, sys\n"
            "from morl_robot.envs.mo_env import MORobotEnv\n"
            "from morl_robot.tasks.registry import load_task, resolve_task_name, task_names\n"
            f"path = {str(folder / 'sawyer_reach.yaml')!r}\n"
            "assert resolve_task_name(None, path) == 'sawyer_reach'\n"
            "env = MORobotEnv(None, config_file=path); assert env.objective_names == ('reach', 'effort'); env.close()\n"
            "assert 'sawyer_reach' in task_names() and load_task('sawyer_reach').name == 'sawyer_reach'\n"
            "child = subprocess.run([sys.executable, '-c', 'from morl_robot.tasks.registry import load_task; "
            "print(load_task(\"sawyer_reach\").config.target_height)'], capture_output=True, text=True, check=True)\n"
            "print(child.stdout.strip())\n")
    env = user_env(drop=(registry.TASK_PATH_VAR,))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "0.05"


def test_task_config_alone_names_the_task_for_rollout_and_train(tmp_path, domain_id):
    """``--task-config PATH`` of a YAML naming its class is enough, with no --task and no task path:
    ``rollout`` opens the task, and ``train`` trains it through the graph (its nodes, other processes,
    get the YAML by path)."""
    from morl_robot.session.processes import ros_env

    folder = user_task(tmp_path)
    env = ros_env(domain_id, user_env(drop=(registry.TASK_PATH_VAR,)))
    yaml_path = str(folder / "sawyer_reach.yaml")
    roll = subprocess.run([CLI, "rollout", "--task-config", yaml_path, "--steps", "20"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert roll.returncode == 0, roll.stderr[-3000:]
    assert json.loads(roll.stdout)["task"] == "sawyer_reach"
    out = tmp_path / "runs" / "reach"
    train = subprocess.run([CLI, "train", "--task-config", yaml_path, "--learner", "mo_mpo_cpu_small", "--session", "train",
                            "--steps", "100", "--out", str(out), "--no-progress"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600, check=False)
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-3000:]
    assert (out / "policy.onnx").is_file()
    assert "sawyer_reach" in (out / "session.yaml").read_text()
