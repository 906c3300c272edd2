"""The CLI reference from ``morl_robot.cli.build_parser()``: every (sub)command, its usage,
option groups, help and default."""
from __future__ import annotations

import argparse
import os

from . import md


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _default(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if action.help and "default" in _expanded(action, formatter).lower():
        return ""  # the help text states it
    if action.required:
        return "required"
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return md.value(bool(action.default))
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
        return ""
    d = action.default
    if d is None or d is argparse.SUPPRESS:
        return "—"
    if isinstance(d, os.PathLike):
        d = os.fspath(d)
    if isinstance(d, (list, tuple)) and not d:
        return "—"
    return md.value(d if isinstance(d, (str, int, float, bool, list, tuple)) else str(d))


def _names(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if not action.option_strings:
        return md.code(formatter._metavar_formatter(action, action.dest)(1)[0])
    if action.nargs == 0:
        return ", ".join(md.code(s) for s in action.option_strings)
    arg = formatter._format_args(action, action.dest.upper())
    return ", ".join(md.code(f"{s} {arg}") for s in action.option_strings)


def _expanded(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """The help text as ``--help`` prints it (the parser's formatter may append the default)."""
    try:
        return formatter._expand_help(action)
    except (KeyError, TypeError, ValueError):
        return action.help or ""


def _help(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if not action.help:
        return ""
    help_text = _expanded(action, formatter)
    out = md.text(help_text)
    if (action.choices is not None and action.metavar is not None
            and not isinstance(action, argparse._SubParsersAction)):
        shown = ", ".join(md.code(c) for c in action.choices)
        if shown and "choices" not in help_text:
            out += f" (one of {shown})"
    return out


def _row(action: argparse.Action, formatter: argparse.HelpFormatter) -> tuple[str, str]:
    """(option, meaning): the help as ``--help`` prints it, plus the default where it does not say it."""
    meaning, default = _help(action, formatter), _default(action, formatter)
    if action.required:
        meaning = f"{meaning} (required)"
    elif default and default != "—" and action.nargs != 0:  # a flag's default is being off
        meaning = f"{meaning} (default {default})" if meaning else f"default {default}"
    return _names(action, formatter), meaning


def _command_section(parser: argparse.ArgumentParser, path: list[str], level: int, out: list[str]) -> None:
    title = " ".join(path)
    out.append(f"{'#' * level} `{title}`\n")
    if parser.description:
        out.append(md.text(parser.description) + "\n")
    out.append(md.fence(parser.format_usage().replace("usage: ", "", 1)))
    formatter = parser._get_formatter()
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if a.help is not argparse.SUPPRESS
                   and not isinstance(a, (argparse._SubParsersAction, argparse._HelpAction))]
        if not actions:
            continue
        title_g = group.title or "options"
        heading = md.text(title_g[:1].upper() + title_g[1:])
        out.append(f"**{heading}**" + (f": {md.text(group.description)}" if group.description else "") + "\n")
        out.append(md.table(("option", "meaning"), [_row(a, formatter) for a in actions]))
    sub = _subparsers(parser)
    if sub is not None:
        out.append(_command_table(sub, path))
        for name, child in sub.choices.items():
            if child.prog.split()[-1] != name:  # an alias of a command listed under its own name
                continue
            _command_section(child, path + [name], min(level + 1, 4), out)


def _command_table(sub: argparse._SubParsersAction, path: list[str]) -> str:
    helps = {a.dest: a.help for a in sub._choices_actions}
    rows = []
    for name, child in sub.choices.items():
        if child.prog.split()[-1] != name:
            continue
        rows.append((md.code(" ".join(path + [name])), md.text(helps.get(name) or child.description or "")))
    return md.table(("command", "what it does"), rows)


def render() -> str:
    """The whole CLI reference (Markdown)."""
    from morl_robot.cli import build_parser

    parser = build_parser()
    out: list[str] = []
    formatter = parser._get_formatter()
    if parser.description:
        out.append(md.text(parser.description) + "\n")
    out.append(md.fence(parser.format_usage().replace("usage: ", "", 1)))
    top = [a for a in parser._actions if a.help is not argparse.SUPPRESS
           and not isinstance(a, argparse._SubParsersAction)]
    out.append(md.table(("option", "meaning"), [_row(a, formatter) for a in top]))
    sub = _subparsers(parser)
    if sub is not None:
        out.append("## Commands\n")
        out.append(_command_table(sub, ["morl-robot"]))
        for name, child in sub.choices.items():
            if child.prog.split()[-1] != name:
                continue
            _command_section(child, ["morl-robot", name], 2, out)
    return "\n".join(out)
