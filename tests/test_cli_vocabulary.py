"""One CLI vocabulary (issue 34), through the real parser and entry points: every option has help and
shows its default, every old spelling warns once and lands on the new one's value, ``--set`` reaches
the YAML loads, ``--version``, bare ``morl-robot`` prints help, the exit-code table.

Before this work 44 of 304 options had no help text and 32 did not show their default; the first
test pins both at 0."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from morl_robot.cli import build_parser, main, parse
from morl_robot.cli.options import HelpFormatter, shows_default, sub_parsers

SCRIPT = Path(sys.executable).parent / "morl-robot"


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "morl_robot.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300,
                          env={**os.environ}, check=False)


def _options() -> list[tuple[str, argparse.Action]]:
    """Every visible option and positional of every (sub)command."""
    out = []
    for prog, parser in sub_parsers(build_parser()):
        for a in parser._actions:
            if isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            if a.help != argparse.SUPPRESS:
                out.append((prog, a))
    return out


def test_every_option_has_help_and_shows_its_default():
    options = _options()
    assert len(options) > 300
    no_help = [f"{prog} {a.option_strings or a.dest}" for prog, a in options if not a.help]
    assert no_help == []
    hidden_default = []
    for prog, a in options:
        text = HelpFormatter(prog)._get_help_string(a)
        if a.option_strings and not shows_default(a) and "default" not in text.lower():
            hidden_default.append(f"{prog} {a.option_strings}")
    assert hidden_default == []


def test_options_sit_in_argument_groups():
    for prog, parser in sub_parsers(build_parser()):
        loose = [a.option_strings for a in parser._optionals._group_actions
                 if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))
                 and a.help != argparse.SUPPRESS]
        assert loose == [], prog
    text = _cli("train", "--help").stdout
    for group in ("inputs:", "budget:", "outputs:", "ROS graph:"):
        assert group in text
    assert "(default: the task's recipe" in text


# (command, arguments every parse needs, old spelling, new spelling)
DEPRECATED = [
    (["train"], [], ["--learner-config", "demo"], ["--learner", "demo"]),
    (["train"], [], ["--session-config", "demo"], ["--session", "demo"]),
    (["train"], [], ["--config", "demo"], ["--session", "demo"]),
    (["demo"], [], ["--learner-config", "demo"], ["--learner", "demo"]),
    (["demo"], [], ["--session-config", "demo"], ["--session", "demo"]),
    (["deploy"], [], ["--policy", "p.onnx"], ["p.onnx"]),
    (["deploy"], ["p.onnx"], ["--config", "deploy"], ["--session", "deploy"]),
    (["safety-test"], ["--robot", "sawyer", "--out", "o"], ["--config", "x"], ["--session", "x"]),
    (["safety-test"], ["--robot", "sawyer", "--out", "o"], ["--ramp-speeds", "0.1"], ["--approach-speeds", "0.1"]),
    (["rollout"], ["--task", "sawyer_peg_in_hole"], ["--policy", "zero"], ["zero"]),
    (["rollout"], ["--task", "sawyer_peg_in_hole"], ["--config", "t.yaml"], ["--task-config", "t.yaml"]),
    (["experiment", "sawyer-front"], ["--out", "o"], ["--eps-task", "0.2"], ["--epsilon", "task=0.2"]),
    (["experiment", "sawyer-front"], ["--out", "o"], ["--eps-force", "0.01", "0.1"],
     ["--epsilon", "wrist_force=0.01,0.1"]),
    (["experiment", "sawyer-front"], ["--out", "o"], ["--config", "x"], ["--learner", "x"]),
    (["experiment", "sawyer-front"], ["--out", "o"], ["--parallel", "3"], ["--processes", "3"]),
    (["experiment", "sawyer-front"], ["--out", "o"], ["--conditioned"], ["--method", "conditioned"]),
    (["experiment", "shadow-front"], ["--task", "shadow_touch", "--out", "o"], ["--eps-task", "0.2"],
     ["--epsilon", "task=0.2"]),
    (["experiment", "shadow-front"], ["--task", "shadow_touch", "--out", "o"], ["--eps-pain", "0.01", "0.1"],
     ["--epsilon", "pain=0.01,0.1"]),
    (["experiment", "shadow-front"], ["--task", "shadow_touch", "--out", "o"], ["--config", "x"], ["--learner", "x"]),
    (["experiment", "shadow-front"], ["--task", "shadow_touch", "--out", "o"], ["--parallel", "2"],
     ["--processes", "2"]),
    (["experiment", "sawyer-peg-in-hole"], ["--out", "o"], ["--config", "x"], ["--learner", "x"]),
    (["experiment", "sawyer-peg-in-hole"], ["--out", "o"], ["--epsilons", "0.1", "0.02"],
     ["--epsilon", "task=0.1", "--epsilon", "wrist_force=0.02"]),
    (["experiment", "deep-sea-treasure"], ["--out", "o"], ["--epsilon-time", "0.01", "0.05"],
     ["--epsilon", "time=0.01,0.05"]),
    (["experiment", "dst-exact"], ["--out", "o"], ["--eps-time", "0.01", "0.05"], ["--epsilon", "time=0.01,0.05"]),
    (["experiment", "dst-diagnose"], ["--out", "o", "--c", "1"], ["--eps-time", "0.03"], ["--epsilon", "time=0.03"]),
    (["experiment", "sawyer-rm"], ["--out", "o"], ["--config", "x"], ["--learner", "x"]),
    (["experiment", "conditioned"], ["--env", "e", "--steps", "1", "--out", "o"], ["--config", "x"], ["--learner", "x"]),
    (["bench", "contact"], [], ["--policy", "a.onnx", "--policy", "b.onnx"], ["a.onnx", "b.onnx"]),
    (["bench", "preference-live"], ["--out", "o"], ["--policy", "a.onnx"], ["a.onnx"]),
    (["bench", "soak"], [], ["--policy", "a.onnx"], ["a.onnx"]),
    (["bench", "train"], [], ["--learner-config", "x"], ["--learner", "x"]),
]


@pytest.mark.parametrize("command, base, old, new", DEPRECATED, ids=[" ".join(c + o[:1]) for c, _, o, _ in DEPRECATED])
def test_an_old_spelling_warns_once_and_lands_on_the_new_value(command, base, old, new, capsys):
    want = vars(parse(command + base + new))
    assert capsys.readouterr().err == ""
    got = vars(parse(command + base + old))
    err = capsys.readouterr().err.strip().splitlines()
    assert got == want
    uses = old.count(old[0])
    assert len(err) == uses and all(line.startswith(f"morl-robot {' '.join(command)}: {old[0]} is deprecated; use ")
                                    for line in err), err


def test_every_hidden_spelling_is_in_the_table():
    """A deprecated spelling added later must be listed above (and so in the docs' table)."""
    listed = {(" ".join(c), o[0]) for c, _, o, _ in DEPRECATED}
    hidden = set()
    for prog, parser in sub_parsers(build_parser()):
        for a in parser._actions:
            if a.help == argparse.SUPPRESS and a.option_strings:
                hidden.update((prog.removeprefix("morl-robot "), s) for s in a.option_strings)
    assert hidden == listed


def test_set_changes_a_loaded_value_end_to_end(capsys):
    """rollout with zero actions: one 8 s episode (160 steps) by default; --set task.episode_duration=0.5
    makes 10-step episodes, so 40 steps end 4 of them."""
    assert main(["rollout", "zero", "--task", "sawyer_peg_in_hole", "--steps", "40"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 0
    assert main(["rollout", "zero", "--task", "sawyer_peg_in_hole", "--steps", "40",
                 "--set", "task.episode_duration=0.5"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["episodes"] == 4 and summary["terminations"] == {"time_limit": 4}
    assert "MORL_ROBOT_SET" not in os.environ  # the overrides end with the command


@pytest.mark.parametrize("item, words", [
    ("task.no_such_key=1", ["sawyer_peg_in_hole.yaml", "key 'no_such_key': unknown key", "--set task.no_such_key"]),
    ("learner.replay.batch_size=8", ["reads no 'learner' YAML", "task, robot"]),
    ("nonsense.x=1", ["unknown KIND 'nonsense'"]),
    ("task.episode_duration", ["expected KIND.key[.sub]=VALUE"]),
    ("task.episode_duration=[unclosed", ["the value is not YAML"]),
])
def test_a_bad_set_is_rc_2_naming_it(item, words, capsys):
    assert main(["rollout", "zero", "--task", "sawyer_peg_in_hole", "--steps", "5", "--set", item]) == 2
    err = capsys.readouterr().err
    assert err.startswith("morl-robot rollout: error: ") and len(err.strip().splitlines()) == 1
    for w in words:
        assert w in err


def test_train_checks_a_set_learner_key_before_any_node_starts(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "--task", "sawyer_peg_in_hole", "--out", str(out), "--set", "learner.replay.no_such_key=1"])
    err = capsys.readouterr().err
    assert rc == 2 and "demo_demos.yaml" in err and "replay.no_such_key" in err
    assert not out.exists() or not any(out.iterdir())


def test_train_and_demo_default_to_the_task_recipe(tmp_path, monkeypatch):
    from morl_robot.cli import demo, train
    from morl_robot.tasks.recipes import default_recipe

    recipe = default_recipe("sawyer_peg_in_hole")
    seen = {}

    def fake_run_locked(args, cfg, out):
        seen["learner"], seen["task"] = cfg.learner_node.config, cfg.task
        return 0

    monkeypatch.setattr(train, "_run_locked", fake_run_locked)
    assert main(["train", "--task", "sawyer_peg_in_hole", "--out", str(tmp_path / "r")]) == 0
    assert seen == {"learner": recipe.learner, "task": "sawyer_peg_in_hole"}
    calls = []
    monkeypatch.setattr(demo, "_sub_command", lambda argv: calls.append(argv) or 1)
    assert main(["demo", "--out", str(tmp_path / "d")]) == 1
    argv = calls[0]
    assert argv[argv.index("--learner") + 1] == recipe.learner and argv[argv.index("--session") + 1] == recipe.session


def test_version_and_bare_commands_print_help():
    from importlib.metadata import version

    proc = _cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"morl-robot {version('morl_robot')}"
    bare = _cli()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: morl-robot") and "train" in bare.stdout
    assert bare.stderr == ""
    for group in ("bench", "experiment", "rm"):
        proc = _cli(group)
        assert proc.returncode == 0 and proc.stdout.startswith(f"usage: morl-robot {group}"), proc.stderr
    assert "toy" not in _cli("experiment", "--help").stdout


def test_a_missing_policy_is_rc_2(capsys):
    assert main(["deploy", "--episodes", "1"]) == 2
    assert "a POLICY is required" in capsys.readouterr().err


def test_exit_code_table():
    from morl_robot.cli.exit_codes import EXIT_CODES, codes_for

    assert set(EXIT_CODES["*"]) == {0, 1, 2, 130}
    safety = codes_for("safety-test")
    assert {0, 1, 2, 3, 130} <= set(safety) and "INCOMPLETE" in safety[3]
    commands = {prog.removeprefix("morl-robot ") for prog, _ in sub_parsers(build_parser())}
    assert set(EXIT_CODES) - {"*"} <= commands


def test_the_console_script_builds_benchmarks_lazily():
    """`morl-robot` (build_parser(lazy=True)) imports no benchmark module, hence no torch, until a
    benchmark's parser is used; a lazily built benchmark parses and helps as the eager one does."""
    code = ("import sys; from morl_robot.cli import build_parser; "
            "a = build_parser(lazy=True).parse_args(['rollout', '--task', 'sawyer_peg_in_hole']); "
            "print(sorted(m for m in ('torch', 'morl_robot.bench.learner') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
    lazy, eager = build_parser(lazy=True), build_parser()
    argv = ["bench", "train", "--learner", "x", "--set", "learner.replay.samples_per_insert=8"]
    assert vars(lazy.parse_args(argv)) == vars(eager.parse_args(argv))
    assert _cli("bench", "train", "--help").stdout == "".join(
        dict(sub_parsers(eager))["morl-robot bench train"].format_help())


@pytest.mark.parametrize("argv, words", [
    (["experiment", "sawyer-front", "--epsilon", "force=0.1"], "unknown objective 'force'; one of task, wrist_force"),
    (["experiment", "sawyer-front", "--epsilon", "task=0.1,0.2"], "ε_task is fixed, one value"),
    (["experiment", "sawyer-peg-in-hole", "--epsilon", "task=0.1"], "both task and wrist_force, or neither"),
    (["experiment", "dst-diagnose", "--c", "1", "--epsilon", "time=0.1,0.2"], "takes one value"),
])
def test_a_bad_epsilon_is_rc_2_naming_it(tmp_path, capsys, argv, words):
    assert main(argv + ["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(SystemExit) as exc:  # not OBJECTIVE=VALUE: argparse's usage error, also rc 2
        parse(["experiment", "sawyer-front", "--out", str(tmp_path), "--epsilon", "0.1"])
    assert exc.value.code == 2 and "expected OBJECTIVE=VALUE[,VALUE...]" in capsys.readouterr().err
