"""The class store on both backends (one test file, a parametrised fixture): concurrent writers across
processes, a restart in the middle, expiry, who may do what, caps and bad input. PostgreSQL is the URL
scripts/test.sh exports (``ATTENTION_LAB_TEST_PG``), else a server these tests start themselves; the
PostgreSQL cases are skipped only where no PostgreSQL is installed, and the skip says so."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests import postgres_server
from ui.classroom.store import (
    CODE_ALPHABET,
    CODE_LENGTH,
    JOINS_PER_CLIENT,
    KEEP_AFTER_EXPIRY_S,
    NICKNAME_MAX,
    RATE_WINDOW_S,
    WRITES_PER_STUDENT,
    WRONG_CODES,
    ClassError,
    Lead,
    normalize_code,
    open_store,
    store_location,
)
from ui.classroom.store_sqlite import SqliteBackend

PG_ENV = "ATTENTION_LAB_TEST_PG"


@pytest.fixture(scope="session")
def postgres_url():
    if os.environ.get(PG_ENV):
        yield os.environ[PG_ENV]
        return
    if postgres_server.binaries() is None:
        pytest.skip(
            "PostgreSQL is not installed here (Debian package postgresql): its half of the store tests is skipped"
        )
    folder = postgres_server.new_folder()
    url = postgres_server.start(folder)
    yield url
    postgres_server.stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


def fresh_schema(url: str) -> str:
    """``url`` with a new empty schema of its own first on the search path (one per test)."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {name}")
    return f"{url}?options=-csearch_path%3D{name}"


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "data" / "classroom.sqlite3")
    return fresh_schema(request.getfixturevalue("postgres_url"))


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def started(location: str, options: int = 4, answer: int = 2, clock=None):
    store = open_store(location, clock or time.time)
    code, secret = store.start_class("en")
    reveal = {"values": [round(0.1 * i, 1) for i in range(options)]}
    number = store.ask(code, secret, "label", {"text": "the movie was great"}, options, answer, reveal)
    return store, code, secret, number


# ---- concurrency and restarts ------------------------------------------------------------------------------------
def _writers(location: str, code: str, number: int, first: int, threads: int, done) -> None:
    """``threads`` students of one process, each joining, answering, changing their mind twice."""
    store = open_store(location)

    def student(i: int) -> None:
        me = store.join(code, f"client-{i}", nickname=f"s{i}")
        for choice in (i % 4, (i + 1) % 4, final_choice(i)):
            store.answer(code, me, number, choice)
        done.put((i, me))

    workers = [threading.Thread(target=student, args=(first + k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    store.close()


def start_clean(proc) -> None:
    """Start a spawned process as a fresh interpreter: Streamlit's AppTest (earlier tests in this process)
    leaves the app script as ``__main__``, and a spawned child would run that whole script first."""
    import sys
    import types

    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        proc.start()
    finally:
        sys.modules["__main__"] = main


def final_choice(i: int) -> int:
    return (i * 7) % 4


def test_forty_writers_in_four_processes_are_each_counted_once(location):
    store, code, secret, number = started(location)
    spawn = multiprocessing.get_context("spawn")
    done = spawn.Queue()
    procs = [spawn.Process(target=_writers, args=(location, code, number, 10 * p, 10, done)) for p in range(4)]
    for proc in procs:
        start_clean(proc)
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    finished = [done.get(timeout=10) for _ in range(40)]
    assert sorted(i for i, _ in finished) == list(range(40))
    tally = store.tally(code, number, secret)
    expected = [sum(1 for i in range(40) if final_choice(i) == c) for c in range(4)]
    assert tally.answered == 40 and tally.counts == expected
    assert store.answered(code, number) == 40
    assert sorted(n for names in tally.nicknames for n in names) == sorted(f"s{i}" for i in range(40))
    assert all(store.my_answer(code, me, number) == final_choice(i) for i, me in finished)


def _answer_forever(location: str, code: str, number: int, acknowledged) -> None:
    store = open_store(location)
    for i in range(10_000):
        me = store.join(code, "lab", nickname=f"p{i}")
        store.answer(code, me, number, i % 3)
        acknowledged.put((me, i % 3))  # only after the answer's transaction committed


def test_a_restart_in_the_middle_loses_nothing(location, request):
    store, code, secret, number = started(location, options=3)
    spawn = multiprocessing.get_context("spawn")
    acknowledged = spawn.Queue()
    writer = spawn.Process(target=_answer_forever, args=(location, code, number, acknowledged))
    start_clean(writer)
    seen = [acknowledged.get(timeout=60) for _ in range(25)]
    os.kill(writer.pid, signal.SIGKILL)  # the server process dies between (or inside) two transactions
    writer.join(10)
    while not acknowledged.empty():
        seen.append(acknowledged.get(timeout=5))
    store.close()
    again = open_store(location)  # a new server process
    for me, choice in seen:
        assert again.my_answer(code, me, number) == choice
    answered = again.answered(code, number)
    assert answered >= len(seen)  # the one in flight may have committed before the kill
    late = again.join(code, "late")
    again.answer(code, late, number, 1)
    assert again.tally(code, number, secret).answered == answered + 1


def test_postgres_restart_between_answers_loses_nothing(request):
    if os.environ.get(PG_ENV):
        pytest.skip("restarts only a server these tests started themselves (the exported one is shared)")
    request.getfixturevalue("postgres_url")  # skips without PostgreSQL
    folder = postgres_server.new_folder()
    url = fresh_schema(postgres_server.start(folder))
    try:
        store, code, secret, number = started(url, options=3)
        first = [store.join(code, "c") for _ in range(5)]
        for i, me in enumerate(first):
            store.answer(code, me, number, i % 3)
        postgres_server.restart(folder)  # every connection is cut
        second = store.join(code, "c")  # the store reconnects
        store.answer(code, second, number, 2)
        tally = store.tally(code, number, secret)
        assert tally.answered == 6 and tally.counts == [2, 2, 2]
    finally:
        postgres_server.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


# ---- expiry --------------------------------------------------------------------------------------------------
def test_a_class_expires_and_is_purged_a_day_later(location):
    clock = Clock()
    store, code, secret, number = started(location, clock=clock)
    me = store.join(code, "c")
    store.answer(code, me, number, 1)
    clock.now += 4 * 3600  # CLASS_HOURS later
    for call in (
        lambda: store.join(code, "c"),
        lambda: store.answer(code, me, number, 2),
        lambda: store.ask(code, secret, "label", {}, 2, 0),
        lambda: store.current(code),
    ):
        with pytest.raises(ClassError) as refused:
            call()
        assert refused.value.reason == "expired"
    assert store.tally(code, number, secret).counts == [0, 1, 0, 0]  # the teacher can still export
    assert len(store.questions(code, secret)) == 1
    clock.now += KEEP_AFTER_EXPIRY_S + 1
    store.start_class("en")  # starting a class purges the old ones
    with pytest.raises(ClassError) as gone:
        store.join(code, "c")
    assert gone.value.reason == "unknown_code"


# ---- who may do what ----------------------------------------------------------------------------------------------
def reason(call, *args) -> str:
    with pytest.raises(ClassError) as refused:
        call(*args)
    return refused.value.reason


def test_only_the_teacher_asks_reveals_reopens_closes_and_reads_answers_before_the_reveal(location):
    store, code, secret, number = started(location)
    other_code, other_secret = store.start_class("en")  # a second teacher
    assert other_code != code and other_secret != secret
    me = store.join(code, "c")
    store.answer(code, me, number, 3)
    for wrong in ("", "guess", other_secret):
        assert reason(store.ask, code, wrong, "label", {}, 2, 0) == "not_teacher"
        assert reason(store.reveal, code, wrong, number) == "not_teacher"
        assert reason(store.reopen, code, wrong, number) == "not_teacher"
        assert reason(store.close_class, code, wrong) == "not_teacher"
        assert reason(store.questions, code, wrong) == "not_teacher"
        assert reason(store.tally, code, number, wrong) == "not_teacher"
    assert reason(lambda: store.tally(code, number)) == "not_teacher"  # a student, before the reveal
    assert store.current(code).answer is None  # the model's answer is hidden from students
    assert store.current(code).reveal is None  # and so are its numbers
    assert store.questions(code, secret)[0].answer == 2  # but not from the teacher
    store.reveal(code, secret, number)
    assert store.current(code).answer == 2 and store.current(code).reveal == {"values": [0.0, 0.1, 0.2, 0.3]}
    assert store.tally(code, number).counts == [0, 0, 0, 1]  # everyone, after it
    assert reason(lambda: store.answer(code, me, number, 0)) == "revealed"
    assert store.my_answer(code, me, number) == 3


def test_two_teacher_screens_one_leads_and_the_other_takes_the_lead_only_when_asked(location):
    clock = Clock()
    store = open_store(location, clock)
    code, secret = store.start_class("en", screen="projector")
    number = store.ask(code, secret, "label", {}, 2, 0, screen="projector")
    clock.now += 30
    assert store.lead(code, secret, "projector") == Lead(True, clock.now)  # the poll: seen now
    laptop = store.lead(code, secret, "laptop")  # a second screen with the key (the Resume form)
    assert laptop == Lead(False, clock.now)  # told when the leading screen was last seen
    clock.now += 5
    assert reason(store.ask, code, secret, "label", {}, 2, 0, None, "laptop") == "not_leading"
    assert reason(store.reveal, code, secret, number, "laptop") == "not_leading"
    assert reason(store.reopen, code, secret, number, "laptop") == "not_leading"
    assert reason(store.close_class, code, secret, "laptop") == "not_leading"
    assert store.info(code).questions == 1 and not store.current(code).revealed and not store.info(code).closed
    assert reason(store.lead, code, "wrong", "laptop", True) == "not_teacher"  # taking the lead needs the key
    assert store.lead(code, secret, "laptop", take=True) == Lead(True, clock.now)
    assert store.lead(code, secret, "projector").mine is False  # the first screen's next poll sees it
    store.reveal(code, secret, number, "laptop")
    assert reason(store.ask, code, secret, "label", {}, 2, 0, None, "projector") == "not_leading"
    assert store.questions(code, secret)[0].revealed  # reading is every teacher screen's


def test_a_class_no_screen_leads_is_led_by_the_first_that_acts(location):
    store, code, secret, number = started(location)  # started and asked without a screen (a script)
    assert store.lead(code, secret, "a").mine and not store.lead(code, secret, "b").mine
    other, other_secret = store.start_class("en")
    store.reveal(other, other_secret, store.ask(other, other_secret, "label", {}, 2, 0, screen="b"), "b")
    assert store.lead(other, other_secret, "b").mine and not store.lead(other, other_secret, "a").mine


def test_a_student_answers_only_the_current_question_for_themselves(location):
    store, code, secret, first = started(location)
    me, other = store.join(code, "a"), store.join(code, "b")
    assert store.join(code, "a", student=me) == me  # a reload keeps the id
    assert store.join(code, "a", student="made-up") not in (me, other, "made-up")
    store.answer(code, me, first, 1)
    second = store.ask(code, secret, "label", {}, 2, 1)
    assert reason(lambda: store.answer(code, me, first, 0)) == "not_current"
    assert reason(lambda: store.answer(code, me, second, 2)) == "bad_choice"
    assert reason(lambda: store.answer(code, "nobody", second, 0)) == "unknown_student"
    store.answer(code, me, second, 0)
    store.reopen(code, secret, first)  # an earlier question, open again with its answers
    assert store.current(code).number == first and store.my_answer(code, me, first) == 1
    store.answer(code, other, first, 2)
    assert store.tally(code, first, secret).counts == [0, 1, 1, 0]
    store.close_class(code, secret)
    assert reason(lambda: store.answer(code, me, first, 0)) == "closed"
    assert reason(lambda: store.current(code)) == "closed"


def test_the_teacher_secret_is_not_stored(location):
    store, code, secret, _ = started(location)
    with store.backend.transaction(False) as tx:
        stored = tx.one("SELECT teacher FROM class_sessions WHERE code = ?", code)[0]
    assert secret not in stored and len(stored) == 64
    assert store.is_teacher(code, secret) and not store.is_teacher(code, secret[:-1] + "x")


def test_codes_are_short_and_drawn_from_an_alphabet_without_look_alikes(location):
    store = open_store(location)
    codes = {store.start_class("en")[0] for _ in range(30)}
    assert len(codes) == 30
    assert all(len(c) == CODE_LENGTH and set(c) <= set(CODE_ALPHABET) for c in codes)
    assert not set(CODE_ALPHABET) & set("0O1IL2Z5SB")
    assert len(CODE_ALPHABET) ** CODE_LENGTH > 2e8
    assert normalize_code(" ab-c d7 ") == "ABCD7"
    assert normalize_code("http://10.0.0.5:8080/class?lang=ko&code=abc-123&me=x") == "ABC123"  # a pasted join link
    assert normalize_code("x" * 100_000) == "X" * (2 * CODE_LENGTH)


# ---- bad input and caps --------------------------------------------------------------------------------------------
def test_one_network_cannot_fill_a_class(location):
    clock = Clock()
    store, code, _, _ = started(location, clock=clock)
    known = [store.join(code, "one-nat") for _ in range(JOINS_PER_CLIENT)]
    with pytest.raises(ClassError) as refused:
        store.join(code, "one-nat")
    assert refused.value.reason == "too_many_joins" and int(refused.value.detail) == int(RATE_WINDOW_S)
    assert store.join(code, "one-nat", student=known[0]) == known[0]  # a student already in comes back
    assert store.join(code, "another-network")  # others are not held up
    clock.now += RATE_WINDOW_S + 1
    assert store.join(code, "one-nat")  # the window has passed
    assert store.info(code).students == JOINS_PER_CLIENT + 2


def test_wrong_codes_are_rate_limited_per_client(location):
    clock = Clock()
    store, code, _, _ = started(location, clock=clock)
    for _ in range(WRONG_CODES):
        assert reason(lambda: store.join("ZZZZZZ", "lab-1")) == "unknown_code"
    assert reason(lambda: store.join(code, "lab-1")) == "rate_limited"  # even the right code, for a while
    assert store.join(code, "lab-2")  # another client is not held up
    clock.now += RATE_WINDOW_S + 1
    assert store.join(code.lower(), "lab-1")


def test_ten_thousand_answers_from_one_browser_stop_at_the_cap(location):
    store, code, secret, number = started(location)
    me = store.join(code, "c")
    refused = 0
    for i in range(10_000):
        try:
            store.answer(code, me, number, i % 4)
        except ClassError as err:
            assert err.reason == "too_many_answers"
            refused += 1
    assert refused == 10_000 - WRITES_PER_STUDENT
    tally = store.tally(code, number, secret)
    assert tally.answered == 1 and tally.counts[(WRITES_PER_STUDENT - 1) % 4] == 1


def test_a_long_nickname_with_script_is_cut_and_kept_as_plain_text(location):
    store, code, secret, number = started(location)
    me = store.join(code, "c", nickname="<script>alert(1)</script>" + "x" * 5000 + "\x00\u202e")
    assert store.nickname(code, me) == ("<script>alert(1)</script>" + "x" * 5000)[:NICKNAME_MAX]
    store.answer(code, me, number, 0)
    assert store.tally(code, number, secret).nicknames[0] == [store.nickname(code, me)]
    assert reason(lambda: store.join("", "c")) == "unknown_code"
    assert reason(lambda: store.ask(code, secret, "label", {}, 1, 0)) == "bad_choice"
    assert reason(lambda: store.ask(code, secret, "label", {}, 3, 3)) == "bad_choice"


# ---- the SQLite file -----------------------------------------------------------------------------------------------
def test_a_removed_store_file_is_written_back_with_every_answer(tmp_path):
    path = tmp_path / "data" / "classroom.sqlite3"
    store, code, secret, number = started(str(path))
    students = [store.join(code, "c") for _ in range(5)]
    for i, me in enumerate(students):
        store.answer(code, me, number, i % 4)
    path.unlink()  # someone clears the data folder during the class
    late = store.join(code, "c")
    store.answer(code, late, number, 3)
    assert path.exists() and store.backend.restored == 1
    again = open_store(str(path))  # a server started after it
    assert again.tally(code, number, secret).counts == [2, 1, 1, 2]


def test_a_read_only_store_says_so_and_keeps_what_it_has(tmp_path):
    path = tmp_path / "classroom.sqlite3"
    store, code, secret, number = started(str(path))
    store.answer(code, store.join(code, "c"), number, 1)
    store.close()
    if os.geteuid() == 0:  # root writes through file modes: open it read-only as a mounted-ro disk would be
        from ui.classroom.store import ClassStore

        read_only = ClassStore(SqliteBackend(path, read_only=True))
    else:
        path.chmod(0o444)
        read_only = open_store(str(path))
    assert reason(lambda: read_only.join(code, "c")) == "store_read_only"
    assert read_only.info(code).students == 1  # reading still works
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT COUNT(*) FROM class_answers").fetchone()[0] == 1


def test_an_unopenable_store_says_so(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data folder should be")
    assert reason(lambda: open_store(str(blocker / "classroom.sqlite3"))) == "store_unavailable"


def test_the_store_location_comes_from_the_environment(tmp_path):
    assert store_location({"ATTENTION_LAB_DATA": str(tmp_path)}) == str(tmp_path / "classroom.sqlite3")
    assert store_location({"ATTENTION_LAB_CLASS_DB": "postgresql://u@h/db"}) == "postgresql://u@h/db"
    assert Path(store_location({})).parts[-2:] == ("data", "classroom.sqlite3")
