"""A re-check command that re-summarises committed runs gives the committed figures (on a copy)."""
import json
import shlex
import shutil

from morl_robot.cli import main
from morl_robot.evaluation.results_index import RESULTS, load_results

BOOKKEEPING = {"provenance", "wall_time_s", "total_wall_time_s", "processes", "kept_from_earlier_sittings",
               "time_limit_s"}


def figures(value):
    """A results.json without this sitting's bookkeeping (wall times, process count, provenance)."""
    if isinstance(value, dict):
        return {k: figures(v) for k, v in value.items() if k not in BOOKKEEPING}
    if isinstance(value, list):
        return [figures(v) for v in value]
    return value


def test_the_learned_deep_sea_treasure_recheck_reproduces_the_committed_sweep(tmp_path, capsys):
    (result,) = [r for r in load_results() if r.folder == "deep_sea_treasure_learned"]
    (command,) = result.recheck
    argv = shlex.split(command)[1:]
    committed = RESULTS.parent / argv[argv.index("--out") + 1]
    copy = tmp_path / "sweep"
    shutil.copytree(committed, copy)
    argv[argv.index("--out") + 1] = str(copy)
    assert main([*argv, "--no-progress"]) == 0
    assert "10 Pareto points" in capsys.readouterr().out
    got = json.loads((copy / "results.json").read_text())
    assert figures(got) == figures(json.loads((committed / "results.json").read_text()))
    assert got["provenance"]["command"].startswith("morl-robot experiment deep-sea-treasure --out ")


def test_the_button_world_recheck_reproduces_a_committed_pair(tmp_path, capsys):
    """--finished-only trains nothing: it re-summarises the committed runs (one pair here, on a copy)."""
    (result,) = [r for r in load_results() if r.folder == "button_world"]
    (command,) = result.recheck
    argv = shlex.split(command)[1:]
    committed = RESULTS.parent / argv[argv.index("--out") + 1]
    copy = tmp_path / "button_world"
    shutil.copytree(committed, copy)
    argv[argv.index("--out") + 1] = str(copy)
    assert main([*argv, "--pairs", "term-term", "--no-progress"]) == 0
    capsys.readouterr()
    got = json.loads((copy / "results.json").read_text())["pairs"]
    assert got == {"term-term": json.loads((committed / "results.json").read_text())["pairs"]["term-term"]}
