"""Launch arguments naming files resolve relative to the package, and the learner gets the time to
write its final artefacts when the launch stops it (issue 41), checked through the launch files
against tests/test_launch_files.py's stand-ins for ROS's launch packages."""
from __future__ import annotations

import pytest

from tests.test_launch_files import ROOT, _nodes, fake_launch  # noqa: F401 - fake_launch is a fixture

pytestmark = pytest.mark.usefixtures("fake_launch")
DEMO_POLICY = "results/demo/seed0/policy.onnx"  # the README's and tutorials' deploy example


def _by_executable(nodes) -> dict:
    return {n.kwargs["executable"]: n for n in nodes if type(n).__name__ == "Node"}


def test_a_policy_path_relative_to_the_package_works_from_a_workspace_root(tmp_path, monkeypatch):
    assert (ROOT / DEMO_POLICY).is_file()
    monkeypatch.chdir(tmp_path)  # e.g. ~/ws, with the package under src/morl_robot
    nodes = _by_executable(_nodes(ROOT / "launch" / "deploy.launch.py", policy=DEMO_POLICY))
    assert nodes["policy_server"].kwargs["parameters"][0]["policy"] == str(ROOT / DEMO_POLICY)


def test_a_policy_in_the_current_folder_wins(tmp_path, monkeypatch):
    here = tmp_path / DEMO_POLICY
    here.parent.mkdir(parents=True)
    here.write_bytes((ROOT / DEMO_POLICY).read_bytes())
    monkeypatch.chdir(tmp_path)
    nodes = _by_executable(_nodes(ROOT / "launch" / "deploy.launch.py", policy=DEMO_POLICY))
    assert nodes["policy_server"].kwargs["parameters"][0]["policy"] == str(here)


def test_a_missing_policy_names_every_place_looked_in(tmp_path, monkeypatch):
    from morl_robot.errors import UsageError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as info:
        _nodes(ROOT / "launch" / "deploy.launch.py", policy="results/nope/policy.onnx")
    text = str(info.value)
    assert text.startswith("launch argument policy:=results/nope/policy.onnx: no such file; looked in:")
    for place in (tmp_path, ROOT):  # the current folder, the package (here the source tree)
        assert f"\n  {place / 'results/nope/policy.onnx'}" in text


def test_session_and_learner_config_paths_resolve_like_the_policy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nodes = _by_executable(_nodes(ROOT / "launch" / "train.launch.py", session="config/sessions/train.yaml",
                                  learner_config="config/learner/mo_mpo_cpu_small.yaml"))
    assert nodes["learner_node"].kwargs["parameters"][0]["config"] == str(ROOT / "config/learner/mo_mpo_cpu_small.yaml")
    # a config name stays a name (config/<kind>/<name>.yaml, resolved as before)
    named = _by_executable(_nodes(ROOT / "launch" / "train.launch.py", learner_config="mo_mpo_cpu_small"))
    assert named["learner_node"].kwargs["parameters"][0]["config"] == "mo_mpo_cpu_small"


def test_only_the_nodes_that_write_when_stopped_get_a_longer_sigterm_window(tmp_path):
    from morl_robot.session.launch_actions import STOP_TIMEOUTS

    nodes = _by_executable(_nodes(ROOT / "launch" / "train.launch.py", out=str(tmp_path), record="true"))
    assert float(nodes["learner_node"].kwargs["sigterm_timeout"]) == STOP_TIMEOUTS["learner_node"] >= 20
    assert float(nodes["recorder"].kwargs["sigterm_timeout"]) == STOP_TIMEOUTS["recorder"]
    others = [exe for exe, n in nodes.items() if "sigterm_timeout" in n.kwargs and exe not in STOP_TIMEOUTS]
    assert not others and {"robot_node", "policy_server", "safety_monitor"} <= set(nodes)

