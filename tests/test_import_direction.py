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
