"""The template sentences about negation and contrast added to English sentiment training."""

from transformer.text.contrast import HELD_OUT, NEGATIVE, POSITIVE, contrast_sentences


def test_balanced_repeatable_and_never_uses_the_held_out_words():
    first, again = contrast_sentences(600, seed=3), contrast_sentences(600, seed=3)
    assert [(e.text, e.label) for e in first] == [(e.text, e.label) for e in again]
    assert sum(e.label for e in first) == 300
    words = {w for e in first for w in e.text.replace(",", " ").split()}
    assert not words & set(HELD_OUT)


def test_negation_flips_and_the_clause_after_but_decides():
    checked = 0
    for e in contrast_sentences(3000, seed=1):
        words = e.text.split()
        if e.text.startswith("not a ") and words[-2] in POSITIVE + NEGATIVE:  # "not a [very] <adj> <noun>"
            assert e.label == int(words[-2] in NEGATIVE), e.text
            checked += 1
        if e.text.startswith(("i expected it to be ", "i thought it would be ")):  # "... but it was <adj>"
            assert e.label == int(words[-1] in POSITIVE), e.text
            checked += 1
        if e.text.startswith(("i did not ", "i didn't ", "i would not ")):
            assert e.label == 0, e.text
            checked += 1
    assert checked > 300
