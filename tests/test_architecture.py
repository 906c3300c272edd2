"""The architecture docs/explanation/architecture.md describes, checked against the code.

* The core (every package but ``nodes/``, ``cli/`` and ``bench/``) is importable without ROS: importing
  all of it, in a fresh interpreter, loads no ``rclpy`` (tests/test_package.py checks the source text;
  this checks what an import actually pulls in, transitively).
* The layers (:data:`LAYERS`, the page's table): every import of a ``morl_robot`` module, at module
  level, inside a function or under ``TYPE_CHECKING``, goes to a lower layer (:func:`layer_violations`,
  read from the source with ``ast``), and no modules import each other in a cycle.
* The page names every package and top-level module of ``morl_robot/``, so a new one cannot go
  undocumented.
"""
from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanation" / "architecture.md"
PACKAGE = ROOT / "morl_robot"

#: The layers, bottom up (docs/explanation/architecture.md): a package or top-level module may
#: import only those of lower rows, never a row-mate or a higher row (also not inside a function).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "throttle", "records"),
    ("resources",),
    ("configuration",),
    ("node_settings",),
    ("robots",),
    ("tasks", "contexts"),
    ("learning", "views", "rendering", "recording"),
    ("safety", "serving"),
    ("reward_machines",),
    ("envs",),
    ("evaluation",),
    ("acting",),
    ("training",),
    ("experiments", "prism", "nodes"),
    ("session",),
    ("bench",),
    ("cli",),
)
#: The only imports across the rows' order, module by module, each with its reason.
ALSO: dict[tuple[str, str], str] = {
    ("bench", "morl_robot.cli.options"): "the one CLI option vocabulary (the benchmarks' parsers are subcommands')",
    ("__init__", "morl_robot.envs.registration"): "the package root registers the Gymnasium ids (string entry points)",
}
#: The entry points and ROS wrappers: nothing else imports them.
ENTRY = {"nodes", "cli", "bench"}


def _package_of(path: Path, package: Path = PACKAGE) -> str:
    """``morl_robot/<package>/…`` or ``morl_robot/<module>.py`` → the package or module name."""
    rel = path.relative_to(package).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def _module_of(path: Path, package: Path) -> str:
    """``morl_robot/a/b.py`` → ``morl_robot.a.b`` (``__init__.py`` → its package)."""
    parts = (package.name, *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _imported(path: Path, package: Path = PACKAGE) -> list[tuple[str, int]]:
    """(module imported, line) for every import of a ``morl_robot`` module in ``path``: at module
    level, inside functions, under ``TYPE_CHECKING``; relative imports resolved; ``from P import n``
    is ``P.n`` when ``n`` is a module of ``P``."""
    here = _module_of(path, package)
    base_parts = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join([*base_parts[:len(base_parts) - node.level + 1], *filter(None, [module])])
            names = []
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                rel = Path(*sub.split(".")[1:])
                is_module = (package / rel).is_dir() or (package / rel).with_suffix(".py").is_file()
                names.append(sub if is_module else module)
        else:
            continue
        found += [(n, node.lineno) for n in dict.fromkeys(names) if n.startswith(f"{package.name}.")
                  and not n.split(".")[1].startswith("__")]
    return found


def _imports(path: Path) -> list[tuple[str, int]]:
    """(morl_robot package imported, line) for every import in ``path``, inside functions too."""
    return [(m.split(".")[1], line) for m, line in _imported(path)]


def _violations(allowed: Callable[[str, str], bool]) -> list[str]:
    """Every import of a morl_robot package that ``allowed(importer, imported)`` refuses, with its place."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        pkg = _package_of(path)
        for target, line in _imports(path):
            if target != pkg and not allowed(pkg, target):
                out.append(f"{path.relative_to(ROOT)}:{line}: {pkg} imports {target}")
    return out


def layer_violations(package: Path = PACKAGE, layers: Iterable[Iterable[str]] = LAYERS,
                     also: Mapping[tuple[str, str], str] = ALSO) -> list[str]:
    """Every import in ``package`` that breaks ``layers``: ``file:line: from -> to (module): rule``.
    A package or top-level module missing from ``layers`` is reported too (it has no place yet)."""
    rank = {name: i for i, row in enumerate(layers) for name in row}
    out = []
    for path in sorted(package.rglob("*.py")):
        pkg = _package_of(path, package)
        where = path.relative_to(package.parent)
        if pkg not in rank and pkg != "__init__":
            if path.name == "__init__.py" or path.parent == package:
                out.append(f"{where}: {pkg} has no layer (add it to LAYERS and to the architecture page)")
            continue
        for module, line in _imported(path, package):
            target = module.split(".")[1]
            if target == pkg or any(module == m or module.startswith(m + ".") for (p, m) in also if p == pkg):
                continue
            if pkg == "__init__" or target not in rank:
                rule = "the package root imports only what ALSO names" if pkg == "__init__" else \
                    f"{target} has no layer"
            elif rank[target] == rank[pkg]:
                rule = f"row-mates do not import each other (row {rank[pkg]})"
            elif rank[target] > rank[pkg]:
                rule = f"upward: layer {rank[pkg]} imports layer {rank[target]}"
            else:
                continue
            out.append(f"{where}:{line}: {pkg} -> {target} ({module}): {rule}")
    return out


def import_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """The modules of ``package`` that import each other in a cycle (every import, inside functions
    too), as strongly connected components of more than one module."""
    modules = {_module_of(p, package): p for p in package.rglob("*.py")}
    graph = {m: {t for t, _ in _imported(p, package) if t in modules and t != m} for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles

_IMPORT_ALL_CORE = """
import importlib, pkgutil, sys
import morl_robot
skip = ("morl_robot.nodes", "morl_robot.cli", "morl_robot.bench",
        "morl_robot.session.launch_actions")  # launch_ros actions: only inside a launch file
for m in pkgutil.walk_packages(morl_robot.__path__, "morl_robot."):
    if not m.name.startswith(skip):
        importlib.import_module(m.name)
print(sorted({k.split('.')[0] for k in sys.modules if k.split('.')[0] in ('rclpy', 'rcl_interfaces', 'launch_ros')}))
"""


def test_the_core_imports_no_ros():
    """Importing every core module (all but nodes/, cli/, bench/) loads no rclpy, also transitively."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL_CORE], check=False, cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", (
        f"the core pulled in ROS modules: {out.stdout.strip()} (keep rclpy imports in morl_robot/nodes)")


def test_the_core_never_imports_the_nodes_or_the_entry_points():
    """No module outside nodes/, cli/, bench/ and session/ (which starts nodes) imports them, even lazily."""
    bad = _violations(lambda pkg, target: target not in ENTRY or pkg in ENTRY | {"session"})
    assert not bad, ("the core must not depend on the ROS nodes or the entry points "
                     "(docs/explanation/architecture.md): " + "; ".join(bad))


def test_the_foundation_imports_only_what_lies_below_it():
    """errors … tasks/ (the layers up to ``tasks``) import only lower layers, even lazily."""
    foundation = {name for row in LAYERS[:_rank("tasks") + 1] for name in row}
    bad = [b for b in layer_violations() if b.split(": ", 1)[1].split(" -> ")[0] in foundation]
    assert not bad, ("a foundation package imports upward (docs/explanation/architecture.md: pass what it "
                     "needs in, or move it down): " + "; ".join(bad))


def test_every_import_follows_the_layers():
    """Every import (module level, inside functions, under TYPE_CHECKING) goes to a lower layer."""
    bad = layer_violations()
    assert not bad, ("imports that break the layers of docs/explanation/architecture.md (move what is shared "
                     "down, or pass it in):\n" + "\n".join(bad))


def test_no_modules_import_each_other_in_a_cycle():
    """No cycle of imports between modules, also through imports inside functions."""
    cycles = import_cycles()
    assert not cycles, f"modules that import each other in a cycle: {cycles}"


def _rank(name: str) -> int:
    return next(i for i, row in enumerate(LAYERS) if name in row)


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    """A synthetic ``morl_robot`` package under ``root`` with ``files`` (path → source)."""
    for rel, text in files.items():
        path = root / "morl_robot" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "morl_robot"


def test_the_layer_check_names_each_wrong_import(tmp_path):
    """The checker on a synthetic package: an upward import inside a function, a row-mate import,
    a relative one, a cycle; each named with file, line, from → to and the rule; the allowed ones pass."""
    pkg = _tree(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "robots/__init__.py": "from morl_robot.errors import *\n",
        "robots/base.py": "def f():\n    from morl_robot.envs.mo_env import MORobotEnv\n",
        "learning/__init__.py": "from . import net\n",
        "learning/net.py": "from ..views import scene\n",
        "views/__init__.py": "",
        "views/scene.py": "import morl_robot.robots.base\n",
        "envs/__init__.py": "",
        "envs/mo_env.py": "from morl_robot.robots import base\nimport morl_robot.envs.other\n",
        "envs/other.py": "def g():\n    import morl_robot.envs.mo_env\n",
    })
    bad = layer_violations(pkg)
    assert bad == [
        ("morl_robot/learning/net.py:1: learning -> views (morl_robot.views.scene): "
         f"row-mates do not import each other (row {_rank('learning')})"),
        ("morl_robot/robots/base.py:2: robots -> envs (morl_robot.envs.mo_env): "
         f"upward: layer {_rank('robots')} imports layer {_rank('envs')}"),
    ], bad
    assert import_cycles(pkg) == [["morl_robot.envs.mo_env", "morl_robot.envs.other", "morl_robot.robots.base"]]
    assert layer_violations(pkg, LAYERS + (("newpkg",),)) == bad  # a layer more changes nothing here
    (pkg / "stray").mkdir()
    (pkg / "stray" / "__init__.py").write_text("")
    assert layer_violations(pkg)[-1] == ("morl_robot/stray/__init__.py: stray has no layer "
                                         "(add it to LAYERS and to the architecture page)")


def test_the_layer_check_fails_on_a_wrong_import_in_a_copy_of_the_package(tmp_path):
    """A copy of the real package with one added import of ``cli`` inside an ``envs`` function fails
    the check on exactly that import, named with its place."""
    import shutil

    copy = tmp_path / "morl_robot"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "envs" / "bad_example.py").write_text("def f():\n    from morl_robot.cli.options import add_set\n")
    envs, cli = _rank("envs"), _rank("cli")
    assert layer_violations(copy) == [("morl_robot/envs/bad_example.py:2: envs -> cli (morl_robot.cli.options): "
                                       f"upward: layer {envs} imports layer {cli}")]


def test_the_architecture_page_names_every_package():
    """docs/explanation/architecture.md has a row for each package and top-level module of morl_robot/."""
    text = PAGE.read_text()
    pkg = ROOT / "morl_robot"
    names = sorted({p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
                   | {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"})
    missing = [n for n in names if not re.search(rf"`{n}(/|\.py)?`", text)]
    assert not missing, f"docs/explanation/architecture.md does not describe: {missing}"


def test_the_page_table_is_the_layer_map():
    """The page's package table gives each package the layer :data:`LAYERS` enforces."""
    rows = re.findall(r"^\| (\d+) \| `(\w+)(?:/|\.py)` \|", PAGE.read_text(), re.MULTILINE)
    assert rows, "docs/explanation/architecture.md: no `| layer | package |` table"
    page = {name: int(layer) for layer, name in rows}
    enforced = {name: i for i, row in enumerate(LAYERS) for name in row}
    assert page == enforced, (f"docs/explanation/architecture.md's table and LAYERS in {Path(__file__).name} "
                              f"differ: {sorted(set(page.items()) ^ set(enforced.items()))}")
