"""What the app takes from Streamlit's non-public objects (ui/streamlit_internals.py) is still there: an
upgrade that moves or renames any of it fails here, by name, instead of quietly breaking the shell."""

import ast
import importlib
from pathlib import Path

import pytest

from ui import streamlit_internals

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module, name, attributes", streamlit_internals.RELIED_ON)
def test_each_relied_on_object_exists(module, name, attributes):
    obj = getattr(importlib.import_module(module), name)
    if name == "ScriptRunContext":  # a dataclass: its fields are the attributes
        import dataclasses

        fields = {f.name for f in dataclasses.fields(obj)}
        missing = [a for a in attributes if a not in fields]
    else:
        missing = [a for a in attributes if not hasattr(obj, a)]
    assert missing == [], f"Streamlit's {module}.{name} lacks {missing}: update ui/streamlit_internals.py"


def test_the_run_mark_is_new_for_every_run_and_stable_within_one():
    from streamlit.testing.v1 import AppTest

    script = (
        "import streamlit as st\n"
        "from ui import streamlit_internals as i\n"
        "a, b = i.run_mark(), i.run_mark()\n"
        "st.session_state.setdefault('marks', []).append(id(a))\n"
        "st.markdown(str(a is b and a is not None))\n"
    )
    at = AppTest.from_string(script).run()
    at.run()
    assert [m.value for m in at.markdown] == ["True"]
    marks = at.session_state["marks"]
    assert len(marks) == 2


def test_outside_a_run_everything_answers_none():
    assert streamlit_internals.run_context() is None and streamlit_internals.run_mark() is None
    assert streamlit_internals.widget_id("text") is None and not streamlit_internals.is_fragment_run()
    assert streamlit_internals.runtime_session_active("nobody")  # no runtime: nothing to release


def test_no_other_module_reaches_into_streamlit_runtime():
    allowed = {"ui/streamlit_internals.py"}
    offenders = []
    for path in [*(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "streamlit_app.py"]:
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n.startswith("streamlit.runtime") for n in names) and rel not in allowed:
                offenders.append(rel)
    assert sorted(set(offenders)) == []
