"""Every `morl-robot` command in README.md and docs/**/*.md parses with the real CLI parser and runs.

The docs convention (CONTRIBUTING.md): commands are written as ``morl-robot ...`` in ```bash
fences, one per line (``\\`` continuations allowed).  Each is parsed through
``morl_robot.cli.build_parser()`` (a deprecated spelling fails: docs use the current vocabulary)
and, unless its fence is directly preceded by ``<!-- doc-test: parse-only (REASON) -->``, run as
a subprocess on a tiny budget: :data:`BUDGETS` appends budget-shrinking options per subcommand
(argparse keeps the last value).  The commands of one page run in page order in one temporary
work folder: ``--out``-style options are moved into it, a relative path that an earlier command of
the page produced is read from it, any other existing relative path is read from the repository.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARSE_ONLY = re.compile(r"^\s*<!--\s*doc-test:\s*parse-only\s*\((?P<reason>[^)]+)\)\s*-->\s*$")
FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
SHELL_LANGS = {"bash", "sh", "shell", "console"}
PROGRAM = "morl-robot"

#: Options appended to a command of each subcommand so it runs on a tiny budget (argparse keeps the
#: last value of an option).  A subcommand used in the docs but missing here fails the test.
BUDGETS: dict[str, list[str]] = {
    "tasks": [],
    "rollout": ["--steps", "20"],
    "train": ["--steps", "100"],
    "deploy": ["--episodes", "1"],
    "safety-test": [],
    "replay": [],
    "export": [],
    "inspect": [],
    "evaluate": ["--episodes", "1"],
    "bench env": ["--steps", "100", "--repeats", "1"],
    "bench record": ["--duration", "2", "--repeats", "1", "--warmup", "20"],
    "bench learner": ["--updates", "1", "--warmup", "0"],
    "bench train": ["--duration", "2", "--warmup", "10", "--envs", "2"],
    "bench graph": ["--duration", "3", "--repeats", "1", "--steps", "100", "--warmup", "10"],
    "bench safety": ["--trips", "5"],
    "bench serve": ["--iterations", "50", "--duration", "2", "--pings", "20"],
    "bench scale-invariance": ["--updates", "10"],
    "bench contact": ["--episodes", "1"],
    # three real-time runs, each cut 1.5 s past its switch (tests/bench/test_preference_live_cli.py: the same cap)
    "bench preference-live": ["--episodes", "1", "--switch-after", "1", "--max-seconds", "2.5"],
    "experiment simple-world": [],
    "experiment sawyer-peg-in-hole": ["--steps", "300"],
    "experiment epic-gridworld": [],
    "experiment dst-exact": ["--c-values", "2", "--processes", "1"],
    "experiment conditioned-report": [],
    "epic": ["--steps", "200", "--n-v", "64", "--n-m", "64", "--bootstrap", "10", "--weight-points", "2"],
    "prism mirror-check": ["--rollouts", "1", "--steps", "10"],
    "prism report": [],
    "prism run": ["--variants", "prism", "--seeds", "0", "--steps-per-cycle", "150", "--refinements", "1",
                  "--initial-episodes", "4", "--policy-episodes", "2", "--epochs", "5", "--min-replay", "100",
                  "--points", "2", "--eval-episodes", "1"],
    "rm inspect": [],
    "demo": ["--steps", "100", "--eval-episodes", "1", "--episodes", "1"],
    "generalization": ["--episodes", "1"],
}
#: Exit codes a command may end with (default 0): a safety test may end INCOMPLETE (3: a threshold
#: not reached) or NOT JUDGED (4: this shared machine too late to judge a check; not a robot FAIL).
OK_CODES: dict[str, set[int]] = {"safety-test": {0, 3, 4}, "replay": {0, 1}}  # replay: 1 = WOULD TRIP
#: Options whose value is something a command writes: always moved into the page's work folder.
OUTPUT_OPTIONS = {"--out", "--png", "--dot", "--save-coverage", "--video"}
#: Subcommands that write next to their input unless given ``--out``: given one in the work folder.
DEFAULT_OUT: dict[str, str] = {"deploy": "_deploy_out", "export": "_exported.onnx"}
#: Subcommands run in this process (``morl_robot.cli.main``): no ROS graph, and no interpreter
#: start-up per command; the others run as ``python -m morl_robot.cli`` on the page's DDS domain.
IN_PROCESS = {"tasks", "inspect", "evaluate", "rm inspect", "export", "experiment conditioned-report", "replay",
              # no graph and no process pool either: a process each cost seconds of imports (torch's _dynamo …)
              "bench scale-invariance", "experiment epic-gridworld", "epic", "generalization", "prism mirror-check",
              "prism report"}
TIMEOUT = 300.0


def budget_for(sub: str, argv: list[str]) -> list[str]:
    """The options appended to ``argv`` (a command of subcommand ``sub``)."""
    if sub == "deploy" and ("hardware" in argv or "--duration" in argv):
        # --episodes is the sim-only lockstep check: a timed session runs for a time (the exit code is all
        # that is judged here; its start-up, and a hardware backend's reset motion, come before the time)
        return ["--duration", "2"]
    if sub == "train":  # a recipe's behaviour cloning (thousands of updates) would be most of a tiny run
        demos = "learner.training.demonstrations"
        tiny = [*BUDGETS[sub], "--set", f"{demos}.pretrain_updates=10", "--set", f"{demos}.critic_warmup_updates=2"]
        # offline from a tiny recording: fewer sequences than a batch, so the cloning alone (--updates 0)
        return tiny + (["--updates", "0"] if "--from-recording" in argv and "--online" not in argv else [])
    return BUDGETS[sub]


@dataclass
class DocCommand:
    page: str  # path relative to the repository
    line: int  # first line of the command
    text: str  # the command as written (continuations joined)
    argv: list[str]  # the arguments after `morl-robot`
    parse_only: str | None  # the marker's reason, or None: run it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages() -> list[Path]:
    pages = [ROOT / "README.md"] if (ROOT / "README.md").is_file() else []
    pages += sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.relative_to(ROOT / "docs").parts)
    return pages


def _program_args(tokens: list[str]) -> list[str] | None:
    """The arguments after the ``morl-robot`` program in a shell command, or None if not one."""
    while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):  # VAR=value prefixes
        tokens = tokens[1:]
    if tokens[:1] == ["$"]:
        tokens = tokens[1:]
    if tokens and (tokens[0] == PROGRAM or tokens[0].endswith(f"/bin/{PROGRAM}")):
        return tokens[1:]
    if tokens[:4] == ["ros2", "run", "morl_robot", PROGRAM]:
        return tokens[4:]
    return None


def collect(path: Path) -> list[DocCommand]:
    """Every ``morl-robot`` command in the shell fences of the Markdown file ``path``."""
    rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[DocCommand] = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group("fence"), m.group("lang").lower()
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = PARSE_ONLY.match(lines[j]) if j >= 0 else None
        body_start = i + 1
        k = body_start
        while k < len(lines) and not lines[k].strip().startswith(fence[0] * len(fence)):
            k += 1
        if lang in SHELL_LANGS:
            n = body_start
            while n < k:
                first, text = n, lines[n].strip()
                while text.endswith("\\") and n + 1 < k:
                    n += 1
                    text = text[:-1].rstrip() + " " + lines[n].strip()
                n += 1
                text = text.removeprefix("$ ")
                try:
                    tokens = shlex.split(text, comments=True)
                except ValueError as exc:
                    tokens = []
                    if PROGRAM in text:
                        out.append(DocCommand(rel, first + 1, text, ["<unparsable: " + str(exc) + ">"], None))
                args = _program_args(tokens) if tokens else None
                if args is not None:
                    out.append(DocCommand(rel, first + 1, text, args, marker.group("reason") if marker else None))
        i = k + 1
    return out


def all_commands() -> list[DocCommand]:
    return [c for page in doc_pages() for c in collect(page)]


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The CLI's parser (built once per process: parsing does not change it)."""
    from morl_robot.cli import build_parser

    return build_parser()


def command_path(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """The subcommand an argv names, e.g. ``train`` or ``bench env`` ('' for none)."""
    path: list[str] = []
    p, rest = parser, list(argv)
    while True:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            return " ".join(path)
        word = next((w for w in rest if not w.startswith("-")), None)
        if word is None or word not in sub.choices:
            return " ".join(path)
        path.append(sub.choices[word].prog.split()[-1])
        p, rest = sub.choices[word], rest[rest.index(word) + 1:]


def parse_problem(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """'' if ``argv`` parses cleanly; else what argparse (or a deprecation warning) said."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code not in (0, None):
                return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {exc.code}"
    said = err.getvalue()
    deprecated = [line for line in said.splitlines() if "deprecated" in line]
    return "; ".join(deprecated)


def _is_pathlike(token: str) -> bool:
    return not token.startswith("-") and ("/" in token or bool(re.search(r"\.(onnx|ya?ml|json|csv|npz|png|md)$", token)))


def rewrite(argv: list[str], work: Path) -> list[str]:
    """``argv`` with output options moved into ``work`` and existing relative paths made absolute
    (a file an earlier command wrote into ``work`` first, then the repository's)."""
    out: list[str] = []
    force_next = False
    for token in argv:
        value, prefix = token, ""
        if token.startswith("--") and "=" in token:
            prefix, value = token.split("=", 1)
            prefix += "="
            if prefix[:-1] in OUTPUT_OPTIONS:
                out.append(prefix + str(_into(work, value)))
                continue
        if force_next:
            out.append(str(_into(work, value)))
            force_next = False
            continue
        if token in OUTPUT_OPTIONS:
            force_next = True
            out.append(token)
            continue
        if _is_pathlike(value) and not os.path.isabs(value):
            if (work / value).exists():
                value = str(work / value)
            elif (ROOT / value).exists():
                value = str(ROOT / value)
        out.append(prefix + value)
    return out


def _into(work: Path, value: str) -> Path:
    return work / value.lstrip("/").replace("..", "_") if os.path.isabs(value) or ".." in value else work / value


COMMANDS = all_commands()


def test_doc_commands_found() -> None:
    """The collector sees the docs' commands (a fence or marker typo would silently skip them)."""
    assert COMMANDS, "no `morl-robot` command found in README.md or docs/"


def test_doc_commands_parse() -> None:
    parser = _parser()
    problems = []
    for cmd in COMMANDS:
        problem = parse_problem(parser, cmd.argv)
        if problem:
            problems.append(f"{cmd.where}: `{cmd.text}`: {problem}")
    assert not problems, "commands in the docs the CLI does not accept as written:\n" + "\n".join(problems)


def test_doc_commands_have_budgets() -> None:
    parser = _parser()
    missing = sorted({f"{c.where}: '{command_path(parser, c.argv)}'" for c in COMMANDS
                      if c.parse_only is None and command_path(parser, c.argv) not in BUDGETS})
    assert not missing, ("commands in the docs whose subcommand has no tiny-budget entry: add one to BUDGETS in "
                         "tests/docs/test_doc_commands.py (options that make it finish in seconds), or mark the "
                         "fence `<!-- doc-test: parse-only (REASON) -->`:\n" + "\n".join(missing))


#: A parse-only reason naming the test that runs the command instead (with checks of what it wrote):
#: ``run by tests/PATH.py::test_name``.  The test must exist and spell out the command's arguments.
RUN_BY = re.compile(r"^run by (?P<path>tests/[\w/.-]+\.py)::(?P<test>\w+)$")


def test_commands_run_by_a_test_are_that_tests_commands() -> None:
    """A fence marked ``parse-only (run by tests/F.py::test_x)`` names a test that exists and
    whose file holds every argument of the command as a string (its output folder aside, and the
    values of the options :func:`budget_for` replaces: the harness would not run those either)."""
    problems = []
    for cmd in COMMANDS:
        m = RUN_BY.match(cmd.parse_only or "")
        if m is None:
            continue
        path = ROOT / m.group("path")
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if f"def {m.group('test')}(" not in text:
            problems.append(f"{cmd.where}: no test {m.group('test')} in {m.group('path')}")
            continue
        # the values the harness would not run as written either: output folders, and the options its
        # tiny budget replaces (e.g. a timed deploy's --duration)
        parser = _parser()
        sub = command_path(parser, cmd.argv)
        budgeted = {t for t in budget_for(sub, cmd.argv) if t.startswith("--")} if sub in BUDGETS else set()
        skip = {i + 1 for i, tok in enumerate(cmd.argv) if tok in OUTPUT_OPTIONS or tok in budgeted}
        missing = [tok for i, tok in enumerate(cmd.argv) if i not in skip and f'"{tok}"' not in text]
        if missing:
            problems.append(f"{cmd.where}: {m.group('path')} does not run `{cmd.text}` (no {missing})")
    assert not problems, "\n".join(problems)


#: effective command (parsed, outputs left out) -> (work folder, argv as written) of its run: a command
#: another page already ran with the same effect is not run again; what it wrote is linked instead.
_DONE: dict[str, tuple[Path, list[str]]] = {}


def _final_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    p, rest = parser, list(argv)
    while True:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        word = next((w for w in rest if not w.startswith("-")), None) if sub else None
        if sub is None or word not in sub.choices:
            return p
        p, rest = sub.choices[word], rest[rest.index(word) + 1:]


def effect_key(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """What a command does, independent of option order and of where it writes (an output option
    other than ``--out``, e.g. ``--video``, counts by its presence: it makes the command do more)."""
    final = _final_parser(parser, argv)
    outputs = {a.dest for a in final._actions if set(a.option_strings) & OUTPUT_OPTIONS}
    out_dests = {a.dest for a in final._actions if "--out" in a.option_strings}
    with contextlib.redirect_stderr(io.StringIO()):
        ns = parser.parse_args(argv)
    return repr(sorted((k, repr(v) if k not in outputs else repr(v is not None and v is not False))
                       for k, v in vars(ns).items() if k not in out_dests and not callable(v)))


def _out_value(argv: list[str]) -> str | None:
    value = None
    for i, token in enumerate(argv):
        if token == "--out" and i + 1 < len(argv):
            value = argv[i + 1]
        elif token.startswith("--out="):
            value = token.split("=", 1)[1]
    return value


def _run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """``morl_robot.cli.main(argv)`` with its output captured and the signal handlers it sets restored."""
    import signal

    from morl_robot.cli import main

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = int(main(argv) or 0)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return rc, out.getvalue(), err.getvalue()


def _outputs(cmd: DocCommand) -> list[str]:
    """The values of ``cmd``'s output options (paths it writes, as written)."""
    out = []
    for i, token in enumerate(cmd.argv):
        if token in OUTPUT_OPTIONS and i + 1 < len(cmd.argv):
            out.append(cmd.argv[i + 1])
        elif token.startswith("--") and token.split("=", 1)[0] in OUTPUT_OPTIONS and "=" in token:
            out.append(token.split("=", 1)[1])
    return out


def _inputs(cmd: DocCommand) -> list[str]:
    """The path-like arguments of ``cmd`` that are not its outputs (what it may read)."""
    outs = _outputs(cmd)
    return [t for t in cmd.argv if _is_pathlike(t) and t not in outs]


def _touches(a: str, b: str) -> bool:
    a, b = a.strip("/").removeprefix("./"), b.strip("/").removeprefix("./")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def page_parts(page: str) -> list[list[DocCommand]]:
    """The runnable commands of ``page`` in page order, split into independent parts: a command is in
    the part of every earlier command whose output it reads or writes again (``runs/peg/policy.onnx``
    after ``--out runs/peg``), or that has its text; a relative path neither in the repository nor
    written by an earlier command ties it to every earlier command (what wrote it is not known)."""
    cmds = [c for c in COMMANDS if c.page == page and c.parse_only is None]
    parent = list(range(len(cmds)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for j, cmd in enumerate(cmds):
        paths = _inputs(cmd) + _outputs(cmd)
        for i in range(j):
            if cmds[i].text == cmd.text or any(_touches(p, o) for p in paths for o in _outputs(cmds[i])):
                parent[root(j)] = root(i)
        unknown = [p for p in _inputs(cmd) if not os.path.isabs(p) and not (ROOT / p).exists()
                   and not any(_touches(p, o) for i in range(j) for o in _outputs(cmds[i]))]
        if unknown:
            for i in range(j):
                parent[root(j)] = root(i)
    parts: dict[int, list[DocCommand]] = {}
    for i, cmd in enumerate(cmds):
        parts.setdefault(root(i), []).append(cmd)
    return list(parts.values())


#: part id (``PAGE``, or ``PAGE#K`` for the K-th part of a page of several) -> its commands
PARTS: dict[str, list[DocCommand]] = {}
for _page in sorted({c.page for c in COMMANDS if c.parse_only is None}):
    _parts = page_parts(_page)
    for _k, _cmds in enumerate(_parts):
        PARTS[_page if len(_parts) == 1 else f"{_page}#{_k}"] = _cmds

#: The parts' runs are split over SHARDS test files (this one and test_doc_commands_shard*.py) so that
#: pytest-xdist's --dist loadfile puts them on different workers.  A part's weight is a rough cost of
#: its commands in seconds on the 2-core CI machine (graph start-ups dominate; scheduling only, no test
#: depends on it): :data:`_COST` per subcommand, else 3 s in process and 25 s as a process.
SHARDS = 4
#: (From a full run's per-page times, 2026-11-27: prism run and bench preference-live are heavy.)
_COST: dict[str, int] = {"train": 75, "demo": 120, "safety-test": 60, "deploy": 30, "bench preference-live": 30,
                         "bench scale-invariance": 45, "experiment dst-exact": 30, "prism run": 120,
                         "generalization": 20, "rollout": 10}


def _key(parser: argparse.ArgumentParser, cmd: DocCommand) -> str:
    """:func:`effect_key` of ``cmd`` on its tiny budget (its text if it has none or does not parse)."""
    sub = command_path(parser, cmd.argv)
    try:
        return effect_key(parser, cmd.argv + budget_for(sub, cmd.argv)) if sub in BUDGETS else cmd.text
    except SystemExit:  # does not parse: test_doc_commands_parse names it
        return cmd.text


def _weight(parts: list[str]) -> int:
    """The cost of running ``parts`` in one shard: a command with the same effect counted once."""
    parser = _parser()
    costs: dict[str, int] = {}
    for part in parts:
        for c in PARTS[part]:
            sub = command_path(parser, c.argv)
            costs[_key(parser, c)] = _COST.get(sub, _COST.get(sub.split(" ")[0], 3 if sub in IN_PROCESS else 25))
    return sum(costs.values())


def _page_groups() -> list[list[str]]:
    """The parts, grouped so that parts running a command with the same effect share a group (and
    so a shard: the second part links what the first wrote instead of running it again)."""
    parser = _parser()
    owner: dict[str, str] = {}  # effect key -> the first part that runs it
    parent = {p: p for p in PARTS}

    def root(p: str) -> str:
        while parent[p] != p:
            p = parent[p]
        return p

    for part, cmds in PARTS.items():
        for c in cmds:
            first = owner.setdefault(_key(parser, c), part)
            parent[root(part)] = root(first)
    groups: dict[str, list[str]] = {}
    for p in PARTS:
        groups.setdefault(root(p), []).append(p)
    return list(groups.values())


def shard(index: int) -> list[str]:
    """The parts shard ``index`` runs: groups of parts (:func:`_page_groups`) greedy by weight onto
    the lightest shard (deterministic)."""
    return _shards()[index]


@functools.lru_cache(maxsize=1)
def _shards() -> list[list[str]]:
    loads = [0] * SHARDS
    parts: list[list[str]] = [[] for _ in range(SHARDS)]
    weight = {tuple(g): _weight(g) for g in _page_groups()}
    for group in sorted(weight, key=lambda g: (-weight[g], g)):
        i = loads.index(min(loads))
        loads[i] += weight[group]
        parts[i].extend(group)
    return [sorted(p) for p in parts]


def test_every_page_is_in_one_shard() -> None:
    shards = [shard(i) for i in range(SHARDS)]
    assert sorted(p for s in shards for p in s) == sorted(PARTS)
    runnable = [c for c in COMMANDS if c.parse_only is None]
    assert sorted((c.page, c.line) for cmds in PARTS.values() for c in cmds) == sorted((c.page, c.line) for c in runnable)
    files = sorted(Path(__file__).parent.glob("test_doc_commands_shard*.py"))
    assert len(files) == SHARDS - 1, files


def test_a_page_splits_where_no_command_reads_what_another_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command reading an earlier one's output (or writing into it) runs after it in one part;
    unrelated commands are parts of their own; an unknown relative path keeps the page together."""
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent("""\
        ```bash
        morl-robot train --task sawyer_peg_in_hole --out runs/peg
        morl-robot safety-test --robot sawyer --out runs/safety
        morl-robot deploy runs/peg/policy.onnx --episodes 2
        morl-robot train --task sawyer_peg_in_hole --steps 600 --out runs/peg
        morl-robot evaluate results/demo/seed0/policy.onnx
        morl-robot evaluate runs/nowhere/policy.onnx
        ```
        """), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "COMMANDS", collect(page))
    parts = [[c.line for c in part] for part in page_parts(collect(page)[0].page)]
    assert parts == [[2, 3, 4, 5, 6, 7]]  # the unknown path (line 7) ties the page together
    monkeypatch.setattr(sys.modules[__name__], "COMMANDS", collect(page)[:-1])
    parts = [[c.line for c in part] for part in page_parts(collect(page)[0].page)]
    assert parts == [[2, 4, 5], [3], [6]]


@pytest.mark.parametrize("page", shard(0))
def test_doc_commands_run(page: str, tmp_path: Path, domain_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each runnable command of a part of a page (``page``), in page order, on a tiny budget; fails
    naming the first command that did not end with an expected exit code."""
    run_page(page, tmp_path, domain_id, monkeypatch)


def run_page(part: str, tmp_path: Path, domain_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body of every shard's test: the commands of ``part`` (a :data:`PARTS` id) in page order
    (commands another part of the same shard ran are linked)."""
    from morl_robot.session.processes import ros_env

    parser = _parser()
    env = ros_env(domain_id)
    env["MORL_DOC_TEST"] = "1"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # in-process commands: relative outputs land in the work folder too
    seen: set[str] = set()
    timings = []
    page = PARTS[part][0].page
    lines = {c.line for c in PARTS[part]}
    for n, cmd in enumerate(c for c in COMMANDS if c.page == page and c.parse_only is None):
        if cmd.line not in lines:
            continue
        if cmd.text in seen:
            continue
        seen.add(cmd.text)
        sub = command_path(parser, cmd.argv)
        if sub not in BUDGETS:
            pytest.fail(f"{cmd.where}: no tiny budget for '{sub}': add it to BUDGETS (or mark the fence parse-only)")
        budget = budget_for(sub, cmd.argv)
        argv = rewrite(cmd.argv, work) + budget
        if sub in DEFAULT_OUT and _out_value(cmd.argv) is None:
            argv += ["--out", str(work / f"{DEFAULT_OUT[sub]}{n}")]
        key = effect_key(parser, argv)
        if key in _DONE and _DONE[key][0] != work:  # another page ran the same: link what it wrote
            prev_work, prev_argv = _DONE[key]
            mine, theirs = _out_value(cmd.argv), _out_value(prev_argv)
            if mine is not None and theirs is not None:
                src, dst = _into(prev_work, theirs), _into(work, mine)
                if src.exists() and not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.symlink_to(src, target_is_directory=src.is_dir())
            continue
        start = time.monotonic()
        if sub in IN_PROCESS:
            rc, stdout, stderr = _run_in_process(argv)
        else:
            # a safety test's probe aborts (exit 5) when a loaded host delays a sensor stream past its
            # watchdog and the monitor e-stops mid-probe: that run measured the host, so it runs once more
            for attempt in (1, 2):
                try:
                    proc = subprocess.run([sys.executable, "-m", "morl_robot.cli", *argv], cwd=work, env=env,
                                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"{cmd.where}: `{cmd.text}` ran past {TIMEOUT:.0f} s on its tiny budget "
                                f"({' '.join(budget)}): shrink BUDGETS['{sub}'] or mark the fence parse-only")
                rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
                if not (sub == "safety-test" and rc == 5 and "probe aborted" in stderr and attempt == 1):
                    break
                print(f"{cmd.where}: safety test probe aborted on a loaded host, run again: {stderr[-300:]}")
        timings.append((time.monotonic() - start, cmd.text))
        if rc not in OK_CODES.get(sub, {0}):
            pytest.fail(f"{cmd.where}: `{cmd.text}` exited {rc} (ran as `morl-robot {shlex.join(argv)}` "
                        f"in {work}):\n--- stderr ---\n{stderr[-4000:]}\n--- stdout ---\n{stdout[-2000:]}")
        _DONE[key] = (work, cmd.argv)
    print(f"{part}: " + ", ".join(f"{t:.1f} s `{text[:60]}`" for t, text in timings))


def test_collector_reads_the_convention(tmp_path: Path) -> None:
    """Continuations, comments, the parse-only marker and non-shell fences, on a page of its own."""
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent("""\
        ```bash
        morl-robot train --task sawyer_peg_in_hole \\
            --out runs/x   # a comment
        ls runs/x
        ```
        <!-- doc-test: parse-only (real robot) -->
        ```bash
        morl-robot deploy results/demo/seed0/policy.onnx --backend hardware
        ```
        ```text
        morl-robot not a command
        ```
        """), encoding="utf-8")
    got = collect(page)
    assert [(c.line, c.argv, c.parse_only) for c in got] == [
        (2, ["train", "--task", "sawyer_peg_in_hole", "--out", "runs/x"], None),
        (8, ["deploy", "results/demo/seed0/policy.onnx", "--backend", "hardware"], "real robot"),
    ]
    assert rewrite(["evaluate", "results/demo/seed0/policy.onnx", "--out", "runs/x"], tmp_path) == [
        "evaluate", str(ROOT / "results/demo/seed0/policy.onnx"), "--out", str(tmp_path / "runs/x")]
    (tmp_path / "runs/x").mkdir(parents=True)
    (tmp_path / "runs/x/policy.onnx").touch()
    assert rewrite(["inspect", "runs/x/policy.onnx"], tmp_path) == ["inspect", str(tmp_path / "runs/x/policy.onnx")]
