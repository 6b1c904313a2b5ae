"""The class store: what every server process shares about a class session, and the rules for it.

One interface (:class:`ClassStore`) over two backends that only open connections and speak their SQL
dialect: SQLite (``store_sqlite``, the embedded default: one file in WAL mode) and PostgreSQL
(``store_postgres``, for a class served from several machines). Pages never reach a database: they call
this interface (through ``ui.classroom.view``), and every rule is enforced here, inside one transaction:

* only the teacher who started a class (who holds its secret; the store keeps its SHA-256) may ask,
  reveal, reopen, close or export; of several teacher screens holding the secret (a second teacher, or
  the same one after a reload), one leads: the one that started the class or the last that took the lead
  (:meth:`ClassStore.lead`); the others see the class but cannot change what is on the students' screens;
* a student answers only for themselves (a random id their own browser keeps), once per question,
  changing it until the reveal; nobody but the teacher reads the class's answers before the reveal;
* codes are 6 characters of a 25-letter alphabet (25^6 = 244 million) and wrong codes are rate-limited
  per client, so a code cannot be guessed within a class period; classes expire after ``CLASS_HOURS``;
* caps: answers and changes per browser, students per class, new students per network address and class
  (``JOINS_PER_CLIENT`` per ``RATE_WINDOW_S``), questions per class, nickname length.

A refusal raises :class:`ClassError` whose ``reason`` names the message the user sees.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .errors import ClassError

CODE_ALPHABET = "ACDEFHJKMNPQRTUVWXY346789"  # no 0/O, 1/I/L, 2/Z, 5/S, 8 is kept (B is out), G/6: G is out
CODE_LENGTH = 6
CLASS_HOURS = 4.0
KEEP_AFTER_EXPIRY_S = 24 * 3600  # an expired class can still be exported this long, then it is purged
NICKNAME_MAX = 40
WRITES_PER_STUDENT = 500  # answers and changes of one browser in one class (50 questions x 10 changes)
STUDENTS_PER_CLASS = 1000
QUESTIONS_PER_CLASS = 200
OPTIONS_MAX = 1024
WRONG_CODES = 20  # wrong codes one client may type per RATE_WINDOW_S
JOINS_PER_CLIENT = 200  # new students one network address may add to one class per RATE_WINDOW_S (a lecture hall
# behind one NAT fits; a script cannot fill a class to its STUDENTS_PER_CLASS cap in a class period)
RATE_WINDOW_S = 600.0


@dataclass(frozen=True)
class ClassInfo:
    code: str
    lang: str
    created: float
    expires: float
    closed: bool
    current: int | None  # the number of the question on screen, None when none
    questions: int
    students: int


@dataclass(frozen=True)
class Question:
    """One question as a reader may see it: ``answer`` (the model's, an option index) and ``reveal`` (the
    model's numbers behind it) are None until the reveal unless the reader is the teacher."""

    number: int
    kind: str
    payload: dict
    options: int
    revealed: bool
    answer: int | None
    reveal: dict | None


@dataclass(frozen=True)
class Lead:
    """Whether a teacher screen leads its class, and when the leading screen was last seen (a clock time)."""

    mine: bool
    seen: float


@dataclass(frozen=True)
class Tally:
    """How a class answered one question: ``counts[i]`` students chose option ``i``; ``nicknames[i]``
    are the nicknames given among them (students without one are not named)."""

    answered: int
    counts: list[int]
    nicknames: list[list[str]]


class Tx(Protocol):
    """One transaction of a backend; SQL is written with ``?`` placeholders."""

    def run(self, sql: str, *params: Any) -> int: ...  # rows changed
    def one(self, sql: str, *params: Any) -> tuple | None: ...
    def all(self, sql: str, *params: Any) -> list[tuple]: ...


class Backend(Protocol):
    """Connections and dialect: ``transaction()`` commits on leaving, rolls back on an exception, and
    turns the database's own failures into ``ClassError('store_unavailable' | 'store_read_only')``."""

    schema_lock: str  # a statement that serialises creating the tables ("" when transactions already do)
    share_lock: str  # appended to a SELECT that must wait for a concurrent reveal (PostgreSQL: FOR SHARE)
    where: str  # said in messages: the file or the server

    def transaction(self, write: bool = True) -> contextlib.AbstractContextManager[Tx]: ...
    def close(self) -> None: ...


SCHEMA = (
    """CREATE TABLE IF NOT EXISTS class_sessions (
        code TEXT PRIMARY KEY, teacher TEXT NOT NULL, lang TEXT NOT NULL, created DOUBLE PRECISION NOT NULL,
        expires DOUBLE PRECISION NOT NULL, closed INTEGER NOT NULL DEFAULT 0, current INTEGER,
        questions INTEGER NOT NULL DEFAULT 0, students INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS class_questions (
        code TEXT NOT NULL, number INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
        answer INTEGER NOT NULL, options INTEGER NOT NULL, reveal TEXT NOT NULL, revealed INTEGER NOT NULL DEFAULT 0,
        asked DOUBLE PRECISION NOT NULL, PRIMARY KEY (code, number))""",
    """CREATE TABLE IF NOT EXISTS class_students (
        code TEXT NOT NULL, student TEXT NOT NULL, nickname TEXT NOT NULL, joined DOUBLE PRECISION NOT NULL,
        writes INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (code, student))""",
    """CREATE TABLE IF NOT EXISTS class_answers (
        code TEXT NOT NULL, number INTEGER NOT NULL, student TEXT NOT NULL, choice INTEGER NOT NULL,
        at DOUBLE PRECISION NOT NULL, PRIMARY KEY (code, number, student))""",
    """CREATE TABLE IF NOT EXISTS class_attempts (
        client TEXT PRIMARY KEY, since DOUBLE PRECISION NOT NULL, wrong INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS class_joins (
        code TEXT NOT NULL, client TEXT NOT NULL, since DOUBLE PRECISION NOT NULL, joined INTEGER NOT NULL,
        PRIMARY KEY (code, client))""",
    """CREATE TABLE IF NOT EXISTS class_leads (
        code TEXT PRIMARY KEY, screen TEXT NOT NULL, seen DOUBLE PRECISION NOT NULL)""",
)


DATA_ENV = "ATTENTION_LAB_DATA"  # the folder of the SQLite file (default: data/ in the app's folder)
URL_ENV = "ATTENTION_LAB_CLASS_DB"  # a PostgreSQL URL: the class store lives there instead
FILE_NAME = "classroom.sqlite3"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data"


def store_location(environ: Mapping[str, str] | None = None) -> str:
    """Where the class store is: the PostgreSQL URL of ``ATTENTION_LAB_CLASS_DB`` when set, else the
    SQLite file ``classroom.sqlite3`` in ``ATTENTION_LAB_DATA`` (default ``data/`` beside the app)."""
    env = os.environ if environ is None else environ
    url = env.get(URL_ENV, "").strip()
    if url:
        return url
    return str(Path(env.get(DATA_ENV) or DEFAULT_DATA) / FILE_NAME)


def open_store(location: str | None = None, clock: Callable[[], float] = time.time) -> ClassStore:
    """The class store at ``location`` (a ``postgresql://`` URL or a SQLite file; default
    :func:`store_location`)."""
    location = location or store_location()
    if location.startswith(("postgresql://", "postgres://")) or "dbname=" in location:
        from .store_postgres import PostgresBackend

        return ClassStore(PostgresBackend(location), clock)
    from .store_sqlite import SqliteBackend

    return ClassStore(SqliteBackend(location), clock)


LINK_CODE = re.compile(r"[?&]code=([^&#\s]*)")  # the code inside a pasted join link


def normalize_code(typed: str) -> str:
    """What a student typed as a code: upper case, spaces and dashes dropped ("abc-def" -> "ABCDEF"); a pasted
    join link gives the code it carries ("http://10.0.0.5:8080/class?code=abc123" -> "ABC123")."""
    in_link = LINK_CODE.search(typed or "")
    text = in_link.group(1) if in_link else (typed or "")
    return "".join(c for c in text.upper() if c.isalnum())[: CODE_LENGTH * 2]


def clean_nickname(typed: str | None, limit: int | None = NICKNAME_MAX) -> str:
    """A nickname as stored: control and format characters dropped, spaces folded, at most ``limit``
    characters (None: all, to tell a student how long what they typed is). It is shown only as plain text
    (never Markdown or HTML) wherever it appears."""
    text = "".join(c for c in (typed or "") if unicodedata.category(c)[0] != "C")
    return " ".join(text.split())[:limit]


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ClassStore:
    """The rules of a class session over a :class:`Backend`; safe to share between threads and
    processes (every method is one transaction). ``clock`` gives the time in seconds (tests move it)."""

    def __init__(self, backend: Backend, clock: Callable[[], float] = time.time) -> None:
        self.backend, self.clock = backend, clock
        with self.backend.transaction() as tx:
            if self.backend.schema_lock:  # two processes creating the tables at once must not collide
                tx.one(self.backend.schema_lock)
            for statement in SCHEMA:
                tx.run(statement)

    def close(self) -> None:
        self.backend.close()

    @contextlib.contextmanager
    def _tx(self, write: bool = True) -> Iterator[Tx]:
        with self.backend.transaction(write) as tx:
            yield tx

    # ---- the teacher ------------------------------------------------------------------------------------------
    def start_class(self, lang: str = "en", hours: float = CLASS_HOURS, screen: str | None = None) -> tuple[str, str]:
        """A new class session: (its code for the students, the teacher's secret). The secret is never
        stored, only its digest; a code is never reused while its class is kept. ``screen`` (the starting
        teacher screen's own id) leads the class."""
        now = self.clock()
        secret = secrets.token_urlsafe(24)
        with self._tx() as tx:
            self._purge(tx, now)
            for _ in range(20):
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
                made = tx.run(
                    "INSERT INTO class_sessions (code, teacher, lang, created, expires) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (code) DO NOTHING",
                    code, _digest(secret), lang, now, now + hours * 3600,
                )  # fmt: skip
                if made:
                    if screen is not None:
                        _claim_lead(tx, code, screen, now, take=True)
                    return code, secret
        raise ClassError("store_unavailable", "no free code")  # 20 collisions in 244 million: never in practice

    def is_teacher(self, code: str, secret: str | None) -> bool:
        row = self._one("SELECT teacher FROM class_sessions WHERE code = ?", code)
        return bool(row and secret and hmac.compare_digest(row[0], _digest(secret)))

    def lead(self, code: str, secret: str, screen: str, take: bool = False) -> Lead:
        """Whether teacher screen ``screen`` leads class ``code``; the leading screen's call also records that
        it was seen now (its poll calls this). ``take`` makes ``screen`` the leading one. A class that no
        screen leads yet is led by the first that asks."""
        now = self.clock()
        with self._tx() as tx:
            self._teacher(tx, code, secret, live=False)
            if _claim_lead(tx, code, screen, now, take):
                return Lead(True, now)
            row = tx.one("SELECT seen FROM class_leads WHERE code = ?", code)
        return Lead(False, float(row[0]))

    # Every change of what the students see below takes ``screen``: refused ("not_leading") when another
    # teacher screen leads the class; None (scripts and tests) skips that check.
    def ask(
        self, code: str, secret: str, kind: str, payload: dict, options: int, answer: int, reveal: dict | None = None,
        screen: str | None = None,
    ) -> int:  # fmt: skip
        """Put a new question on every screen; ``answer`` (the model's, an option index) and ``reveal``
        (the model's numbers) stay hidden until :meth:`reveal`. Returns the question's number."""
        if not 2 <= options <= OPTIONS_MAX or not 0 <= answer < options:
            raise ClassError("bad_choice", f"{options} options, answer {answer}")
        text = json.dumps(payload, ensure_ascii=False)
        hidden = json.dumps(reveal or {}, ensure_ascii=False)
        with self._tx() as tx:
            info = self._teacher(tx, code, secret, live=True, screen=screen)
            if info.questions >= QUESTIONS_PER_CLASS:
                raise ClassError("too_many_questions")
            number = info.questions + 1
            tx.run(
                "INSERT INTO class_questions (code, number, kind, payload, answer, options, reveal, asked) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                code, number, kind, text, answer, options, hidden, self.clock(),
            )  # fmt: skip
            tx.run("UPDATE class_sessions SET questions = ?, current = ? WHERE code = ?", number, number, code)
        return number

    def reveal(self, code: str, secret: str, number: int, screen: str | None = None) -> None:
        with self._tx() as tx:
            self._teacher(tx, code, secret, live=False, screen=screen)
            if not tx.run("UPDATE class_questions SET revealed = 1 WHERE code = ? AND number = ?", code, number):
                raise ClassError("no_question")

    def reopen(self, code: str, secret: str, number: int, screen: str | None = None) -> None:
        """Show question ``number`` again, open for answers (those already given are kept)."""
        with self._tx() as tx:
            self._teacher(tx, code, secret, live=True, screen=screen)
            if not tx.run("UPDATE class_questions SET revealed = 0 WHERE code = ? AND number = ?", code, number):
                raise ClassError("no_question")
            tx.run("UPDATE class_sessions SET current = ? WHERE code = ?", number, code)

    def close_class(self, code: str, secret: str, screen: str | None = None) -> None:
        with self._tx() as tx:
            self._teacher(tx, code, secret, live=False, screen=screen)
            tx.run("UPDATE class_sessions SET closed = 1, current = NULL WHERE code = ?", code)

    def questions(self, code: str, secret: str) -> list[Question]:
        """Every question of the class, with the model's answers (the teacher's list)."""
        with self._tx(write=False) as tx:
            self._teacher(tx, code, secret, live=False)
            rows = tx.all(
                "SELECT number, kind, payload, options, revealed, answer, reveal FROM class_questions "
                "WHERE code = ? ORDER BY number",
                code,
            )
        return [_question(row, teacher=True) for row in rows]

    def tally(self, code: str, number: int, secret: str | None = None) -> Tally:
        """The class's answers to question ``number``: for the teacher at any time, for anyone else only
        after the reveal."""
        with self._tx(write=False) as tx:
            info = self._info(tx, code)
            row = tx.one("SELECT options, revealed FROM class_questions WHERE code = ? AND number = ?", code, number)
            if row is None:
                raise ClassError("no_question")
            if not row[1] and not self._teacher_ok(tx, info.code, secret):
                raise ClassError("not_teacher")
            rows = tx.all(
                "SELECT a.choice, s.nickname FROM class_answers a JOIN class_students s "
                "ON s.code = a.code AND s.student = a.student WHERE a.code = ? AND a.number = ?",
                code, number,
            )  # fmt: skip
        counts, names = [0] * row[0], [[] for _ in range(row[0])]
        for choice, nickname in rows:
            counts[choice] += 1
            if nickname:
                names[choice].append(nickname)
        return Tally(len(rows), counts, [sorted(n) for n in names])

    def answered(self, code: str, number: int) -> int:
        """How many students have answered question ``number`` (the projector's count; no choice is told)."""
        row = self._one("SELECT COUNT(*) FROM class_answers WHERE code = ? AND number = ?", code, number)
        return int(row[0]) if row else 0

    # ---- the students ------------------------------------------------------------------------------------------
    def join(self, typed_code: str, client: str, student: str | None = None, nickname: str | None = None) -> str:
        """A student's id in class ``typed_code`` (``student`` again when it is already one of this class,
        else a new one). ``client`` identifies the browser's network address for the wrong-code limit."""
        code = normalize_code(typed_code)
        now = self.clock()
        with self._tx() as tx:
            wait = _limit_reached(tx, "class_attempts", "wrong", {"client": client}, WRONG_CODES, now)
            if wait is not None:
                raise ClassError("rate_limited", str(wait))
            exists = tx.one("SELECT 1 FROM class_sessions WHERE code = ?", code)
            if exists is None:
                _count_in_window(tx, "class_attempts", "wrong", {"client": client}, now)
        if exists is None:  # the wrong attempt is committed before the refusal
            raise ClassError("unknown_code")
        name = clean_nickname(nickname)
        with self._tx() as tx:
            info = self._live(tx, code)
            if student and tx.one("SELECT 1 FROM class_students WHERE code = ? AND student = ?", code, student):
                if name:
                    tx.run("UPDATE class_students SET nickname = ? WHERE code = ? AND student = ?", name, code, student)
                return student
            if info.students >= STUDENTS_PER_CLASS:
                raise ClassError("class_full")
            keys = {"code": code, "client": client}
            wait = _limit_reached(tx, "class_joins", "joined", keys, JOINS_PER_CLIENT, now)
            if wait is not None:
                raise ClassError("too_many_joins", str(wait))
            _count_in_window(tx, "class_joins", "joined", keys, now)
            new = secrets.token_urlsafe(12)
            tx.run(
                "INSERT INTO class_students (code, student, nickname, joined) VALUES (?, ?, ?, ?)", code, new, name, now
            )
            tx.run("UPDATE class_sessions SET students = students + 1 WHERE code = ?", code)
        return new

    def info(self, code: str) -> ClassInfo:
        """The class ``code`` as anyone may see it (expired or closed classes too: the caller says so)."""
        with self._tx(write=False) as tx:
            return self._info(tx, code)

    def current(self, code: str) -> Question | None:
        """The question on screen (its answer only once revealed), None when there is none; raises when
        the class is unknown, expired or closed."""
        with self._tx(write=False) as tx:
            info = self._live(tx, code)
            if info.current is None:
                return None
            row = tx.one(
                "SELECT number, kind, payload, options, revealed, answer, reveal FROM class_questions "
                "WHERE code = ? AND number = ?",
                code, info.current,
            )  # fmt: skip
        return _question(row, teacher=False) if row else None

    def answer(self, code: str, student: str, number: int, choice: int) -> None:
        """Student ``student`` chooses option ``choice`` for question ``number`` (replacing their earlier
        choice); refused after the reveal, for a question no longer on screen, past the caps."""
        with self._tx() as tx:
            info = self._live(tx, code)
            row = tx.one(
                "SELECT options, revealed FROM class_questions WHERE code = ? AND number = ?" + self.backend.share_lock,
                code, number,
            )  # fmt: skip
            if row is None or info.current != number:
                raise ClassError("not_current")
            if row[1]:
                raise ClassError("revealed")
            if not 0 <= int(choice) < row[0]:
                raise ClassError("bad_choice", str(choice))
            changed = tx.run(
                "UPDATE class_students SET writes = writes + 1 WHERE code = ? AND student = ? AND writes < ?",
                code, student, WRITES_PER_STUDENT,
            )  # fmt: skip
            if not changed:
                known = tx.one("SELECT 1 FROM class_students WHERE code = ? AND student = ?", code, student)
                raise ClassError("too_many_answers" if known else "unknown_student")
            tx.run(
                "INSERT INTO class_answers (code, number, student, choice, at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (code, number, student) DO UPDATE SET choice = excluded.choice, at = excluded.at",
                code, number, student, int(choice), self.clock(),
            )  # fmt: skip

    def my_answer(self, code: str, student: str, number: int) -> int | None:
        row = self._one(
            "SELECT choice FROM class_answers WHERE code = ? AND number = ? AND student = ?", code, number, student
        )
        return int(row[0]) if row else None

    def nickname(self, code: str, student: str) -> str | None:
        row = self._one("SELECT nickname FROM class_students WHERE code = ? AND student = ?", code, student)
        return row[0] if row else None

    # ---- shared checks ----------------------------------------------------------------------------------------
    def _one(self, sql: str, *params: Any) -> tuple | None:
        with self._tx(write=False) as tx:
            return tx.one(sql, *params)

    def _info(self, tx: Tx, code: str) -> ClassInfo:
        row = tx.one(
            "SELECT code, lang, created, expires, closed, current, questions, students FROM class_sessions "
            "WHERE code = ?",
            code,
        )
        if row is None:
            raise ClassError("unknown_code")
        return ClassInfo(row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], row[7])

    def _live(self, tx: Tx, code: str) -> ClassInfo:
        info = self._info(tx, code)
        if info.closed:
            raise ClassError("closed")
        if self.clock() >= info.expires:
            raise ClassError("expired")
        return info

    def _teacher_ok(self, tx: Tx, code: str, secret: str | None) -> bool:
        row = tx.one("SELECT teacher FROM class_sessions WHERE code = ?", code)
        return bool(row and secret and hmac.compare_digest(row[0], _digest(secret)))

    def _teacher(self, tx: Tx, code: str, secret: str, live: bool, screen: str | None = None) -> ClassInfo:
        """The class, when ``secret`` is its teacher's (and ``screen``, when given, leads it or takes the lead
        of a class no screen leads); else raises."""
        info = self._live(tx, code) if live else self._info(tx, code)
        if not self._teacher_ok(tx, code, secret):
            raise ClassError("not_teacher")
        if screen is not None and not _claim_lead(tx, code, screen, self.clock(), take=False):
            raise ClassError("not_leading")
        return info

    def _purge(self, tx: Tx, now: float) -> None:
        """Forget classes expired more than KEEP_AFTER_EXPIRY_S ago, and stale wrong-code counts."""
        old = now - KEEP_AFTER_EXPIRY_S
        for table in ("class_answers", "class_students", "class_questions", "class_leads"):
            tx.run(f"DELETE FROM {table} WHERE code IN (SELECT code FROM class_sessions WHERE expires < ?)", old)
        tx.run("DELETE FROM class_sessions WHERE expires < ?", old)
        tx.run("DELETE FROM class_attempts WHERE since < ?", now - RATE_WINDOW_S)
        tx.run("DELETE FROM class_joins WHERE since < ?", now - RATE_WINDOW_S)


# ---- counts per RATE_WINDOW_S (wrong codes per client, new students per client and class) -------------------------
def _limit_reached(tx: Tx, table: str, counter: str, keys: dict[str, str], limit: int, now: float) -> int | None:
    """Seconds until the window of the row ``keys`` of ``table`` ends when its ``counter`` reached ``limit``
    in that window, else None. ``table`` and ``counter`` are this module's own names, never user input."""
    where = " AND ".join(f"{name} = ?" for name in keys)
    row = tx.one(f"SELECT since, {counter} FROM {table} WHERE {where}", *keys.values())
    if row and row[0] > now - RATE_WINDOW_S and row[1] >= limit:
        return int(row[0] + RATE_WINDOW_S - now)
    return None


def _count_in_window(tx: Tx, table: str, counter: str, keys: dict[str, str], now: float) -> None:
    """Add one to the row ``keys`` of ``table``: its ``counter`` starts again at 1 when its window has passed."""
    names = ", ".join(keys)
    stale = now - RATE_WINDOW_S
    tx.run(
        f"INSERT INTO {table} ({names}, since, {counter}) VALUES ({', '.join('?' * len(keys))}, ?, 1) "
        f"ON CONFLICT ({names}) DO UPDATE "
        f"SET {counter} = CASE WHEN {table}.since < ? THEN 1 ELSE {table}.{counter} + 1 END, "
        f"since = CASE WHEN {table}.since < ? THEN ? ELSE {table}.since END",
        *keys.values(), now, stale, stale, now,
    )  # fmt: skip


def _claim_lead(tx: Tx, code: str, screen: str, now: float, take: bool) -> bool:
    """Whether ``screen`` leads class ``code`` after this one statement (two screens cannot both win): it led
    already or no screen did (its time is set to ``now``), or ``take`` made it the leading one; False, changing
    nothing, when another screen leads and ``take`` is False."""
    changed = tx.run(
        "INSERT INTO class_leads (code, screen, seen) VALUES (?, ?, ?) "
        "ON CONFLICT (code) DO UPDATE SET screen = excluded.screen, seen = excluded.seen"
        + ("" if take else " WHERE class_leads.screen = excluded.screen"),
        code, screen, now,
    )  # fmt: skip
    return bool(changed)


def _question(row: tuple, teacher: bool) -> Question:
    number, kind, payload, options, revealed, answer, reveal = row
    shown = teacher or bool(revealed)
    return Question(number, kind, json.loads(payload), options, bool(revealed), answer if shown else None,
                    json.loads(reveal) if shown else None)  # fmt: skip
