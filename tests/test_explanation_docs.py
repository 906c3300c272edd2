"""The explanation pages (docs/explanation/*.md) name code that exists today.

They say where each idea lives: files (`robots/compliance.py`), functions (`mpo.conditioned_e_step`),
classes and methods (`InnerSafety.limit_approach`), tests (`test_scale_invariance.py`,
`test_rescaling_an_objective_...`).  Each such name in backticks is looked up in the source with
``ast`` (nothing imported), so a rename that leaves a page pointing at nothing fails here.
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "explanation").glob("*.md"))
#: modules named by their short name on the pages (`mpo.x` is morl_robot/learning/mpo.py's x)
SHORT_MODULES = {"mpo": "learning/mpo.py", "learner": "learning/learner.py", "networks": "learning/networks.py",
                 "preferences": "learning/preferences.py"}


@cache
def _symbols() -> dict[str, set[str]]:
    """Every class and top-level function of morl_robot (name → names defined in its body)."""
    out: dict[str, set[str]] = {}
    bases: dict[str, set[str]] = {}
    for path in (ROOT / "morl_robot").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(b.id for b in node.bases if isinstance(b, ast.Name))
                body = out.setdefault(node.name, set())
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        body.add(item.name)
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        body.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        body.update(t.id for t in item.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(node.name, set())

    def inherited(cls: str, seen: frozenset[str] = frozenset()) -> set[str]:  # a class has its bases' members
        return out.get(cls, set()).union(*(inherited(b, seen | {cls}) for b in bases.get(cls, ()) if b not in seen))

    return {cls: inherited(cls) for cls in out}


@cache
def _module_names(rel: str) -> set[str]:
    tree = ast.parse((ROOT / "morl_robot" / rel).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


@cache
def _test_names() -> set[str]:
    return {m for path in (ROOT / "tests").rglob("*.py")
            for m in re.findall(r"^\s*def (test_\w+)", path.read_text(), re.MULTILINE)}


def _problems(page: Path) -> list[str]:
    problems = []
    for token in sorted(set(re.findall(r"`([^`\s]+)`", page.read_text()))):
        path_part, _, test = token.partition("::")
        if re.fullmatch(r"[\w./-]+/[\w.-]+\.(py|yaml|md|json|png)", path_part):
            if not any((base / path_part).exists() for base in (ROOT, ROOT / "morl_robot", ROOT / "tests")):
                problems.append(f"no file {path_part}")
            if test and test not in _test_names():
                problems.append(f"no test {test}")
        elif (m := re.fullmatch(r"(mpo|learner|networks|preferences)\.(\w+)(?:\.(\w+))?", token)):
            module, name, member = m.groups()
            if name != "py" and name not in _module_names(SHORT_MODULES[module]):
                problems.append(f"no {name} in morl_robot/{SHORT_MODULES[module]}")
            elif member and member not in _symbols().get(name, set()):
                problems.append(f"no {name}.{member}")
        elif (m := re.fullmatch(r"([A-Z][A-Za-z0-9]+[a-z][A-Za-z0-9]*)(?:\.(\w+))?", token)):
            cls, member = m.groups()
            if cls in _symbols():
                if member and member not in _symbols()[cls]:
                    problems.append(f"no {cls}.{member}")
            elif member:
                problems.append(f"no class {cls}")
        elif re.fullmatch(r"test_\w+", token) and token not in _test_names():
            problems.append(f"no test {token}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_page_names_code_that_exists(page: Path):
    """Every file, test, function, class and method a page names in backticks exists in the source."""
    problems = _problems(page)
    assert not problems, f"docs/explanation/{page.name} names what the code does not have: {problems}"
