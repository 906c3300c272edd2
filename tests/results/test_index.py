"""results/README.md and docs/results/ are generated from each folder's RESULT.yaml and up to date;
every command they give parses through the real CLI parser."""
import shlex
from pathlib import Path

import pytest

from morl_robot.cli import build_parser
from morl_robot.evaluation.results_index import (
    RESULTS,
    folders_without_metadata,
    load_results,
    main,
    stale_files,
)

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [(r.folder, kind, c) for r in load_results() for kind in ("recheck", "regenerate")
            for c in getattr(r, kind)]


def test_the_generated_index_and_pages_are_up_to_date():
    stale = [p.relative_to(ROOT).as_posix() for p in stale_files()]
    assert stale == [], "run `python -m morl_robot.evaluation.results_index`"
    assert main(["--check"]) == 0


def test_every_results_folder_has_its_metadata():
    assert folders_without_metadata() == []
    results = load_results()
    assert {r.status for r in results} == {"current", "superseded"}
    for r in results:
        assert (RESULTS / r.folder).is_dir()
        if r.status == "superseded":  # what supersedes it exists and is current
            assert r.folder.startswith("archive/")
            target = r.superseded_by.removeprefix("results/")
            assert any(o.folder == target and o.status == "current" for o in results), r.folder


@pytest.mark.parametrize("folder,kind,command", COMMANDS, ids=[f"{f}-{k}-{i}" for i, (f, k, _) in enumerate(COMMANDS)])
def test_every_command_parses_through_the_real_cli(folder, kind, command):
    argv = shlex.split(command)
    assert argv[0] == "morl-robot"
    args = build_parser().parse_args(argv[1:])
    assert callable(args.func)
    for word in argv[1:]:  # the committed files a command reads exist
        path = word.split("@")[0]
        if path.startswith("results/") and "--out" not in command.split(word)[0].split()[-1:]:
            assert (ROOT / path).exists(), f"{folder}: {kind}: {path} does not exist"


def test_a_recheck_does_not_train():
    for r in load_results():
        for c in r.recheck:
            sub = shlex.split(c)[1]
            assert sub in ("evaluate", "experiment", "epic", "bench") or shlex.split(c)[1:3] in (
                ["prism", "mirror-check"], ["prism", "report"]), c
            assert not c.startswith(("morl-robot train", "morl-robot demo")), c


def test_a_result_yaml_that_says_something_impossible_is_named(tmp_path):
    from morl_robot.evaluation.results_index import ResultsIndexError

    good = {"title": "t", "claim": "c", "status": "current", "recheck": "morl-robot evaluate x", "regenerate":
            ["morl-robot demo"], "run_time": "1 s"}
    cases = [({k: v for k, v in good.items() if k != "claim"}, "x/RESULT.yaml: missing claim"),
             ({**good, "status": "superseded", "superseded_by": "results/y"}, "must live under results/archive/"),
             ({**good, "recheck": "evaluate x"}, "'recheck' must be one or more `morl-robot ...` commands"),
             ({**good, "colour": "red"}, "unknown field(s) colour")]
    import yaml

    for data, message in cases:
        (tmp_path / "x").mkdir(exist_ok=True)
        (tmp_path / "x" / "RESULT.yaml").write_text(yaml.safe_dump(data))
        with pytest.raises(ResultsIndexError, match=message.replace("(", r"\(").replace(")", r"\)").replace("`", ".")):
            load_results(tmp_path)
