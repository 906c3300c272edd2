"""A broken plugin task fails the command that meets it with one line naming the file, the key and
the cause (exit code 2), not a traceback; the package's own tasks are not affected."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from morl_robot.cli import main
from morl_robot.tasks import registry

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "add_task"


@pytest.fixture
def task_path(tmp_path, monkeypatch):
    """A folder on $MORL_ROBOT_TASK_PATH (sys.path and PYTHONPATH restored afterwards)."""
    monkeypatch.setenv(registry.TASK_PATH_VAR, str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setattr(sys, "path", list(sys.path))
    registry.reload_tasks()
    yield tmp_path
    monkeypatch.undo()
    registry.reload_tasks()


def yaml_for(folder: Path, klass: str, stem: str = "bad_task") -> Path:
    text = (EXAMPLE / "sawyer_reach.yaml").read_text().replace("class: sawyer_reach:SawyerReach", f"class: {klass}")
    path = folder / f"{stem}.yaml"
    path.write_text(text)
    return path


def test_a_module_that_fails_to_import_is_named_with_its_error(task_path, capsys):
    """The other tasks still work (with a warning naming the file); asking for the broken one is an
    error of one line naming the file, the key and the import error."""
    (task_path / "exploding.py").write_text("raise RuntimeError('boom at import')\n")
    path = yaml_for(task_path, "exploding:Task")
    with pytest.warns(UserWarning, match="task YAML skipped: .*boom at import"):
        assert main(["tasks", "--json"]) == 0
    assert "sawyer_peg_in_hole" in capsys.readouterr().out
    assert main(["rollout", "--task", "bad_task", "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "unknown task 'bad_task'" in err and f"{path}: key 'class'" in err and "RuntimeError: boom at import" in err


def test_a_plugin_cannot_take_a_package_task_name(task_path, capsys):
    """A class claiming a shipped task's name: refused when passed, not silently run in its place."""
    (task_path / "impostor.py").write_text(
        "from morl_robot.tasks.sawyer_peg_in_hole import SawyerPegInHole\n\n"
        "class Impostor(SawyerPegInHole):\n    pass\n")
    path = yaml_for(task_path, "impostor:Impostor", stem="impostor")
    assert main(["rollout", "--task", "sawyer_peg_in_hole", "--task-config", str(path), "--steps", "1"]) == 2
    assert "is task 'sawyer_peg_in_hole', which the morl_robot package already defines" in capsys.readouterr().err
    assert registry.task_class("sawyer_peg_in_hole").__module__ == "morl_robot.tasks.sawyer_peg_in_hole"


def test_a_missing_folder_on_the_task_path_is_ignored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(registry.TASK_PATH_VAR, os.pathsep.join([str(tmp_path / "nope"), ""]))
    registry.reload_tasks()
    try:
        assert main(["tasks", "--json"]) == 0
        assert "sawyer_peg_in_hole" in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        registry.reload_tasks()
