"""Exit codes from ``morl_robot/cli/exit_codes.py`` (rendered as a note until it exists)."""
from __future__ import annotations

from . import md


def render() -> str:
    try:
        from morl_robot.cli import exit_codes
    except ImportError:
        return "*The exit-code table (`morl_robot/cli/exit_codes.py`) is not there yet.*\n"
    table = exit_codes.EXIT_CODES
    common = getattr(exit_codes, "COMMON", table.get("*", {}))
    parts = ["## Every command\n",
             md.table(("code", "meaning"), [(md.code(k), md.text(v)) for k, v in sorted(common.items())])]
    parts.append("## Per command\n")
    parts.append("A command's own codes add to, or sharpen, the codes above.\n")
    for command, codes in table.items():
        if command == "*":
            continue
        parts.append(f"### `morl-robot {command}`\n")
        parts.append(md.table(("code", "meaning"), [(md.code(k), md.text(v)) for k, v in sorted(codes.items())]))
    return "\n".join(parts)
