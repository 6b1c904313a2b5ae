"""Imports run one way: transformer.loader uses transformer.checkpoints, never the reverse."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "transformer"


def imported_modules(path: Path) -> set[str]:
    """Module names a file imports (relative imports resolved against transformer.checkpoints)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = "transformer" if node.level == 2 else "transformer.checkpoints" if node.level == 1 else ""
            names.add(".".join(p for p in (base, node.module or "") if p))
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_checkpoints_never_import_the_loader():
    users = [p.name for p in (PACKAGE / "checkpoints").glob("*.py") if "transformer.loader" in imported_modules(p)]
    assert users == []
    assert "transformer.checkpoints" in imported_modules(PACKAGE / "loader.py") or any(
        m.startswith("transformer.checkpoints") for m in imported_modules(PACKAGE / "loader.py")
    )


def test_each_side_imports_first_in_a_fresh_interpreter():
    for first in ("transformer.checkpoints", "transformer.loader", "transformer.cli"):
        done = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr


# ---- the import graph of the whole product (DESIGN.md: pages -> ui -> tasks -> core) ----------------------------
ROOT = PACKAGE.parent
CORE = ("attention", "layers", "model", "masks", "positional", "analysis", "config", "embedding")
TASKS = ("text", "translation", "vision", "lm")


def module_name(path: Path) -> str:
    """The dotted module name of a file under the repository root (pages keep their file stem)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def absolute_imports(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved to dotted names."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, node.module] if node.module else base)
            names.add(stem)
            names.update(f"{stem}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def product_files() -> list[Path]:
    files = list((ROOT / "transformer").rglob("*.py")) + list((ROOT / "ui").rglob("*.py"))
    return files + list((ROOT / "pages").glob("*.py")) + [ROOT / "streamlit_app.py"]


def test_the_core_imports_no_task():
    for name in CORE:
        path = PACKAGE / f"{name}.py"
        if not path.exists():
            continue
        bad = {
            m
            for m in absolute_imports(path)
            for t in TASKS
            if m == f"transformer.{t}" or m.startswith(f"transformer.{t}.")
        }
        assert bad == set(), f"{path.name} imports a task: {sorted(bad)}"


def test_the_model_package_imports_no_streamlit_and_no_ui():
    for path in PACKAGE.rglob("*.py"):
        bad = {m for m in absolute_imports(path) if m.split(".")[0] in ("streamlit", "ui", "pages")}
        assert bad == set(), f"{path} imports {sorted(bad)}"


def test_no_page_imports_another_page():
    for path in (ROOT / "pages").glob("*.py"):
        bad = {m for m in absolute_imports(path) if m.split(".")[0] == "pages"}
        assert bad == set(), f"{path.name} imports {sorted(bad)}"


def test_ui_imports_no_page():
    for path in (ROOT / "ui").rglob("*.py"):
        bad = {m for m in absolute_imports(path) if m.split(".")[0] == "pages"}
        assert bad == set(), f"{path} imports {sorted(bad)}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the product modules it imports at the top level of the file (lazy imports inside
    functions included: a cycle through them is still a cycle in the design)."""
    files = {module_name(p): p for p in product_files()}
    graph = {}
    for name, path in files.items():
        graph[name] = {m for m in absolute_imports(path) if m in files and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle in ``graph`` as a list of modules, or [] when there is none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_find_cycle_finds_one_and_only_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_product_has_no_import_cycle():
    graph = import_graph()
    # a package's __init__ re-exporting its modules is not a cycle of design: leave package -> child edges out
    for name, deps in graph.items():
        graph[name] = {d for d in deps if not d.startswith(name + ".")}
    assert find_cycle(graph) == []
