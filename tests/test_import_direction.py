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
    for first in ("transformer.checkpoints", "transformer.loader", "transformer.cli.main", "transformer.core.model"):
        done = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr


# ---- the import graph of the whole product (DESIGN.md: pages -> ui -> tasks -> core) ----------------------------
ROOT = PACKAGE.parent
# The floors of transformer/ (DESIGN.md "Layout as it grows"), lowest first. A module may import its own floor
# and the floors below; task packages never import one another.
CORE = "transformer.core"
ANALYSIS = ("transformer.analysis", "transformer.datasets")  # on the core; shared by the tasks
TASKS = tuple(f"transformer.{t}" for t in ("text", "translation", "vision", "lm", "lab", "residual"))
OWN_FORMAT = "transformer.bundle"  # our bundled-model folder: it reads and writes core models only


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted module name of a file under ``root`` (pages keep their file stem)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def absolute_imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports, relative imports resolved to dotted names."""
    package = module_name(path, root).split(".")
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


def transformer_imports(path: Path, root: Path = ROOT) -> set[str]:
    """The transformer.* modules ``path`` imports (names imported from a package count as submodules)."""
    return {m for m in absolute_imports(path, root) if m.startswith("transformer.")}


def within(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def upward(path: Path, allowed: tuple[str, ...], root: Path = ROOT) -> set[str]:
    """The transformer modules ``path`` imports from outside ``allowed`` (module names that are really
    symbols of an allowed module, e.g. transformer.core.config.ModelConfig, are allowed through it)."""
    return {m for m in transformer_imports(path, root) if not within(m, *allowed)}


def other_tasks(path: Path, task: str, root: Path = ROOT) -> set[str]:
    """The modules of task packages other than ``task`` that ``path`` imports."""
    return {m for m in transformer_imports(path, root) if within(m, *(t for t in TASKS if t != task))}


def test_the_core_imports_nothing_above_it():
    files = sorted((PACKAGE / "core").rglob("*.py"))
    assert len(files) >= 12
    for path in files:
        assert upward(path, (CORE,)) == set(), f"{path.name} imports above the core"


def test_the_analysis_layer_stands_on_the_core_alone():
    for folder in ("analysis", "datasets"):
        for path in (PACKAGE / folder).rglob("*.py"):
            bad = upward(path, (CORE, *ANALYSIS, OWN_FORMAT))
            assert bad == set(), f"{path.relative_to(PACKAGE)} imports above its floor: {sorted(bad)}"


def test_our_bundle_format_reads_core_models_only():
    assert upward(PACKAGE / "bundle.py", (CORE,)) == set()


def test_no_task_package_imports_another():
    for task in TASKS:
        for path in (PACKAGE / task.split(".")[1]).rglob("*.py"):
            bad = other_tasks(path, task)
            assert bad == set(), f"{path.relative_to(PACKAGE)} imports another task: {sorted(bad)}"


def test_the_direction_checks_catch_an_upward_import(tmp_path):
    """The checks above are not vacuous: run on a tree of their own, a core module that imports a task
    (relatively or by its full name), an analysis module that imports a task and a task that imports
    another are all found, and imports that point down pass."""
    files = {
        "transformer/core/bad.py": "from ..lm.decode import greedy\nfrom .config import ModelConfig\n",
        "transformer/core/sub/deep.py": "import transformer.vision.train\nfrom ...core import masks\n",
        "transformer/analysis/bad.py": "from ..text import predict\nfrom ..core.model import build_model\n",
        "transformer/lm/bad.py": "from ..translation.decode import greedy\nfrom ..analysis import analyze\n",
        "transformer/lm/good.py": "from .decode import greedy\nfrom ..core.config import ModelConfig\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = {name: upward(tmp_path / name, (CORE,), tmp_path) for name in files if "/core/" in name}
    assert found == {
        "transformer/core/bad.py": {"transformer.lm.decode", "transformer.lm.decode.greedy"},
        "transformer/core/sub/deep.py": {"transformer.vision.train"},
    }
    analysis = upward(tmp_path / "transformer/analysis/bad.py", (CORE, *ANALYSIS, OWN_FORMAT), tmp_path)
    assert analysis == {"transformer.text", "transformer.text.predict"}
    assert other_tasks(tmp_path / "transformer/lm/bad.py", "transformer.lm", tmp_path) == {
        "transformer.translation.decode",
        "transformer.translation.decode.greedy",
    }
    assert other_tasks(tmp_path / "transformer/lm/good.py", "transformer.lm", tmp_path) == set()
    assert within("transformer.text.train", *TASKS) and not within("transformer.textual", *TASKS)


def test_the_root_of_the_package_holds_only_the_ways_in():
    """The engine lives in core/, the analysis layer in analysis/, the CLI in cli/: the package's root
    keeps the public API, the loader and our own format."""
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root == ["__init__.py", "__main__.py", "bundle.py", "loader.py"]


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


def test_the_product_imports_no_benchmark_and_no_test():
    """bench/ and tests/ stand on the product; nothing of the product stands on them."""
    for path in product_files():
        bad = {m for m in absolute_imports(path) if m.split(".")[0] in ("bench", "tests")}
        assert bad == set(), f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_cli_is_a_way_in_that_nothing_in_the_package_stands_on():
    """Inside transformer/, only ``python -m transformer`` (__main__) imports the CLI; the app may (its
    downloads are the CLI's records)."""
    users = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.parent != PACKAGE / "cli" and any(within(m, "transformer.cli") for m in absolute_imports(path))
    }
    assert users == {"__main__.py"}


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
