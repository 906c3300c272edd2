"""Markdown building blocks for the generated reference (escaping, tables, values)."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_SPECIAL = re.compile(r"([\\*_<>\[\]|{}#$~])")


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+)``")


def text(s: Any) -> str:
    """Plain text (or a docstring's reST) as Markdown: roles and ````x```` become code spans,
    specials are escaped outside code spans, all on one line."""
    s = " ".join(str(s).split())
    s = _DOUBLE.sub(r"`\1`", _ROLE.sub(r"`\1`", s))
    out, last = [], 0
    for m in _CODE.finditer(s):
        out.append(_SPECIAL.sub(r"\\\1", s[last:m.start()]))
        out.append(m.group(0).replace("|", "\\|"))
        last = m.end()
    out.append(_SPECIAL.sub(r"\\\1", s[last:]))
    return "".join(out)


def code(s: Any) -> str:
    """``s`` as an inline code span (safe inside a table cell)."""
    s = " ".join(str(s).split())
    ticks = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}".replace("|", "\\|") if s else ""


def value(v: Any) -> str:
    """A default value as YAML would spell it, in a code span."""
    if isinstance(v, bool):
        return code("true" if v else "false")
    if v is None:
        return code("null")
    if isinstance(v, str):
        return code(json.dumps(v, ensure_ascii=False)) if v == "" or v.strip() != v else code(v)
    if isinstance(v, float):
        return code(repr(v))
    try:
        return code(json.dumps(v, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return code(repr(v))


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GFM table (cells already Markdown); an empty row list gives a one-line note."""
    rows = [list(r) for r in rows]
    if not rows:
        return "*(none)*\n"
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c if c else " " for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def fence(body: str, lang: str = "text") -> str:
    ticks = "````" if "```" in body else "```"
    return f"{ticks}{lang}\n{body.rstrip()}\n{ticks}\n"


def docstring(doc: str) -> str:
    """A docstring's paragraphs and ``*`` bullet lists as Markdown."""
    import inspect

    out = []
    for para in inspect.cleandoc(doc).split("\n\n"):
        lines = para.splitlines()
        if lines and lines[0].lstrip().startswith(("* ", "- ")):
            items, cur = [], []
            for line in lines:
                if line.lstrip().startswith(("* ", "- ")) and cur:
                    items.append(" ".join(cur))
                    cur = []
                cur.append(line.strip().lstrip("*-").strip() if not cur else line.strip())
            items.append(" ".join(cur))
            out.append("\n".join(f"- {text(i)}" for i in items))
        else:
            out.append(text(para))
    return "\n\n".join(out) + "\n"
