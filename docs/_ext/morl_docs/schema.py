"""YAML schemas from config dataclasses: key path, type, default and description.

The description is the field's ``metadata["doc"]`` (or ``"help"``), else the comment beside the
field in its source (the ``#:`` / ``#`` lines right above it, or the comment at the end of its
line), read with :mod:`ast` and :mod:`tokenize`; else the nested dataclass's docstring.
"""
from __future__ import annotations

import ast
import collections.abc
import dataclasses
import functools
import inspect
import io
import tokenize
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from . import md


@functools.cache
def _source(path: str) -> tuple[ast.Module, dict[int, str], frozenset[int]]:
    """The module's AST, its comments by line, and the lines holding only a comment."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            for line in range(tok.start[0], tok.end[0] + 1):
                code_lines.add(line)
    only = frozenset(n for n in comments if n not in code_lines)
    return ast.parse(src), comments, only


def _strip(comment: str) -> str:
    c = comment.lstrip("#")
    c = c.removeprefix(":")
    return c.strip()


def _above(lineno: int, comments: dict[int, str], only: frozenset[int]) -> list[str]:
    """The comment lines right above ``lineno``, in order, up to a separator (``# ---``)."""
    above, line = [], lineno - 1
    while line in only:
        text = _strip(comments[line])
        if text.startswith(("---", "===")):
            break
        above.append(text)
        line -= 1
    return above[::-1]


def _class_node(cls: type) -> tuple[ast.ClassDef, dict[int, str], frozenset[int]] | None:
    try:
        path = inspect.getsourcefile(cls)
    except TypeError:
        return None
    if not path:
        return None
    tree, comments, only = _source(path)
    parts = cls.__qualname__.split(".")
    body: list[ast.stmt] = tree.body
    node = None
    for part in parts:
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node, comments, only


@functools.cache
def field_comments(cls: type) -> dict[str, str]:
    """Field name -> the comment written beside it (searching the dataclass and its bases)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        found = _class_node(klass)
        if found is None:
            continue
        node, comments, only = found
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            above = _above(stmt.lineno, comments, only)
            inline = comments.get(stmt.end_lineno or stmt.lineno)
            inline = _strip(inline) if inline and (stmt.end_lineno or stmt.lineno) not in only else ""
            text = " ".join(x for x in (*above, inline) if x)
            text = text.replace("noqa", "").strip() if text.startswith("noqa") else text
            if text:
                out[stmt.target.id] = text
    return out


def type_name(tp: Any) -> str:
    """A type annotation as a reader writes it in YAML terms."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is type(None):
        return "null"
    if tp is Any:
        return "any"
    if origin is Literal:
        return " \\| ".join(md.value(a) for a in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in args)
    if origin in (list, tuple, typing.Sequence) or origin is collections.abc.Sequence:
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {type_name(inner[0])}" if inner else "list"
    if origin is dict:
        return f"mapping of {type_name(args[1])}" if len(args) == 2 else "mapping"
    if dataclasses.is_dataclass(tp):
        return "mapping"
    if isinstance(tp, type):
        return {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(tp.__name__, tp.__name__)
    return md.text(str(tp).replace("typing.", ""))


def _nested(tp: Any) -> tuple[str, type] | None:
    """(suffix, dataclass) when ``tp`` holds a dataclass: '' (itself), '[]' (list items), '.<name>'."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return "", tp
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        for a in args:
            if a is not type(None) and (n := _nested(a)):
                return n
    if origin in (list, tuple) and args and dataclasses.is_dataclass(args[0]):
        return "[]", args[0]
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return ".<name>", args[1]
    return None


def _default(f: dataclasses.Field) -> tuple[str, Any]:
    if f.default is not dataclasses.MISSING:
        d = f.default
    elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        d = f.default_factory()  # type: ignore[misc]
    else:
        return "required", None
    if dataclasses.is_dataclass(d):
        return "", d
    if isinstance(d, tuple):
        d = list(d)
    return md.value(d), d


def _doc_line(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    if doc.startswith(cls.__name__ + "("):  # dataclass's generated signature
        return ""
    return doc.split("\n\n")[0]


def rows(cls: type, prefix: str = "", seen: tuple[type, ...] = ()) -> list[tuple[str, str, str, str]]:
    """Rows (key path, type, default, description) of every key of ``cls``, nested keys flattened."""
    hints = get_type_hints(cls)
    comments = field_comments(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        key = f"{prefix}{f.name}"
        tp = hints.get(f.name, f.type)
        doc = f.metadata.get("doc") or f.metadata.get("help") or comments.get(f.name, "")
        nested = _nested(tp)
        if nested and not doc:
            doc = _doc_line(nested[1])
        default, _ = _default(f)
        if nested and default == "" :
            default = "(section)"
        out.append((md.code(key), type_name(tp), default, md.text(doc)))
        if nested and nested[1] not in seen:
            suffix, sub = nested
            out.extend(rows(sub, f"{key}{suffix}.", seen + (cls,)))
    return out


def render(cls: type, prefix: str = "") -> str:
    """The schema table of dataclass ``cls``."""
    return md.table(("key", "type", "default", "description"), rows(cls, prefix))


def module_comments(module: Any) -> dict[str, str]:
    """Module-level name -> the ``#:`` / ``#`` comment lines right above its assignment."""
    path = inspect.getsourcefile(module)
    if not path:
        return {}
    tree, comments, only = _source(path)
    out: dict[str, str] = {}
    for stmt in tree.body:
        targets = []
        if isinstance(stmt, ast.Assign):
            targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            targets = [stmt.target.id]
        if not targets:
            continue
        above = _above(stmt.lineno, comments, only)
        if above:
            for t in targets:
                out[t] = " ".join(above)
    return out
