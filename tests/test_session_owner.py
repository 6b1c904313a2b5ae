"""The session has one owner: ``st.session_state`` appears in ``ui/session.py`` and, in a page, only
under the keys of widgets that page draws (listed below, key expression by key expression). A page's
other bookkeeping (a seed, a click count) is a named entry of ``ui.session``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWNER = ROOT / "ui" / "session.py"

# page -> the key expressions it may use with st.session_state (as written in the page's source)
WIDGET_KEYS = {  # widgets the page draws: set before drawing, read in callbacks, dropped when invalid
    "attention.py": {"key", "'window'", "'grid'", "'layer'", "'head'", "'view'"},
    "checkpoints.py": {"f'ckpt_{key}_{fid}'"},
    "classifier.py": {"RANK_KEY", "__setitem__"},
    "generate.py": {"PROMPT_KEY", "choice_key"},
    "head_atlas.py": {"'atlas_model'", "key", "'atlas_layer'", "'atlas_head'"},
    "masks.py": {"VIEW_KEY", "chart", "key"},
    "positional_encoding.py": {"key"},
    "translate.py": {"MODEL_KEY", "TEXT_KEY", "EXAMPLE_KEY", "key"},
    "vision.py": {"key", "patch_click_key(name)", "'vprow'", "'vpcol'"},
}


def session_state_uses(path: Path) -> list[tuple[int, str]]:
    """(line, key expression) of every ``st.session_state`` in ``path`` (code, not docstrings)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "session_state" and _is_st(node.value):
            uses.append((node.lineno, _key_of(node, parents)))
    return sorted(uses)


def _is_st(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "st"


def _key_of(node: ast.AST, parents: dict) -> str:
    """The key a use of st.session_state reads or writes; '<whole>' when the state itself is handed on."""
    parent = parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return ast.unparse(parent.slice)
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return ast.unparse(parent.left)
    if isinstance(parent, ast.Attribute):
        call = parents.get(parent)
        if isinstance(call, ast.Call) and call.func is parent and call.args:
            return ast.unparse(call.args[0])
        return parent.attr
    return "<whole>"


def product_files() -> list[Path]:
    return [ROOT / "streamlit_app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]


def test_only_the_session_module_touches_session_state_outside_pages():
    found = {
        f"{path.relative_to(ROOT)}:{line}: {key}"
        for path in product_files()
        if path.parent.name != "pages" and path != OWNER
        for line, key in session_state_uses(path)
    }
    assert found == set(), "use ui.session instead: " + ", ".join(sorted(found))


def test_pages_touch_only_the_keys_of_widgets_they_draw():
    wrong = []
    for path in sorted((ROOT / "pages").glob("*.py")):
        allowed = WIDGET_KEYS.get(path.name, set())
        wrong += [f"pages/{path.name}:{line}: {key}" for line, key in session_state_uses(path) if key not in allowed]
    assert wrong == [], "a page may only use the keys of widgets it draws (else ui.session): " + ", ".join(wrong)


def test_the_scan_sees_every_kind_of_use(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        "import streamlit as st\n"
        "st.session_state['a'] = 1\n"
        "x = st.session_state.get(KEY, 0)\n"
        "if key in st.session_state:\n"
        "    del st.session_state[key]\n"
        "st.session_state.pop(f'k_{i}', None)\n"
        "'''st.session_state in a docstring is not a use'''\n",
        encoding="utf-8",
    )
    assert session_state_uses(page) == [(2, "'a'"), (3, "KEY"), (4, "key"), (5, "key"), (6, "f'k_{i}'")]


def test_the_session_module_is_where_the_state_lives():
    assert len(session_state_uses(OWNER)) >= 10


def test_every_upload_key_released_at_the_end_of_a_session_is_one_something_writes():
    from ui.upload_memory import HEAVY_KEYS

    sources = [p.read_text(encoding="utf-8") for p in product_files() if p.name != "upload_memory.py"]
    unwritten = [key for key in HEAVY_KEYS if not any(f'"{key}"' in source for source in sources)]
    assert unwritten == [], "no page or ui module keeps these any more: " + ", ".join(unwritten)
