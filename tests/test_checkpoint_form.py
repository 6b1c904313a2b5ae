"""The Checkpoints page's questions and assumptions table as pure functions (ui/checkpoint_questions.py)
and its literal escaping of file names (ui/checkpoint_upload.plain)."""

from __future__ import annotations

from transformer.checkpoints.options import ImportOptions
from transformer.core.tokenizer import Vocab
from ui.checkpoint_questions import (
    answers_to_options,
    assumption_rows,
    default_pad_id,
    head_choices,
    shown_value,
    within,
)
from ui.checkpoint_upload import plain


def test_head_choices_split_the_width_evenly_up_to_64_heads():
    assert head_choices(12) == [1, 2, 3, 4, 6, 12]
    assert head_choices(7) == [1, 7]
    assert head_choices(768)[-1] == 64 and all(768 % h == 0 for h in head_choices(768))


def test_a_value_outside_the_widgets_range_leaves_the_box_empty():
    assert within(5, 1, 10) == 5 and within(1, 1, 10) == 1
    assert within(5000, 1, 4096) is None


def test_the_padding_offered_first_is_the_vocabularys_then_the_checkpoints_then_1():
    vocab = Vocab.build([["the", "movie"]])
    assert default_pad_id(vocab, ["<unk>", "x", "<pad>"]) == vocab.pad_id
    assert default_pad_id(None, ["<unk>", "x", "<pad>"]) == 2
    assert default_pad_id(None, ["<unk>", "x"]) == 1 and default_pad_id(None, None) == 1


def test_answers_at_their_default_or_empty_are_not_passed():
    unchanged = {"num_heads": 4, "pad_id": 1, "pooling": "mean"}
    answers = {"num_heads": 4, "pad_id": 3.0, "pooling": None, "label_names": " neg, ,pos ", "pe_base": 500}
    options = answers_to_options(answers, unchanged)
    assert options == ImportOptions(pad_id=3, label_names=("neg", "pos"), pe_base=500.0)
    assert isinstance(options.pad_id, int) and isinstance(options.pe_base, float)
    assert answers_to_options({"num_heads": 4}, unchanged) == ImportOptions()


def test_assumed_values_are_shown_short_and_named_in_both_languages():
    assert [shown_value(v) for v in ([1, 2], 10000.0, 1e-12, None, "mean")] == ["1, 2", "10000", "1e-12", "—", "mean"]
    assumptions = {
        "num_heads": {"value": 4, "source": "user"},
        "bos": {"value": "<s>", "source": "vocabulary"},
        "d_model": {"value": 16, "source": "somewhere new"},
    }
    assert assumption_rows(assumptions, "en") == [
        ("Number of attention heads", "4", "your answer"),
        ("Start token", "<s>", "the vocabulary"),
        ("d_model", "16", "somewhere new"),  # a setting or source the catalogue does not name, as it is
    ]
    korean = assumption_rows(assumptions, "ko")
    assert korean[0] == ("어텐션 헤드 수", "4", "내 답") and korean[1][::2] == ("시작 토큰", "어휘 사전")


def test_file_names_are_shown_literally():
    assert plain("my_model[1].pt") == r"my\_model\[1\]\.pt"
    assert plain("**bold** `x`") == r"\*\*bold\*\* \`x\`"
