"""The load test's protocol client (bench/load_protocol.py): how it reads ForwardMsgs and what it sends."""

import json
import re

import pytest
import streamlit  # noqa: F401  (before the protobufs)
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.load_protocol import HEATMAP_META, MAIN, SIDEBAR, View, rerun_message, string_state


def navigation(*pages: tuple[str, str], current: str) -> ForwardMsg:
    msg = ForwardMsg()
    for path, page_hash in pages:
        page = msg.navigation.app_pages.add()
        page.url_pathname, page.page_script_hash = path, page_hash
    msg.navigation.page_script_hash = current
    return msg


def new_session(page_hash: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.new_session.page_script_hash = page_hash
    return msg


def delta(path: tuple[int, ...], fragment: str = "", **element) -> ForwardMsg:
    """A new_element delta; ``element`` is one Element field, e.g. markdown={"body": "x"}."""
    msg = ForwardMsg()
    msg.metadata.delta_path.extend(path)
    msg.delta.fragment_id = fragment
    ((kind, fields),) = element.items()
    target = getattr(msg.delta.new_element, kind)
    for name, value in fields.items():
        if isinstance(value, list):
            getattr(target, name).extend(value)
        else:
            setattr(target, name, value)
    return msg


def block(path: tuple[int, ...]) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path.extend(path)
    msg.delta.add_block.SetInParent()
    return msg


def finished(status: int = ForwardMsg.FINISHED_SUCCESSFULLY) -> ForwardMsg:
    msg = ForwardMsg()
    msg.script_finished = status
    return msg


def heatmap_spec(title: str, labels: list[str]) -> str:
    return json.dumps(
        {"data": [{"type": "heatmap", "y": labels}], "layout": {"meta": HEATMAP_META, "title": {"text": title}}}
    )


def feed(view: View, *messages: ForwardMsg) -> View:
    for msg in messages:
        view.apply(ForwardMsg.FromString(msg.SerializeToString()))  # through the wire format
    return view


def attention_page(view: View, title: str, labels: list[str]) -> View:
    return feed(
        view,
        new_session("h-att"),
        delta((MAIN, 0), markdown={"body": "> the plot was great"}),
        delta((MAIN, 1), "frag-1", selectbox={"id": "w-layer", "label": "Layer", "options": ["1", "2"], "default": 0}),
        delta((MAIN, 2), "frag-1", plotly_chart={"spec": heatmap_spec(title, labels)}),
        delta(
            (SIDEBAR, 0), selectbox={"id": "w-model", "label": "Model", "options": ["a"], "query_param_key": "model"}
        ),
        finished(),
    )


def test_pages_come_from_the_navigation_and_the_default_page_keeps_its_path():
    view = feed(View(), navigation(("", "h-start"), ("start", "h-start"), ("attention", "h-att"), current="h-start"))
    assert view.pages == {"start": "h-start", "attention": "h-att"}
    assert view.page_hash == "h-start"


def test_widgets_are_found_by_label_or_bound_parameter_with_their_fragment():
    view = attention_page(View(), "Layer 1, head 1", ["0:the", "1:plot"])
    layer = view.widget("Layer", "selectbox")
    assert (layer.id, layer.fragment_id, layer.options, layer.value) == ("w-layer", "frag-1", ["1", "2"], "1")
    assert view.widget("Layer", "selectbox", root=SIDEBAR) is None
    assert view.widget("model", "selectbox", root=SIDEBAR).id == "w-model"
    assert view.finished == 1 and not view.running


def test_heatmap_and_quote_are_read_from_the_elements():
    view = attention_page(View(), "Layer 1, head 1", ["0:the", "1:plot"])
    assert view.heatmap() == {"title": "Layer 1, head 1", "y": ["0:the", "1:plot"]}
    assert view.markdown_contains("the plot was great")
    assert not view.markdown_contains("the plot was great", root=SIDEBAR)
    assert view.contains("1:plot") and not view.contains("the acting was dull")


def test_names_are_matched_whole():
    view = feed(View(), delta((MAIN, 0), markdown={"body": "model loadtest-s10 selected"}))
    assert view.matches(re.compile(rb"loadtest-s10(?!\d)"))
    assert not view.matches(re.compile(rb"loadtest-s1(?!\d)"))


def test_a_full_run_drops_what_it_did_not_draw_again():
    view = attention_page(View(), "Layer 1, head 1", ["0:the"])
    feed(view, new_session("h-play"), delta((MAIN, 0), text_area={"id": "w-text", "label": "Sentences"}))
    assert view.heatmap() is not None  # still running: the old page's elements are still there
    feed(view, finished())
    assert view.heatmap() is None and view.widget("Layer", "selectbox") is None
    assert view.widget("Sentences", "text_area").id == "w-text"


def test_a_block_replaces_the_element_at_its_place():
    view = attention_page(View(), "t", ["0:the"])
    feed(view, new_session("h-att"), block((MAIN, 0)))
    assert not view.markdown_contains("the plot was great")


def test_a_fragment_run_replaces_only_its_own_elements():
    view = attention_page(View(), "Layer 1, head 1", ["0:the"])
    view.started()
    feed(
        view,
        delta((MAIN, 2), "frag-1", plotly_chart={"spec": heatmap_spec("Layer 2, head 1", ["0:the"])}),
        finished(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY),
    )
    assert view.heatmap()["title"] == "Layer 2, head 1"
    assert view.widget("Layer", "selectbox") is None  # in the fragment, not drawn again
    assert view.markdown_contains("the plot was great")  # outside the fragment: kept
    assert view.finished == 2


def test_an_early_stop_for_a_rerun_is_not_a_finished_run():
    view = feed(View(), new_session("h"), finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN))
    assert view.finished == 0


def test_exceptions_and_unknown_references_are_recorded():
    msg = ForwardMsg()
    msg.ref_hash = "abc"
    view = feed(View(), delta((MAIN, 0), exception={"type": "ValueError", "message": "bad"}), msg)
    assert view.exceptions == ["ValueError: bad"]
    assert view.protocol_errors and "abc" in view.protocol_errors[0]


def test_a_reference_draws_the_cached_element_at_its_own_place():
    big = delta((MAIN, 2), "frag-1", plotly_chart={"spec": heatmap_spec("Layer 1, head 1", ["0:the"])})
    big.hash, big.metadata.cacheable = "h1", True
    view = feed(View(), new_session("h-att"), big, finished())
    assert list(view.cache) == ["h1"]
    ref = ForwardMsg()
    ref.ref_hash = "h1"
    ref.metadata.delta_path.extend((MAIN, 5))
    feed(view, new_session("h-att"), ref, finished())
    assert set(view.elements) == {(MAIN, 5)} and view.heatmap()["title"] == "Layer 1, head 1"
    assert not view.protocol_errors


def test_the_rerun_message_carries_page_fragment_address_and_widget_values():
    states = {"w-layer": string_state("w-layer", "2")}
    sent = rerun_message("lang=en&layer=2", states, page_hash="h-att", fragment_id="frag-1", cached=["h1"])
    state = BackMsg.FromString(sent).rerun_script
    assert list(state.cached_message_hashes) == ["h1"]
    assert (state.query_string, state.page_script_hash, state.fragment_id) == ("lang=en&layer=2", "h-att", "frag-1")
    assert [(w.id, w.string_value) for w in state.widget_states.widgets] == [("w-layer", "2")]


def test_a_hostile_upload_reads_as_exception_refusal_or_acceptance():
    assert View().outcome() is None  # nothing decided yet
    refused = feed(View(), delta((MAIN, 0), alert={"body": r"Refused runs\_code\.pt\: a pickle", "format": 1}))
    assert refused.outcome() == "refused: Refused runs_code.pt: a pickle"  # markdown escapes removed, as shown
    warned = feed(View(), delta((MAIN, 0), alert={"body": "too big", "format": 2}))
    assert warned.outcome() == "refused: too big"
    info = feed(View(), delta((MAIN, 0), alert={"body": "note", "format": 3}))
    assert info.outcome() is None
    accepted = feed(View(), delta((MAIN, 0), button={"id": "w-use", "label": "Use", "type": "primary"}))
    assert accepted.outcome() == "accepted"
    sidebar_error = feed(View(), delta((SIDEBAR, 0), alert={"body": "sidebar", "format": 1}))
    assert sidebar_error.outcome() is None  # the main area's outcome only
    raised = feed(
        View(),
        delta((MAIN, 0), alert={"body": "refused", "format": 1}),
        delta((MAIN, 1), exception={"type": "ValueError", "message": "bad"}),
    )
    assert raised.outcome() == "exception"


def test_hostile_sessions_speak_the_protocol_unless_asked_for_chromium(monkeypatch):
    from argparse import Namespace

    from bench.load_protocol import hostile_client

    monkeypatch.delenv("LOAD_HOSTILE_CLIENT", raising=False)
    assert hostile_client(Namespace()) == "protocol"
    monkeypatch.setenv("LOAD_HOSTILE_CLIENT", "browser")
    assert hostile_client(Namespace()) == "browser"
    assert hostile_client(Namespace(hostile_client="protocol")) == "protocol"  # the flag wins
    monkeypatch.setenv("LOAD_HOSTILE_CLIENT", "firefox")
    with pytest.raises(ValueError):
        hostile_client(Namespace())
