"""Random tables, written by ``TableFile`` and by SQLite itself from the same rows, must hold
the same: row by row (each value with its storage class), index by index (each walked in its
own order), with a clean ``PRAGMA integrity_check`` on the written file; and rows SQLite
refuses (a unique index's key twice, NaN in a NOT NULL column), the writer refuses too.

Everything the writer's API takes is drawn (_btree.pyi): TEXT and INTEGER columns, NOT NULL or
not (the only affinities it writes), up to its 64 columns; a TEXT primary key, UNIQUE
constraints and CREATE [UNIQUE] INDEX on any columns, a column twice included, up to its 16
indexes; text with NULs, 2- to 4-byte UTF-8, shared prefixes, lengths past a page (overflow
pages) and none; 64-bit integers at every edge of SQLite's integer sizes; reals stored in
INTEGER columns (whole ones as integers, NaN as NULL, the others as reals where no index holds
them); page sizes from 512 to 65536; index keys spilled to disk and merged from the first byte
on (``spill_bytes``) or held; the rows appended in several calls; the indexes built on one to
four threads. Derandomized, a fixed number of examples: the same cases on every run, in well
under a minute (scripts/sanitize-btree runs them under AddressSanitizer).
"""

from __future__ import annotations

import math
import random
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

_btree = pytest.importorskip("graphboard_btree._btree", reason="graphboard-btree is not installed")

MAX_COLUMNS = 64  # _btree.c's limits
MAX_INDEXES = 16
PAGE_SIZES = [512, 1024, 4096, 65536]
# What SQLite refuses of the rows the writer takes, and how the writer words it.
REFUSALS = {
    "UNIQUE": "two rows have the same unique key",
    "NOT NULL": "stored as NULL, which the column may not hold",  # NaN
}
DEFAULT_SPILL = 8 << 20

# Each size SQLite stores an integer in (serial types 1 to 6, 0 and 1 without a body), at its
# edges, and the ends of 64 bits.
INTEGER_EDGES = sorted(
    {0, 1, -1, 2, -(2**63), 2**63 - 1}
    | {
        sign * 2**bits + step
        for bits in (7, 15, 23, 31, 47)
        for sign in (1, -1)
        for step in (-1, 0, 1)
    }
)
# Whole reals (stored as integers), NaN (stored as NULL), and the rest (stored as reals, which
# no index may hold), whole ones among them where 64 bits end (SQLite keeps +-2**63 a real).
WHOLE_REALS = [0.0, -0.0, 1.0, -1.0, 2.0**31, 2.0**53, 2.0**62, -(2.0**62), 2.0**63 - 1024]
REALS = [0.5, -0.5, 1e-300, -1e300, 5e-324, 1.5e308, math.inf, -math.inf, 2.0**63, -(2.0**63)]
# Few characters: keys that share prefixes and tie; NUL (escaped in the writer's sort keys), 1
# (sorts right after it), and 2-, 3- and 4-byte UTF-8.
CHARACTERS = "\x00\x01ab~\x7f\u00e9\u00ff\u5b57\U0001f600"


@dataclass(frozen=True)
class Schema:
    """A table t (columns c0, c1, ...) and its indexes, as SQLite makes them from ``ddl``."""

    affinities: str  # _btree's letters: T text, I integer, lower case when NOT NULL
    ddl: tuple[str, ...]
    page_size: int

    def layout(self) -> tuple[list[tuple[bool, tuple[int, ...]]], list[Any], list[str]]:
        """(the writer's indexes, the sqlite_schema rows, each index's name), read back from
        SQLite: the indexes in sqlite_schema's order, which the writer's must follow."""
        conn = sqlite3.connect(":memory:")
        try:
            for statement in self.ddl:
                conn.execute(statement)
            rows = conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid"
            ).fetchall()
            unique = {row[1]: bool(row[2]) for row in conn.execute("PRAGMA index_list(t)")}
            indexes = []
            for _, name, _, _ in rows[1:]:
                columns = conn.execute(f"PRAGMA index_info({name})").fetchall()
                indexes.append((unique[name], tuple(column[1] for column in columns)))
        finally:
            conn.close()
        return indexes, rows, [row[1] for row in rows[1:]]


@st.composite
def schemas(draw: st.DrawFn) -> Schema:
    count = draw(st.one_of(st.integers(1, 8), st.integers(1, MAX_COLUMNS)))
    affinities = "".join(draw(st.sampled_from("TIti")) for _ in range(count))
    columns = [
        f"c{n} {'TEXT' if letter in 'Tt' else 'INTEGER'}{'' if letter.isupper() else ' NOT NULL'}"
        for n, letter in enumerate(affinities)
    ]
    texts = [n for n, letter in enumerate(affinities) if letter in "Tt"]
    # A TEXT primary key (an INTEGER one would be the rowid itself, which the writer does not
    # write), and UNIQUE constraints: SQLite's own indexes (sqlite_autoindex_t_N).
    if texts and draw(st.booleans()):
        key = draw(st.sampled_from(texts))
        columns[key] += " PRIMARY KEY"
    index_columns = st.lists(st.integers(0, count - 1), min_size=1, max_size=5)
    constraints = [
        f"UNIQUE ({', '.join(f'c{n}' for n in chosen)})"
        for chosen in draw(st.lists(index_columns, max_size=2))
    ]
    ddl = [f"CREATE TABLE t ({', '.join(columns + constraints)})"]
    own = draw(st.lists(st.tuples(st.booleans(), index_columns), max_size=MAX_INDEXES - 3))
    ddl += [
        f"CREATE {'UNIQUE ' if unique else ''}INDEX i{n} ON t ({', '.join(f'c{c}' for c in chosen)})"
        for n, (unique, chosen) in enumerate(own)
    ]
    fitting = [size for size in PAGE_SIZES if _schema_fits(ddl, size)] or [PAGE_SIZES[-1]]
    return Schema(affinities, tuple(ddl), draw(st.sampled_from(fitting)))


def _schema_fits(ddl: list[str], page_size: int) -> bool:
    """Whether sqlite_schema's rows surely fit on page 1 without overflow pages, which the
    writer does not write there (it refuses: test_a_schema_past_the_first_page_is_refused).
    Each row's cell counted generously: its texts twice over (name and tbl_name are short),
    and 40 bytes of headers."""
    cells = [2 * len(statement.encode()) + 40 for statement in ddl]
    usable = page_size - 100 - 8  # the file header, the page header
    return max(cells) <= page_size - 35 and sum(cells) + 2 * len(cells) <= usable


def texts(long: bool) -> st.SearchStrategy[str]:
    short = st.text(CHARACTERS, max_size=12)
    if not long:
        return short
    # past a page and onto overflow pages (past 64 KiB at most), quickly: a short text
    # repeated, one value in four
    repeated = st.builds(lambda part, times: part * times, short, st.integers(1, 2000))
    return st.one_of(short, short, short, repeated)


def integers() -> st.SearchStrategy[int]:
    return st.one_of(
        st.sampled_from(INTEGER_EDGES), st.integers(-3, 300), st.integers(-(2**63), 2**63 - 1)
    )


def values(letter: str, indexed: bool, long: bool) -> st.SearchStrategy[Any]:
    """What a column may hold: a real in an index only when it is stored as an integer or NULL."""
    if letter in "Tt":
        value = texts(long)
    elif indexed:
        value = st.one_of(integers(), st.sampled_from([*WHOLE_REALS, math.nan]))
    else:
        value = st.one_of(
            integers(), st.sampled_from([*WHOLE_REALS, math.nan, *REALS]), st.floats()
        )
    return value if letter.islower() else st.one_of(st.none(), value)


@dataclass(frozen=True)
class Case:
    schema: Schema
    rows: list[tuple[Any, ...]]
    appends: list[int]  # where the rows are split into append calls
    spill_bytes: int
    threads: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A few rows drawn value by value (they shrink to the least that fails), around many more
    made from a drawn seed alike (hypothesis would draw thousands of values slowly)."""
    schema = draw(schemas())
    indexes, _, _ = schema.layout()
    indexed = {column for _, columns in indexes for column in columns}
    long = draw(st.booleans())
    row = st.tuples(
        *(
            values(letter, column in indexed, long)
            for column, letter in enumerate(schema.affinities)
        )
    )
    drawn = draw(st.lists(row, max_size=6))
    count = draw(st.sampled_from([0, 30, 300, 300] if long else [0, 30, 300, 3000, 3000]))
    seed = draw(st.integers(0, 2**32 - 1))
    bulk = _bulk_rows(random.Random(seed), schema.affinities, indexed, long, count)
    if draw(st.booleans()):  # mostly no key twice: tables SQLite takes, its unique indexes too
        bulk = _first_of_each_unique_key(bulk, indexes)
    at = draw(st.integers(0, len(bulk)))
    rows = [*bulk[:at], *drawn, *bulk[at:]]
    appends = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    spill_bytes = draw(st.sampled_from([1, 97, 4096, DEFAULT_SPILL]))
    return Case(schema, rows, appends, spill_bytes, draw(st.integers(1, 4)))


def _bulk_rows(
    rng: random.Random, affinities: str, indexed: set[int], long: bool, count: int
) -> list[tuple[Any, ...]]:
    """``count`` rows of values like ``values`` draws: ties, shared prefixes, edges."""
    return [
        tuple(
            _bulk_value(rng, letter, column in indexed, long, n)
            for column, letter in enumerate(affinities)
        )
        for n in range(count)
    ]


def _bulk_value(rng: random.Random, letter: str, indexed: bool, long: bool, n: int) -> Any:
    if letter.isupper() and rng.random() < 0.15:
        return None
    if letter in "Tt":
        text = "".join(rng.choices(CHARACTERS, k=rng.randrange(8)))
        if rng.random() < 0.9:  # mostly distinct, after a prefix many share
            text += f"\x00{n}"
        if long and rng.random() < 0.05:
            text *= rng.randrange(1, 2000)
        return text
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(INTEGER_EDGES)
    if pick < 0.6:
        return rng.randrange(-(2**63), 2**63)
    if pick < 0.8:
        return rng.randrange(-3, 300)
    if not indexed and pick > 0.95:
        return rng.uniform(-1e6, 1e6)
    # no NaN in a NOT NULL column here: one in thousands of rows would refuse every table
    return rng.choice(
        [*WHOLE_REALS, *([math.nan] if letter == "I" else []), *([] if indexed else REALS)]
    )


def _first_of_each_unique_key(
    rows: list[tuple[Any, ...]], indexes: list[tuple[bool, tuple[int, ...]]]
) -> list[tuple[Any, ...]]:
    """The rows less those whose key in a unique index an earlier one has (as SQLite compares
    them: a whole real is its integer, NaN is NULL, and a key with NULL is never the same)."""
    seen: list[set[tuple[Any, ...]]] = [set() for _ in indexes]
    kept = []
    for row in rows:
        keys = [tuple(_as_stored(row[column]) for column in columns) for _, columns in indexes]
        if any(
            unique and None not in key and key in seen[x]
            for x, ((unique, _), key) in enumerate(zip(indexes, keys, strict=True))
        ):
            continue
        for x, key in enumerate(keys):
            seen[x].add(key)
        kept.append(row)
    return kept


def _as_stored(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and -(2.0**63) < value < 2.0**63:
            return int(value)
    return value


def _sqlite_version() -> int:
    major, minor, patch = sqlite3.sqlite_version_info
    return major * 1_000_000 + minor * 1_000 + patch


def _written(case: Case, path: Path) -> str | None:
    """The table written by TableFile; None, or the refusal's words."""
    indexes, schema_rows, _ = case.schema.layout()
    table = _btree.TableFile(
        str(path), case.schema.affinities, indexes, case.schema.page_size, case.spill_bytes
    )
    try:
        start = 0
        for end in [*case.appends, len(case.rows)]:
            table.append(iter(case.rows[start:end]))
            start = end
        assert table.rows == len(case.rows)
        table.finish(schema_rows, _sqlite_version(), threads=case.threads)
    except (TypeError, ValueError) as error:  # a row refused (append), a key twice (finish)
        return str(error)
    finally:
        table.close()
    return None


def _sqlite_made(case: Case, path: Path) -> str | None:
    """The same rows inserted by SQLite; None, or why it refused them."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"PRAGMA page_size = {case.schema.page_size}")
        for statement in case.schema.ddl:
            conn.execute(statement)
        marks = ", ".join("?" * len(case.schema.affinities))
        conn.executemany(f"INSERT INTO t VALUES ({marks})", case.rows)
        conn.commit()
    except sqlite3.IntegrityError as error:
        return str(error)
    finally:
        conn.close()
    return None


def _stored(value: Any) -> Any:
    """A value as compared: a real by its bits (0.0 and -0.0 differ)."""
    return ("real", value.hex()) if isinstance(value, float) else value


def _read(path: Path, case: Case) -> tuple[list[Any], dict[str, list[Any]]]:
    """(every row, with each value's storage class, in rowid order; each index's entries in
    its own order, walked through the index alone)."""
    indexes, _, names = case.schema.layout()
    count = len(case.schema.affinities)
    typed = ", ".join(f"c{n}, typeof(c{n})" for n in range(count))
    with sqlite3.connect(path) as conn:
        rows = [
            tuple(map(_stored, row))
            for row in conn.execute(f"SELECT rowid, {typed} FROM t ORDER BY rowid")
        ]
        walks = {}
        for name, (_, columns) in zip(names, indexes, strict=True):
            keys = ", ".join([*(f"c{c}" for c in columns), "rowid"])
            walk = f"SELECT {keys} FROM t INDEXED BY {name} ORDER BY {keys}"
            plan = " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {walk}"))
            assert plan == f"SCAN t USING COVERING INDEX {name}", plan  # no sort of its own
            walks[name] = [tuple(map(_stored, key)) for key in conn.execute(walk)]
    conn.close()
    return rows, walks


def _integrity(path: Path) -> list[Any]:
    with sqlite3.connect(path) as conn:
        checked = conn.execute("PRAGMA integrity_check").fetchall()
    conn.close()
    return checked


def _described(case: Case) -> None:
    """What the case exercises, for ``--hypothesis-show-statistics``."""
    rows = len(case.rows)
    event(
        f"rows: {'0' if rows == 0 else '1-9' if rows < 10 else '10-99' if rows < 100 else '100+'}"
    )
    texts = [len(v.encode()) for row in case.rows for v in row if isinstance(v, str)]
    event(f"a text past its page: {max(texts, default=0) > case.schema.page_size}")
    event(f"indexes: {len(case.schema.layout()[0])}, threads: {min(case.threads, 2)}+")
    event(f"keys spilled: {case.spill_bytes < DEFAULT_SPILL and rows > 0}")


def _same_as_sqlite(case: Case, folder: Path) -> None:
    _described(case)
    ours, theirs = folder / "ours.db", folder / "theirs.db"
    their_refusal = _sqlite_made(case, theirs)
    our_refusal = _written(case, ours)
    event(f"refused: {their_refusal and their_refusal.partition(' constraint')[0]}")
    if their_refusal is not None:  # a unique key twice, or NaN (NULL) in a NOT NULL column
        # SQLite stops at the first row it refuses; the writer refuses a row as it is appended,
        # a key twice only once all are in
        nan_refused = any(
            isinstance(value, float) and math.isnan(value) and letter == "i"
            for row in case.rows
            for value, letter in zip(row, case.schema.affinities, strict=True)
        )
        kind = their_refusal.partition(" constraint failed")[0]
        assert kind in (set(REFUSALS) if nan_refused else {"UNIQUE"}), their_refusal
        ours = REFUSALS["NOT NULL" if nan_refused else "UNIQUE"]
        assert our_refusal is not None and ours in our_refusal, (their_refusal, our_refusal)
        return
    assert our_refusal is None, our_refusal
    assert _integrity(ours) == [("ok",)]
    assert _read(ours, case) == _read(theirs, case)
    with sqlite3.connect(ours) as conn:
        assert conn.execute("PRAGMA page_size").fetchone() == (case.schema.page_size,)
    conn.close()
    assert sorted(path.name for path in folder.iterdir()) == ["ours.db", "theirs.db"]


_SPILLED = Case(  # many keys spilled one run each, merged on three threads
    Schema(
        "tIT",
        (
            "CREATE TABLE t (c0 TEXT PRIMARY KEY NOT NULL, c1 INTEGER, c2 TEXT)",
            "CREATE INDEX i0 ON t (c2, c1)",
        ),
        512,
    ),
    [(f"k{n:04d}" + "\x00" * (n % 3), n % 7, "ab" * (n % 300) or None) for n in range(600)],
    [100, 101],
    1,
    3,
)


@settings(
    max_examples=250,
    derandomize=True,  # the same examples on every run: a failure is never luck
    database=None,  # nothing written beside the tests
    deadline=None,  # a loaded machine is slow, not wrong
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
@example(_SPILLED)
@given(cases())
def test_a_random_table_is_what_sqlite_would_hold(case: Case) -> None:
    with tempfile.TemporaryDirectory(prefix="btree-fuzz-") as folder:
        _same_as_sqlite(case, Path(folder))


def test_a_schema_past_the_first_page_is_refused(tmp_path: Path) -> None:
    columns = ", ".join(f"column_with_a_long_name_{n} TEXT" for n in range(40))
    schema = Schema("T" * 40, (f"CREATE TABLE t ({columns})",), 512)
    case = Case(schema, [tuple(f"{n}" for n in range(40))], [], DEFAULT_SPILL, 1)
    assert _written(case, tmp_path / "ours.db") == "the schema does not fit on the first page"
