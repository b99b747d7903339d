"""The package's layout rules (docs/architecture.md), checked on every import of every module.

Imports are read from the source with ``ast``: module level, inside functions (lazy imports) and under
``if TYPE_CHECKING:`` alike.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PKG = "airflow_provider_volcano_argo"
ROOT = Path(__file__).resolve().parents[2] / PKG
MAX_LINES = 400

#: What each part may import of the package (besides itself). Operators, sensors and triggers are not listed
#: as targets: edges between them are the explicit ones of ``CROSS_EDGES``.
MAY_IMPORT: dict[str, set[str]] = {
    "models": set(),
    "exceptions": set(),
    "hooks": {"models", "exceptions"},
    "engine": {"models", "exceptions", "hooks"},
    "triggers": {"models", "exceptions", "hooks", "engine", "version_compat", "_deprecated"},
    "sensors": {"models", "exceptions", "hooks", "engine", "_deprecated"},
    "operators": {"models", "exceptions", "hooks", "engine", "links", "templates"},
    "links": {"models"},
    "templates": set(),
    "cli": {"templates", "exceptions", "hooks", "reaper"},
    "reaper": {"models", "exceptions", "hooks"},
    "get_provider_info": {"engine"},
    "errors": {"_deprecated"},
    "_deprecated": set(),
    "version_compat": set(),
    "sandbox": set(),
}
GLUE = {"operators", "sensors", "triggers"}
#: The only edges between operators, sensors and triggers: a task defers to its trigger; subclasses.
CROSS_EDGES = {
    ("operators.argo_workflow", "triggers.argo_workflow"),
    ("operators.volcano_mpi", "operators.argo_workflow"),
    ("sensors.object_phase", "triggers.phase"),
    ("sensors.volcano_job", "sensors.object_phase"),
    ("sensors.argo_workflow", "sensors.object_phase"),
}
#: Pure models: no Airflow, no asyncio, no clients and no I/O. ``kubernetes.client`` model classes may be
#: used as plain data types.
MODELS_MAY_USE_THIRD_PARTY = {"kubernetes.client"}
IMPURE_STDLIB = {
    "asyncio", "concurrent", "http", "io", "logging", "multiprocessing", "os", "pathlib", "random", "select",
    "selectors", "shutil", "signal", "socket", "ssl", "subprocess", "tempfile", "threading", "time", "urllib",
}  # fmt: skip


def module_name(path: Path) -> str:
    """Return the dotted name of a module of the package, relative to it (``engine.pod_logs``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Return every module ``path`` imports, fully dotted (relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    package = f"{PKG}.{module_name(path)}".rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # ``from pkg import module``
    return found


def part_of(module: str) -> str:
    """Return the part (layer) a package module belongs to: its first component."""
    return module.split(".")[0]


def violations(graph: dict[str, set[str]], modules: set[str]) -> list[str]:
    """Return every broken rule of an import graph (package-relative module -> fully dotted imports)."""
    found = []
    for source, targets in sorted(graph.items()):
        part = part_of(source)
        for target in sorted(targets):
            if target == PKG:
                continue  # the package's ``__init__`` holds only ``__version__``
            if target.startswith(PKG + "."):
                internal = target[len(PKG) + 1 :]
                if internal not in modules:
                    continue  # ``from pkg.module import name``: the module itself is recorded too
            else:
                top = target.split(".")[0]
                if part == "models" and not any(target.startswith(m) for m in MODELS_MAY_USE_THIRD_PARTY):
                    if top not in sys.stdlib_module_names or top in IMPURE_STDLIB:
                        found.append(f"{source} imports {target}: models are pure")
                continue
            other = part_of(internal)
            if other == part and part not in GLUE:
                continue
            if part in GLUE and other in GLUE:
                if internal != source and (source, internal) not in CROSS_EDGES:
                    found.append(f"{source} imports {internal}: not a listed edge of operators, sensors, triggers")
                continue
            if other not in MAY_IMPORT.get(part, set()):
                found.append(f"{source} imports {internal}: {part} may not import {other}")
    return found


def package_graph() -> tuple[dict[str, set[str]], set[str], dict[str, int]]:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph = {module_name(p): imports_of(p) for p in paths}
    sizes = {str(p.relative_to(ROOT.parent)): len(p.read_text().splitlines()) for p in paths}
    return graph, modules, sizes


def test_every_import_follows_the_layers():
    graph, modules, _ = package_graph()
    assert violations(graph, modules) == []


def test_no_module_is_over_400_lines():
    _, _, sizes = package_graph()
    assert {path: n for path, n in sizes.items() if n > MAX_LINES} == {}


def test_nothing_outside_the_sandbox_imports_it_and_it_imports_nothing_else_of_the_package():
    graph, modules, _ = package_graph()
    crossing = [
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if target.startswith(PKG + ".")
        and (part_of(source) == "sandbox") != (part_of(target[len(PKG) + 1 :]) == "sandbox")
    ]
    assert crossing == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"models.x": {"airflow.sdk"}}, "models.x imports airflow.sdk: models are pure"),
        ({"models.x": {"asyncio"}}, "models.x imports asyncio: models are pure"),
        ({"models.x": {"time"}}, "models.x imports time: models are pure"),
        ({"models.x": {f"{PKG}.hooks.h"}}, "models.x imports hooks.h: models may not import hooks"),
        ({"hooks.h": {f"{PKG}.engine.e"}}, "hooks.h imports engine.e: hooks may not import engine"),
        ({"engine.e": {f"{PKG}.triggers.t"}}, "engine.e imports triggers.t: engine may not import triggers"),
        ({"sensors.s": {f"{PKG}.triggers.t"}}, "sensors.s imports triggers.t: not a listed edge"),
        ({"triggers.t": {f"{PKG}.operators.o"}}, "triggers.t imports operators.o: not a listed edge"),
    ],
)
def test_the_checker_finds_a_broken_rule(graph, expected):
    modules = {"models.x", "hooks.h", "engine.e", "triggers.t", "sensors.s", "operators.o"}
    [found] = violations(graph, modules)
    assert found.startswith(expected)


def test_the_checker_accepts_the_listed_edges_and_pure_imports():
    modules = {"models.x", "models.y", "operators.argo_workflow", "triggers.argo_workflow", "engine.e"}
    graph = {
        "models.x": {"dataclasses", "re", f"{PKG}.models.y", "kubernetes.client"},
        "operators.argo_workflow": {f"{PKG}.triggers.argo_workflow", f"{PKG}.engine.e", "airflow.sdk"},
    }
    assert violations(graph, modules) == []
