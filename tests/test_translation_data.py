"""The translation generators: hand-checked alignments, particles by final consonant, held-out
combinations absent from training, and the reference alignment the page uses."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from transformer.core.tokenizer import basic_english, basic_english_digits
from transformer.translation import dates, get_task, word_order
from transformer.translation import lexicon as lx
from transformer.translation.alignment import reference_alignment
from transformer.translation.vocab import alignment_tensor, batch_tensors, build_vocabs

SUBJ, OBJ, VERB, ADJ = (dict(x) for x in (lx.SUBJECTS, lx.OBJECTS, lx.VERBS, lx.ADJECTIVES))
PLACE = {p[2]: p for p in lx.PLACES}


def entry(table: dict, word: str) -> tuple[str, str]:
    return word, table[word]


def test_the_issue_example_with_its_alignment():
    pair = word_order.make_pair(
        entry(SUBJ, "cat"), entry(VERB, "reads"), entry(OBJ, "letter"), "the", "a", entry(ADJ, "red"), entry(ADJ, "big"),
        PLACE["home"], ("today", "오늘"),
    )  # fmt: skip
    assert pair.text == "the red cat reads a big letter at home today"
    assert pair.target_text == "오늘 빨간 고양이 는 집 에서 큰 편지 를 읽는다"
    # the0 red1 cat2 reads3 a4 big5 letter6 at7 home8 today9
    assert pair.alignment == (9, 1, 2, None, 8, None, 5, 6, None, 3)


def test_indefinite_subject_takes_the_subject_particle():
    pair = word_order.make_pair(entry(SUBJ, "teacher"), entry(VERB, "opens"), entry(OBJ, "window"), "a", "the")
    assert pair.text == "a teacher opens the window"
    assert pair.target_text == "선생님 이 창문 을 연다"
    assert pair.alignment == (1, None, 4, None, 2)


def test_time_first_in_english_still_goes_first_in_korean():
    pair = word_order.make_pair(
        entry(SUBJ, "bear"), entry(VERB, "eats"), entry(OBJ, "rice"), "the", "the", None, entry(ADJ, "white"),
        PLACE["kitchen"], ("now", "지금"), time_first=True,
    )  # fmt: skip
    assert pair.text == "now the bear eats the white rice in the kitchen"
    assert pair.target_text == "지금 곰 은 부엌 에서 하얀 밥 을 먹는다"
    assert pair.alignment == (0, 2, None, 9, None, 5, 6, None, 3)


@pytest.mark.parametrize(
    ("noun", "final"), [("책", True), ("사과", False), ("학생", True), ("개", False), ("선생님", True), ("열쇠", False)]
)
def test_final_consonant_by_syllable_arithmetic(noun, final):
    assert lx.has_final_consonant(noun) is final


def test_particle_forms():
    assert lx.particle("책", lx.OBJECT) == "을" and lx.particle("사과", lx.OBJECT) == "를"
    assert lx.particle("학생", lx.TOPIC) == "은" and lx.particle("아이", lx.TOPIC) == "는"
    assert lx.particle("곰", lx.SUBJECT) == "이" and lx.particle("개", lx.SUBJECT) == "가"
    with pytest.raises(ValueError):
        lx.has_final_consonant("cat")


def test_every_generated_particle_fits_the_noun_before_it():
    forms = {lx.TOPIC[0], lx.TOPIC[1], lx.SUBJECT[0], lx.SUBJECT[1], lx.OBJECT[0], lx.OBJECT[1]}
    pairs = word_order.generate(500, seed=3)
    checked = 0
    for pair in pairs:
        for j, token in enumerate(pair.target):
            if token in forms:
                with_final = token in (lx.TOPIC[0], lx.SUBJECT[0], lx.OBJECT[0])
                assert lx.has_final_consonant(pair.target[j - 1]) is with_final, pair.target_text
                assert pair.alignment[j] is None
                checked += 1
    assert checked == 2 * len(pairs)


NOUN = dict(lx.NOUNS)


def subject_verb(pair) -> tuple[str, str]:
    verb = next(i for i, w in enumerate(pair.source) if w in VERB)
    return pair.source[verb - 1], pair.source[verb]


def roles(pair) -> tuple[str, str]:
    """(subject, object) of a generated sentence: the nouns before and after the verb."""
    verb = next(i for i, w in enumerate(pair.source) if w in VERB)
    return pair.source[verb - 1], next(w for w in pair.source[verb + 1 :] if w in NOUN)


def test_every_noun_is_seen_as_subject_and_as_object_in_training():
    seen = [roles(p) for p in word_order.generate(4000, seed=2)]
    assert {s for s, _ in seen} == set(NOUN) == {o for _, o in seen}
    assert all(s != o for s, o in seen)


def test_held_out_subject_verb_pairs_never_reach_training():
    held = word_order.held_out_pairs()
    assert len(held) == round(0.2 * len(NOUN) * len(VERB))
    assert not {subject_verb(p) for p in word_order.generate(3000, seed=0)} & held
    assert {subject_verb(p) for p in word_order.generate(500, seed=1, split="test")} <= held


def test_dates_hand_checked():
    pair = dates.make_pair(dt.date(2018, 5, 9), "{W} the {O} of {M} {Y}")
    assert pair.text == "wednesday the 9th of may 2018"
    assert pair.source == ("wednesday", "the", "9", "th", "of", "may", "2", "0", "1", "8")
    assert "".join(pair.target) == "2018-05-09"
    # each year digit at its own digit, both month digits at the name, the day's "0" from nowhere
    assert pair.alignment == (6, 7, 8, 9, None, 5, 5, None, None, 2)
    dotted = dates.make_pair(dt.date(2001, 9, 11), "{D}.{N}.{Y}")
    assert dotted.text == "11.9.2001"
    assert dotted.source == ("1", "1", ".", "9", ".", "2", "0", "0", "1")
    assert dotted.alignment == (5, 6, 7, 8, None, None, 3, None, 0, 1)
    iso = dates.make_pair(dt.date(2021, 3, 3), "{Y}-{NN}-{DD}")
    assert iso.text == "2021-03-03" and iso.alignment == (0, 1, 2, 3, None, 5, 6, None, 8, 9)
    short = dates.make_pair(dt.date(1999, 12, 31), "{NN}/{DD}/{YY}")
    assert short.text == "12/31/99" and "".join(short.target) == "1999-12-31"
    assert short.alignment[:4] == (None, None, 6, 7)  # the century is read from nowhere
    side_by_side = dates.make_pair(dt.date(1938, 11, 15), "{A} {D} {Y}")
    assert side_by_side.source == ("nov", "1", "5", "␣", "1", "9", "3", "8")
    with pytest.raises(ValueError, match="two digits"):
        dates.make_pair(dt.date(1920, 1, 1), "{DD}.{NN}.{YY}")
    assert [dates.ordinal(d) for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"
    ]  # fmt: skip


@pytest.mark.parametrize(("yy", "year"), [("00", 2000), ("21", 2021), ("68", 2068), ("69", 1969), ("99", 1999)])
def test_two_digit_years_follow_posix(yy, year):
    assert dates.two_digit_year(int(yy)) == year
    assert dates.read_date(basic_english_digits(f"03.04.{yy}")).year == year


def test_every_format_is_generated_and_read_back_by_the_rules():
    seen = set()
    for fmt in dates.FORMATS:
        for pair in [dates.sample_in_format(random.Random(k), fmt) for k in range(40)]:
            reading = dates.read_date(pair.source)
            assert f"{reading.year:04d}-{reading.month:02d}-{reading.day:02d}" == "".join(pair.target)
            assert tuple(reading.alignment()) == pair.alignment
            seen.add(pair.target[0] + pair.target[1])
    assert seen == {"19", "20"}  # both centuries


def test_years_from_1900_to_2099_are_drawn():
    years = {int("".join(p.target[:4])) for p in dates.generate(6000, seed=4)}
    assert min(years) < 1910 and max(years) > 2090


def test_dates_are_real_and_held_out_months_stay_out():
    held = dates.held_out_months()
    for split, inside in (("train", False), ("test", True)):
        for pair in dates.generate(800, seed=5, split=split):
            day = dt.date.fromisoformat("".join(pair.target))  # raises on an impossible date
            assert ((day.year, day.month) in held) is inside
            weekdays = [w for w in pair.source if w in dates.WEEKDAYS]
            assert all(w == dates.WEEKDAYS[day.weekday()] for w in weekdays)


@pytest.mark.parametrize("name", ["word-order", "dates"])
def test_sources_tokenise_as_generated_and_reference_alignment_agrees(name):
    task = get_task(name)
    split = basic_english_digits if name == "dates" else basic_english
    for pair in task.generate(300, seed=7) + task.examples():
        assert split(pair.text) == list(pair.source)
        assert reference_alignment(name, pair.source, pair.target) == list(pair.alignment)


def test_vocabularies_and_batches():
    task = get_task("word-order")
    source, target = build_vocabs(task)
    assert target.itos[:4] == ["<unk>", "<pad>", "<bos>", "<eos>"] and source.itos[:2] == ["<unk>", "<pad>"]
    pairs = word_order.examples()[:2]
    src, tgt = batch_tensors(pairs, source, target)
    assert src.shape == (2, max(len(p.source) for p in pairs))
    assert tgt[0, 0] == 2 and tgt[0, len(pairs[0].target) + 1] == 3
    gold = alignment_tensor(pairs, tgt.shape[1] - 1)
    assert gold[1, : len(pairs[1].target)].tolist() == [1, -1, 4, -1, 2]
    assert (gold[1, len(pairs[1].target) :] == -1).all()


def test_particles_are_written_onto_the_word_before_them():
    from transformer.translation import get_task

    task = get_task("word-order")
    assert task.written(["고양이", "는", "집", "에서", "책", "을", "읽는다"]) == "고양이는 집에서 책을 읽는다"
    assert task.written(["는", "고양이", "가", "가끔"]) == "는 고양이가 가끔"  # nothing before: stays a word
    assert get_task("dates").written(["2", "0", "1", "8", "-"]) == "2018-"
