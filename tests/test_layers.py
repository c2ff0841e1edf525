"""The import contract between the layers (docs/architecture.md).

- `solver.core` is the generic engine: it imports nothing of `rules` and
  nothing of the application above it (`solver` outside `core`: tables of a
  rule set, analyses, report, sweeps, CLI).
- `rules` imports nothing of `solver`.
- No module imports another module's private (underscored) names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"


@dataclass(frozen=True)
class Breach:
    module: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.what}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names) for every import in `tree`, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


def breaches(module: str, source: str, is_package: bool = False) -> list[Breach]:
    """What `module` (its `source`) imports against the contract."""
    out = []
    for line, target, names in imported_modules(ast.parse(source), module, is_package):
        top = target.split(".")[0]
        in_core = module == "solver.core" or module.startswith("solver.core.")
        if in_core and top == "rules":
            out.append(Breach(module, line, f"the core imports the game ({target})"))
        if in_core and top == "solver" and not (target == "solver.core" or target.startswith("solver.core.")):
            out.append(Breach(module, line, f"the core imports the application ({target})"))
        if module.split(".")[0] == "rules" and top == "solver":
            out.append(Breach(module, line, f"the rules import the solver ({target})"))
        if top in ("rules", "solver"):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            out.extend(Breach(module, line, f"imports the private name {target}.{n}") for n in private)
    return out


def source_modules() -> list[Path]:
    return sorted(SRC.glob("*/**/*.py"))


def test_the_layers_keep_their_contract():
    found = [str(b) for path in source_modules()
             for b in breaches(module_name(path), path.read_text(), path.name == "__init__.py")]
    assert not found, "\n".join(found)


def test_the_core_holds_the_engine():
    core = {module_name(p) for p in (SRC / "solver" / "core").glob("*.py")}
    for engine in ("graph", "stage", "shapley", "bracketing", "layered", "solve", "certify", "chain", "table_file"):
        assert f"solver.core.{engine}" in core


@pytest.mark.parametrize(
    "module, source, expected",
    [
        ("solver.core.graph", "import rules\n", "the core imports the game (rules)"),
        ("solver.core.graph", "from rules.charge_spark.game import ChargeSparkGame\n", "the core imports the game"),
        ("solver.core.solve", "from ..tables import solved_table\n", "the core imports the application (solver.tables)"),
        ("solver.core.solve", "from solver.report import build\n", "the core imports the application"),
        ("rules.charge_spark.game", "from solver.core.graph import GameGraph\n", "the rules import the solver"),
        ("solver.core.certify", "from .components import _tarjan\n", "private name solver.core.components._tarjan"),
    ],
)
def test_a_breach_is_caught(module, source, expected):
    found = breaches(module, source)
    assert found and expected in str(found[0])


@pytest.mark.parametrize(
    "module, source",
    [
        ("solver.core.solve", "from .graph import build_graph\nimport numpy as np\n"),
        ("solver.core.solve", "from solver.core.graph import build_graph\n"),
        ("solver.tables", "from rules.charge_spark.config import RuleSet\nfrom .core.solve import solve_from\n"),
        ("solver.report.build", "from ..core.chain import play_chain\n"),
    ],
)
def test_allowed_imports_pass(module, source):
    assert breaches(module, source) == []


def unhinted_public_functions(source: str) -> list[str]:
    """Public functions (compiled kernels aside) missing a parameter's or the return's type hint."""
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        if any("njit" in ast.unparse(d) or "numba" in ast.unparse(d) for d in node.decorator_list):
            continue  # typed by numba at the call
        params = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]
        params += [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        if node.returns is None or any(a.annotation is None for a in params):
            missing.append(f"{node.name} (line {node.lineno})")
    return missing


def test_the_cores_public_functions_carry_type_hints():
    found = [f"{path.name}: {name}" for path in sorted((SRC / "solver" / "core").glob("*.py"))
             for name in unhinted_public_functions(path.read_text())]
    assert not found, "\n".join(found)


def test_a_missing_hint_is_caught():
    assert unhinted_public_functions("def solve(game) -> int:\n    return 0\n") == ["solve (line 1)"]
    assert unhinted_public_functions("def solve(game: int):\n    return 0\n") == ["solve (line 1)"]
    assert unhinted_public_functions("def _kernel(a):\n    return a\n") == []


# --- the faces: the explorer never imports the command line ------------------------------------


def module_level_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """The modules importing `module` runs at once (its top-level imports, not
    those inside functions or under `if TYPE_CHECKING:`), with their packages."""
    top_level = ast.Module(body=[node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))],
                           type_ignores=[])
    found = set()
    for _, target, names in imported_modules(top_level, module, is_package):
        found.add(target)
        found.update(f"{target}.{name}" for name in names)  # `from . import x` may import the module x
    return {f for f in found if f} | {parent for f in found for parent in _parents(f)}


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def known_modules() -> dict[str, tuple[ast.Module, bool]]:
    return {module_name(path): (ast.parse(path.read_text()), path.name == "__init__.py") for path in source_modules()}


def import_chain(start: str, target: str, modules: dict[str, tuple[ast.Module, bool]]) -> list[str] | None:
    """The chain of module-level imports by which importing `start` imports `target`, or None."""
    came_from: dict[str, str | None] = {start: None}
    for parent in _parents(start):
        came_from.setdefault(parent, start)
    queue = [start, *_parents(start)]
    while queue:
        module = queue.pop(0)
        if module == target:
            chain = [module]
            while (previous := came_from[chain[-1]]) is not None:
                chain.append(previous)
            return chain[::-1]
        if module not in modules:
            continue  # not ours (or a name imported from a module, not a module)
        tree, is_package = modules[module]
        for imported in sorted(module_level_imports(tree, module, is_package)):
            if imported not in came_from:
                came_from[imported] = module
                queue.append(imported)
    return None


def imports_anywhere(tree: ast.Module, module: str, is_package: bool, target: str) -> list[int]:
    """The lines where `module` imports `target` (or a name of it), at any depth."""
    return [line for line, imported, names in imported_modules(tree, module, is_package)
            if imported == target or imported.startswith(target + ".")
            or any(f"{imported}.{name}" == target for name in names)]


def test_the_explorer_never_imports_the_command_line():
    modules = known_modules()
    explorer = sorted(m for m in modules if m == "solver.explore" or m.startswith("solver.explore."))
    assert "solver.explore.app" in explorer and "solver.cli" in modules
    direct = [f"{m}:{line}" for m in explorer for line in imports_anywhere(modules[m][0], m, modules[m][1], "solver.cli")]
    assert not direct, "the explorer imports the command line at " + ", ".join(direct)
    chains = [" -> ".join(chain) for m in explorer if (chain := import_chain(m, "solver.cli", modules))]
    assert not chains, "\n".join(chains)


def test_an_import_of_the_command_line_is_caught():
    modules = known_modules()
    answers, is_package = modules["solver.explore.answers"]
    assert imports_anywhere(ast.parse("def f():\n    from ..cli import printable\n"), "solver.explore.answers",
                            False, "solver.cli") == [2]
    assert imports_anywhere(ast.parse("from .. import cli\n"), "solver.explore.answers", False, "solver.cli") == [1]
    # A chain through a module of the application: the explorer imports it, it imports the command line.
    planted = dict(modules, **{"solver.answering": (ast.parse("import json\nfrom .cli import main\n"), False)})
    chain = import_chain("solver.explore.answers", "solver.cli", planted)
    assert chain is not None and chain[0] == "solver.explore.answers" and chain[-2:] == ["solver.answering", "solver.cli"]
    # Imports inside a function or for type checking only run no module at import time.
    lazy = dict(modules, **{"solver.answering": (ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .cli import main\n"
        "def f():\n    from .cli import main\n"), False)})
    assert import_chain("solver.explore.answers", "solver.cli", lazy) is None
    assert answers and not is_package
