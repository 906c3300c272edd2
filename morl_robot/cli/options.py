"""One CLI vocabulary: shared option helpers for every ``morl-robot`` subcommand.

* :func:`deprecated` — an old spelling that still works and prints one warning line
  (``morl-robot train: --learner-config is deprecated; use --learner``).
* :func:`add_policy` — the policy as positional ``POLICY`` (``--policy`` a deprecated alias).
* :func:`add_set` / :func:`set_overrides` — ``--set KIND.key.sub=value`` into the YAML loads.
* :func:`add_epsilon` / :func:`epsilons` — ``--epsilon OBJECTIVE=VALUE[,VALUE...]``.
* :class:`HelpFormatter` and :func:`finish_parser` — every option shows its default, options in
  argument groups.

The vocabulary itself is documented in ``docs/reference/cli.md`` (generated from these parsers).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from morl_robot.errors import UsageError

#: Config kinds ``--set`` can address (the folders under ``config/``).
SET_KINDS: tuple[str, ...] = ("task", "learner", "session", "robot", "safety")

#: Attribute names the helpers keep in the namespace (not options).
_LATE = "_late_defaults"
_REQUIRED = "_required_late"


# --- help: defaults shown, groups ----------------------------------------------------------------

def _format_default(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value) if value else "none"
    return str(value)


def shows_default(action: argparse.Action) -> bool:
    """Whether ``action``'s help already states its default (or it needs none: a flag, required,
    help, version, a sub-command)."""
    if action.help in (None, argparse.SUPPRESS):
        return False
    if action.required or action.nargs == 0 or isinstance(action, argparse._SubParsersAction):
        return True
    return "default" in action.help.lower()


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Appends ``(default: X)`` to an option's help unless the help already names its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if text == argparse.SUPPRESS or shows_default(action):
            return text
        default = action.default
        if default is argparse.SUPPRESS or default is None:
            return text
        shown = _format_default(default).replace("%", "%%")
        return f"{text} (default: {shown})"


#: The argument groups options are sorted into (dest → group); anything else is "advanced".
GROUPS: dict[str, tuple[str, ...]] = {
    "inputs": ("task", "task_config", "learner", "session", "robot", "backend", "reward_machine", "model",
               "env", "set", "epsilon", "method", "compare", "coverage", "rewards", "objectives", "action_mode",
               "preference", "contact_control", "algorithms", "weights_pain", "scalarized_epsilon", "against",
               "gain", "emulate", "crm_updates", "no_crm", "pairs", "attach", "via", "before", "after", "safety", "rule"),
    "budget": ("steps", "episodes", "eval_episodes", "seed", "seeds", "eval_seed", "duration", "processes",
               "actors", "actors_kind", "envs", "time_limit", "quick", "precise", "repeats", "minutes", "trips",
               "updates", "iterations", "pings", "warmup", "points", "eval_every", "bootstrap", "n_v", "n_m",
               "coverage_steps", "max_seconds", "timeout", "stall_timeout", "resume", "converge",
               "weight_points", "sweep_settings", "switch_after", "gap"),
    "outputs": ("out", "json", "no_progress", "dot", "png", "save_coverage", "force", "list", "record",
                "foxglove"),
    "ROS graph": ("namespace", "domain_id", "discovery", "use_sim_time", "role", "first_actor", "timing"),
}


def _group_of(action: argparse.Action) -> str:
    for group, dests in GROUPS.items():
        if action.dest in dests:
            return group
    return "advanced"


def group_options(parser: argparse.ArgumentParser) -> None:
    """Move the options a parser keeps in its default "options" group into the groups of
    :data:`GROUPS` (inputs / budget / outputs / ROS graph / advanced); explicit groups stay."""
    default = parser._optionals
    moved = [a for a in default._group_actions if a.option_strings and a.dest != "help"
             and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]
    if not moved:
        return
    groups: dict[str, Any] = {}
    for name in (*GROUPS, "advanced"):
        if any(_group_of(a) == name for a in moved):
            groups[name] = parser.add_argument_group(name)
    for action in moved:
        default._group_actions.remove(action)
        groups[_group_of(action)]._group_actions.append(action)


def sub_parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser under ``parser`` (itself first), with its ``prog``."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for child in action.choices.values():
                if id(child) not in seen:
                    seen.add(id(child))
                    yield from sub_parsers(child)


def _print_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        parser.print_help()
        return 0
    return run


def finish_parser(parser: argparse.ArgumentParser) -> None:
    """Applied once to the whole tree: the help formatter, argument groups, and a command group
    (``bench``, ``experiment``, ``rm``, the top level) called without its sub-command prints its
    help and exits 0 (the ros2 convention)."""
    for _, p in sub_parsers(parser):
        p.formatter_class = HelpFormatter
        group_options(p)
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                action.required = False
                p.set_defaults(func=_print_help(p))


# --- deprecated spellings ------------------------------------------------------------------------

def _find(parser: argparse.ArgumentParser, new: str) -> argparse.Action:
    if new in parser._option_string_actions:
        return parser._option_string_actions[new]
    for action in parser._actions:
        if not action.option_strings and (action.dest == new or action.metavar == new):
            return action
    raise KeyError(f"{parser.prog}: no option {new}")


def warn_deprecated(prog: str, old: str, new: str) -> None:
    print(f"{prog}: {old} is deprecated; use {new}", file=sys.stderr)


def deprecated(parser: argparse.ArgumentParser, old: str, new: str, *,
               convert: Callable[[Any], Any] | None = None, append: bool = False, nargs: Any = "keep",
               type: Any = "keep", metavar: Any = None, hint: Callable[[Any], str] | None = None) -> None:
    """Add ``old`` as a hidden deprecated spelling of the option ``new`` (or positional, by its
    dest): it warns once per use on stderr and stores what ``new`` would (through ``convert``
    first; ``append``: onto the list ``new`` collects).  ``hint(value)``: the new spelling of the
    value given, shown in the warning (e.g. ``--epsilon wrist_force=0.01``)."""
    target = _find(parser, new)
    shown = new if new.startswith("-") else (target.metavar or target.dest).upper()

    class Alias(argparse.Action):
        replacement = shown  # the new spelling (deprecated_spellings)

        def __call__(self, p: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            value = convert(values) if convert is not None else values
            warn_deprecated(p.prog, option_string or old, hint(value) if hint is not None else shown)
            if append:
                items = list(getattr(namespace, target.dest, None) or [])
                items.extend(value if isinstance(value, list) else [value])
                setattr(namespace, target.dest, items)
            elif isinstance(target, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                     argparse._StoreConstAction)):
                setattr(namespace, target.dest, target.const)
            else:
                setattr(namespace, target.dest, value)

    parser.add_argument(
        old, dest=target.dest, action=Alias, help=argparse.SUPPRESS, default=argparse.SUPPRESS,
        nargs=target.nargs if nargs == "keep" else nargs,
        type=target.type if type == "keep" else type,
        choices=None if convert is not None else target.choices, metavar=metavar)


def deprecated_spellings(parser: argparse.ArgumentParser) -> list[tuple[str, str, str]]:
    """Every deprecated spelling under ``parser``: ``(command, old, new)``, e.g.
    ``("morl-robot train", "--learner-config", "--learner")`` (for the docs' vocabulary table)."""
    rows = []
    for prog, p in sub_parsers(parser):
        for action in p._actions:
            new = getattr(action, "replacement", None)
            if new is not None:
                rows.extend((prog, old, new) for old in action.option_strings)
    return rows


# --- late defaults (a positional that may also come from a deprecated option) -------------------

def late_default(parser: argparse.ArgumentParser, dest: str, default: Any, *, required: str | None = None) -> None:
    """``dest`` is filled with ``default`` after parsing if no spelling set it (``required``:
    a message instead, rc 2)."""
    late = dict(parser.get_default(_LATE) or {})
    late[dest] = (default, required)
    parser.set_defaults(**{_LATE: late})


def apply_late_defaults(args: argparse.Namespace) -> None:
    for dest, (default, required) in (getattr(args, _LATE, None) or {}).items():
        if not hasattr(args, dest):
            if required:
                raise UsageError(required)
            setattr(args, dest, default)


def add_policy(parser: argparse.ArgumentParser | Any, help: str, *, default: Any = None,
               required: bool = False, many: bool = False, owner: argparse.ArgumentParser | None = None) -> None:
    """The policy as positional ``POLICY`` (``many``: any number, ``POLICY...``), with ``--policy``
    as its deprecated spelling.  ``parser`` may be an argument group of ``owner``."""
    owner = owner or parser
    shown = "" if required or default is None else f" (default: {_format_default(default)})"
    parser.add_argument("policy", metavar="POLICY", nargs="*" if many else "?", default=argparse.SUPPRESS,
                        help=help + shown)
    deprecated(owner, "--policy", "policy", append=many, nargs=None, metavar="POLICY")
    prog = owner.prog
    late_default(owner, "policy", [] if many else default,
                 required=f"a POLICY is required (e.g. `{prog} results/demo/seed0/policy.onnx`)"
                 if required else None)


# --- --set KIND.key.sub=value --------------------------------------------------------------------

def add_set(parser: argparse.ArgumentParser | Any, kinds: Sequence[str],
            owner: argparse.ArgumentParser | None = None) -> None:
    """``--set KIND.key.sub=value`` (repeatable) for the config kinds this command reads."""
    assert kinds and kinds[0] in _EXAMPLE and set(kinds) <= set(SET_KINDS), kinds
    parser.add_argument(
        "--set", action="append", default=[], metavar="KIND.KEY=VALUE",
        help=f"override one value of a YAML this command reads (repeatable); KIND: {', '.join(kinds)}; "
             "VALUE is read as YAML (a number, true/false, a list [a, b]), e.g. "
             f"--set {_EXAMPLE[kinds[0]]} (default: none)")
    (owner or parser).set_defaults(_set_kinds=tuple(kinds))


_EXAMPLE = {"learner": "learner.replay.samples_per_insert=8", "session": "session.total_steps=2000",
            "task": "task.episode_duration=4.0", "robot": "robot.default_control_mode=velocity",
            "safety": "safety.command.slow_scale.value=0.4"}


def parse_sets(items: Sequence[str], kinds: Sequence[str], prog: str = "morl-robot") -> dict[str, dict[str, Any]]:
    """``["learner.replay.batch_size=64", …]`` → ``{"learner": {"replay": {"batch_size": 64}}}``;
    errors (rc 2) name the item."""
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        path, eq, text = item.partition("=")
        keys = [k.strip() for k in path.split(".")]
        if not eq or len(keys) < 2 or not all(keys):
            raise UsageError(f"--set {item!r}: expected KIND.key[.sub]=VALUE, e.g. --set session.total_steps=2000")
        if keys[0] not in kinds:
            raise UsageError(f"--set {item!r}: {prog} reads no '{keys[0]}' YAML; KIND is one of {', '.join(kinds)}"
                             if keys[0] in SET_KINDS else
                             f"--set {item!r}: unknown KIND '{keys[0]}'; one of {', '.join(kinds)}")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise UsageError(f"--set {item!r}: the value is not YAML ({problem}); quote a string "
                             "that looks like YAML") from None
        node = out.setdefault(keys[0], {})
        for key in keys[1:-1]:
            nxt = node.setdefault(key, {})
            if not isinstance(nxt, dict):
                raise UsageError(f"--set {item!r}: '{key}' was already set to a value")
            node = nxt
        node[keys[-1]] = value
    return out


@contextlib.contextmanager
def set_overrides(args: argparse.Namespace) -> Iterator[dict[str, dict[str, Any]]]:
    """While the command runs, every YAML of a ``--set`` kind it loads (in this process and in the
    node processes it starts) gets the overrides (:func:`morl_robot.configuration.config_overrides`)."""
    items = getattr(args, "set", None) or []
    if not items:
        yield {}
        return
    prog = f"morl-robot {getattr(args, 'command', '')}".strip()
    by_kind = parse_sets(items, getattr(args, "_set_kinds", ()), prog)
    from morl_robot.configuration import config_overrides

    with config_overrides(by_kind):
        yield by_kind


# --- --epsilon OBJECTIVE=VALUE[,VALUE...] --------------------------------------------------------

def epsilon_item(text: str) -> tuple[str, list[float]]:
    """``wrist_force=0.005,0.01`` → ``("wrist_force", [0.005, 0.01])``."""
    name, eq, values = text.partition("=")
    if not eq or not name.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"expected OBJECTIVE=VALUE[,VALUE...], got {text!r}")
    try:
        return name.strip(), [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: values must be numbers") from None


def add_epsilon(parser: argparse.ArgumentParser | Any, objectives: Sequence[str], help: str) -> None:
    """``--epsilon OBJECTIVE=VALUE[,VALUE...]`` (repeatable; collects ``(objective, values)``)."""
    parser.add_argument("--epsilon", action="append", type=epsilon_item, default=[],
                        metavar="OBJECTIVE=VALUE[,VALUE...]",
                        help=f"{help}; OBJECTIVE one of {', '.join(objectives)}; repeatable")


def epsilon_hint(value: Any) -> str:
    """The ``--epsilon`` spelling of converted old ε values (a tuple or a list of them)."""
    items = value if isinstance(value, list) else [value]
    return " ".join(f"--epsilon {name}={','.join(f'{v:g}' for v in values)}" for name, values in items)


def epsilon_alias(objective: str) -> Callable[[Any], tuple[str, list[float]]]:
    """Converter for an old ``--eps-<objective> V [V ...]`` spelling."""
    def convert(values: Any) -> tuple[str, list[float]]:
        return objective, [float(v) for v in (values if isinstance(values, list) else [values])]
    return convert


def epsilons(items: Sequence[tuple[str, list[float]]], objectives: Sequence[str],
             option: str = "--epsilon") -> dict[str, list[float]]:
    """``--epsilon`` items → ``{objective: values}`` (a later item for the same objective wins);
    an unknown objective is a :class:`UsageError` listing the known ones."""
    out: dict[str, list[float]] = {}
    for name, values in items or []:
        if name not in objectives:
            raise UsageError(f"{option} {name}=…: unknown objective '{name}'; one of {', '.join(objectives)}")
        if not values:
            raise UsageError(f"{option} {name}=: give at least one value")
        out[name] = list(values)
    return out


#: The Foxglove WebSocket port ``--foxglove`` takes without a value.
FOXGLOVE_PORT = 8765


def foxglove_port(text: str) -> int:
    """``--foxglove PORT``: a TCP port 1-65535, or a :class:`UsageError` naming it."""
    try:
        port = int(text)
    except ValueError:
        raise UsageError(f"--foxglove {text!r}: expected a TCP port number (1-65535)") from None
    if not 0 < port < 65536:
        raise UsageError(f"--foxglove {port}: a TCP port is 1-65535")
    return port


def add_observe(parser: argparse.ArgumentParser | Any) -> None:
    """The observers of a session graph (``train``, ``deploy``, ``safety-test``): ``--record``
    (``<out>/session.mcap``, the ``recorder`` node) and ``--foxglove [PORT]`` (the ``live_view``
    node); see :func:`morl_robot.session.graph.observer_specs` and docs/howto/record.md."""
    parser.add_argument("--record", action="store_true",
                        help="record the session's topics to <out>/session.mcap (ROS 2 MCAP: ros2 bag, Foxglove)")
    parser.add_argument("--foxglove", nargs="?", type=foxglove_port, const=FOXGLOVE_PORT, default=None,
                        metavar="PORT",
                        help=f"live view: a Foxglove WebSocket server on PORT (default port {FOXGLOVE_PORT}; "
                             "default: no server)")
