"""Playground: type sentences, run the model, see each prediction and the tokens the model saw."""

import pandas as pd
import streamlit as st

from transformer import AnalysisResult
from ui.markdown import LEGEND, md_escape, token_chips
from ui.models import current_selection, run_analysis
from ui.text import split_lines, text_box

DETAILS_OPEN = 5  # with more sentences than this, each one's details sit in a closed expander
SNIPPET_CHARS = 90
QUOTE_CHARS = 600  # a 10,000-word input is quoted this far; its tokens follow anyway


def analysis_or_stop(selection, lines: list[str]) -> AnalysisResult:
    """The analysis of ``lines``, or a message and a stop (never an exception on the page)."""
    if not lines:
        st.info("Type a sentence in the box above (or pick an example), then press **Run**.")
        st.stop()
    try:
        return run_analysis(selection, lines)
    except ValueError as err:
        st.error(f"These sentences cannot be run: {err}")
        st.stop()


def summary_table(result: AnalysisResult) -> pd.DataFrame:
    """One row per input: text, prediction, its probability, token counts."""
    rows = []
    for i, text in enumerate(result.texts):
        prediction = result.prediction(i)
        rows.append(
            {
                "#": i + 1,
                "sentence": text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…",
                "prediction": prediction["label"] if prediction else "—",
                "probability": prediction["probabilities"][prediction["label"]] if prediction else None,
                "tokens": len(result.tokens[i]),
                "unknown": int(sum(result.unknown[i])),
                "cut off": result.original_lengths[i] - len(result.tokens[i]),
            }
        )
    return pd.DataFrame(rows).set_index("#")


def warnings_for(result: AnalysisResult, i: int) -> None:
    """Say plainly when the model read only part of the input, or none of its words."""
    if result.truncated[i]:
        st.warning(
            f"This input has {result.original_lengths[i]:,} tokens; the model read the first "
            f"{len(result.tokens[i]):,} (the maximum length, set in the sidebar)."
        )
    unknown = result.unknown[i]
    if unknown and all(unknown):
        st.warning(
            "None of these words is in the model's vocabulary (it learned English movie reviews), "
            "so every token became `<unk>` and the prediction says little about the text."
        )


def prediction_block(result: AnalysisResult, i: int) -> None:
    prediction = result.prediction(i)
    if prediction is None:
        st.caption("This model has no classifier head: it shows tokens and attention only.")
        return
    st.metric("Prediction", prediction["label"], help="The label with the highest probability.")
    for name, p in sorted(prediction["probabilities"].items(), key=lambda kv: -kv[1]):
        st.progress(min(max(p, 0.0), 1.0), text=f"{md_escape(name)}: {p:.1%}")


def input_details(result: AnalysisResult, i: int) -> None:
    """The sentence, its prediction, and its tokens as chips (user text always escaped)."""
    left, right = st.columns([3, 1])
    with left:
        text = result.texts[i]
        more = f" … ({len(text) - QUOTE_CHARS:,} more characters)" if len(text) > QUOTE_CHARS else ""
        st.markdown(f"> {md_escape(text[:QUOTE_CHARS])}{more}")
        cut = result.original_lengths[i] - len(result.tokens[i])
        st.markdown(token_chips(result.tokens[i], result.unknown[i], cut))
        warnings_for(result, i)
    with right:
        prediction_block(result, i)


def timing_caption(result: AnalysisResult) -> str:
    t = result.timings_ms
    n = len(result.texts)
    return (
        f"Ran on **{result.device.upper()}** ({result.dtype}) in {t['total']:.1f} ms for {n} input{'s' * (n != 1)} "
        f"(tokenising {t['tokenize']:.1f} ms, model {t['forward']:.1f} ms), measured when this input was first "
        "run; running it again reads the stored result."
    )


st.title("Playground")
st.caption("Type one sentence or several (one per line) and see what the model predicts and which tokens it saw.")
selection = current_selection()
lines = split_lines(text_box())
st.button("Run", type="primary", help="Runs the sentences in the box (Ctrl+Enter in the box does the same).")
result = analysis_or_stop(selection, lines)

st.caption(timing_caption(result))
st.dataframe(
    summary_table(result),
    width="stretch",
    column_config={
        "probability": st.column_config.ProgressColumn("probability", min_value=0.0, max_value=1.0, format="percent")
    },
)
st.markdown(LEGEND)
for i in range(len(result.texts)):
    title = f"{i + 1}. {md_escape(result.predicted_label(i) or 'tokens')}"
    if len(result.texts) <= DETAILS_OPEN:
        st.subheader(title, divider="gray")
        input_details(result, i)
    else:
        with st.expander(title, expanded=i == 0):
            input_details(result, i)
