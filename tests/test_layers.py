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
