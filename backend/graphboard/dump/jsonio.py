"""Reading msprobe's JSON files with errors that point at the file, line and column.

dump.json may hold bare ``NaN``, ``Infinity`` and ``-Infinity`` tokens (Python's json module
writes them), which strict parsers reject. Small files are parsed whole (orjson first, the
standard library when orjson refuses those tokens); large dump.json files are streamed record
by record so that memory stays proportional to one record, not to the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import orjson

from graphboard.dump.repeats import INDENT, repeated_keys
from graphboard.errors import DumpError

# Above this size dump.json is streamed instead of parsed whole.
STREAM_THRESHOLD_BYTES = 64 * 1024 * 1024
_CHUNK_CHARS = 4 * 1024 * 1024
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _is_truncation(pos: int, text: str, message: str) -> bool:
    """The parser ran out of text: at the very end, or inside a string never closed."""
    return pos >= len(text.rstrip()) or message.startswith("Unterminated string")


def _decode_error(path: Path, error: json.JSONDecodeError, what: str) -> DumpError:
    if _is_truncation(error.pos, error.doc, error.msg):
        doc = error.doc  # report where the text stops, not where the open string began
        line, column = doc.count("\n") + 1, len(doc) - doc.rfind("\n")
        problem = f"{what} ends early at line {line}, column {column} (truncated file?)"
    else:
        problem = f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
    return DumpError(path, problem)


def read_text(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DumpError(path, "file not found") from None
    except IsADirectoryError:
        raise DumpError(path, "is a folder, not a file") from None
    except PermissionError:
        raise DumpError(path, "permission denied (cannot read the file)") from None
    except OSError as error:
        raise DumpError(path, f"cannot read: {error.strerror or error}") from None


def parse_json_bytes(raw: bytes, path: Path, what: str) -> Any:
    """Parse a whole JSON document, accepting NaN/Infinity tokens."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass  # NaN/Infinity tokens or a real error: the standard parser tells which
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DumpError(path, f"not UTF-8 text (byte {error.start})") from None
    if not text.strip():
        raise DumpError(path, "file is empty", expected=f"a JSON {what}")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise _decode_error(path, error, "the JSON document") from None


def load_json_object(path: Path, what: str) -> dict[str, Any]:
    """Load a JSON file whose top level must be an object."""
    return read_json_object(path, what)[0]


def read_json_object(path: Path, what: str) -> tuple[dict[str, Any], bytes]:
    """load_json_object, with the file's text (to look for repeated keys in)."""
    raw = read_text(path)
    value = parse_json_bytes(raw, path, "object")
    if not isinstance(value, dict):
        raise DumpError(
            path, f"top level is a JSON {type(value).__name__}", expected=f"{what} as a JSON object"
        )
    return value, raw


class _TextStream:
    """A growing window over a text file, for incremental ``raw_decode`` parsing."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self._handle = handle
        self._path = path
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._dropped_lines = 0
        self._dropped_tail = 0  # characters after the last dropped newline

    def fill(self) -> None:
        if self.eof:
            return
        try:
            chunk = self._handle.read(_CHUNK_CHARS)
        except UnicodeDecodeError as error:
            raise DumpError(self._path, f"not UTF-8 text ({error.reason})") from None
        if not chunk:
            self.eof = True
            return
        if self.pos:
            dropped = self.buf[: self.pos]
            newlines = dropped.count("\n")
            if newlines:
                self._dropped_lines += newlines
                self._dropped_tail = len(dropped) - dropped.rfind("\n") - 1
            else:
                self._dropped_tail += len(dropped)
            self.buf = self.buf[self.pos :] + chunk
            self.pos = 0
        else:
            self.buf += chunk

    def location(self, pos: int) -> tuple[int, int]:
        before = self.buf[:pos]
        newlines = before.count("\n")
        line = self._dropped_lines + newlines + 1
        column = (pos - before.rfind("\n")) if newlines else (self._dropped_tail + pos + 1)
        return line, column

    def fail(self, pos: int, problem: str) -> DumpError:
        if self.eof and _is_truncation(pos, self.buf, problem):
            line, column = self.location(len(self.buf))
            return DumpError(
                self._path,
                f"dump.json ends early at line {line}, column {column} (truncated file?)",
            )
        line, column = self.location(pos)
        return DumpError(self._path, f"invalid JSON at line {line}, column {column}: {problem}")

    def skip_ws(self) -> None:
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or self.eof:
                return
            self.fill()

    def peek(self) -> str:
        self.skip_ws()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(self.pos, f"expecting {char!r}")
        self.pos += 1

    def keys(self, what: str) -> Iterator[str]:
        """The keys of the object that starts here, each yielded with the stream at its value,
        which the caller reads before asking for the next key; ``what`` names a key in errors."""
        self.expect("{")
        first = True
        while True:
            if self.peek() == "}":
                self.pos += 1
                return
            if not first:
                self.expect(",")
            first = False
            key = self.value()
            if not isinstance(key, str):
                raise self.fail(self.pos, f"expecting a {what}")
            self.expect(":")
            yield key

    def value(self) -> Any:
        self.skip_ws()
        while True:
            if self.pos > len(self.buf) // 2 and not self.eof:
                self.fill()
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as error:
                needs_more = error.pos >= len(self.buf) - 8 or error.msg.startswith(
                    "Unterminated string"
                )
                if needs_more and not self.eof:
                    self.fill()
                    continue
                raise self.fail(error.pos, error.msg) from None
            if end >= len(self.buf) and not self.eof:
                self.fill()  # a number may continue in the next chunk
                continue
            self.pos = end
            return value


class DumpFile:
    """dump.json read record by record. ``header`` is complete once ``records()`` is exhausted.

    A file that is ``{}`` (no header, no data; msprobe builds from construct.json alone) has
    no records and sets ``empty``. ``repeated_records`` names the records that appear twice.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.has_data = False
        self.empty = False
        self.record_keys = 0  # record names the parser read, repeats included
        self._repeats: list[str] | None = None  # known once the whole file was parsed

    def records(self) -> Iterator[tuple[str, Any]]:
        try:
            size = self.path.stat().st_size
        except OSError:
            size = 0
        if size <= STREAM_THRESHOLD_BYTES:
            yield from self._whole()
            return
        split = _PrettySplitter(self.path)
        if split.detect():
            yield from split.records()
            self.header = split.header
            self.has_data = True
            self.record_keys = split.record_keys
        else:
            yield from self._streamed()

    def repeated_records(self, distinct: int) -> list[str]:
        """Record names that appear more than once, in order, once ``records()`` gave
        ``distinct`` names; nothing to do unless the parser read more names than that."""
        if self._repeats is not None:
            return self._repeats
        if self.record_keys == distinct:
            return []
        # The split and streamed readers hand every repeat on: read the names again.
        seen: set[str] = set()
        repeats: dict[str, None] = {}
        for name, _ in DumpFile(self.path).records():
            if name in seen:
                repeats[name] = None
            seen.add(name)
        return list(repeats)

    def _whole(self) -> Iterator[tuple[str, Any]]:
        document, raw = read_json_object(self.path, "dump.json")
        if not document:
            self.empty = True
            self._repeats = []
            return
        data = document.get("data")
        self.header = {key: value for key, value in document.items() if key != "data"}
        self._check_data(data)
        assert isinstance(data, dict)
        self._repeats = repeated_keys(raw, data, "data")
        self.record_keys = len(data)
        yield from data.items()

    def _check_data(self, data: Any) -> None:
        if data is None:
            raise DumpError(
                self.path, 'no "data" key', expected='{"task": ..., "data": {node name: record}}'
            )
        if not isinstance(data, dict):
            raise DumpError(
                self.path,
                f'"data" is a JSON {type(data).__name__}',
                expected="an object of records",
            )
        self.has_data = True

    def _streamed(self) -> Iterator[tuple[str, Any]]:
        try:
            handle = self.path.open("r", encoding="utf-8")
        except OSError as error:
            raise DumpError(self.path, f"cannot read: {error.strerror or error}") from None
        with handle:
            stream = _TextStream(handle, self.path)
            stream.fill()
            if not stream.buf.strip():
                raise DumpError(self.path, "file is empty", expected="a JSON object")
            for key in stream.keys("property name"):
                if key != "data":
                    self.header[key] = stream.value()
                    continue
                if stream.peek() != "{":
                    self._check_data(stream.value())
                self.has_data = True
                for name in stream.keys("node name"):
                    self.record_keys += 1
                    yield name, stream.value()
            if not self.has_data:
                if not self.header:
                    self.empty = True
                    return
                self._check_data(None)


_SPACES = re.compile(rb"[ \t\r\n]*")
_BATCH_RECORDS = 256  # records per orjson call on the fast path
_SPLIT_CHUNK = 32 * 1024 * 1024
_DETECT_BYTES = 64 * 1024


def _locate(text: bytes, pos: int, line: int = 1, column: int = 1) -> tuple[int, int]:
    """Line and column of ``text[pos]``, given the line and column of ``text[0]``."""
    newlines = text.count(b"\n", 0, pos)
    if not newlines:
        return line, column + pos
    return line + newlines, pos - text.rfind(b"\n", 0, pos)


class _PrettySplitter:
    """Fast path for big pretty-printed dump.json files (msprobe writes ``indent=1``).

    A record of ``data`` starts on a line indented exactly twice the file's unit, and no JSON
    string holds a raw newline, so those lines split the file into records that orjson parses
    one by one (the standard parser takes a record orjson refuses, e.g. one with NaN).
    Between records it checks what a parser would (commas, the closing braces, keys after
    ``data``), so it accepts and rejects what the whole-file parser does, at the same line
    and column. ``detect`` says whether the file has that shape; if not, the caller streams it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.unit = b""
        self.record_keys = 0

    def detect(self) -> bool:
        try:
            with self.path.open("rb") as handle:
                head = handle.read(_DETECT_BYTES)
        except OSError:
            return False
        match = INDENT.match(head)
        if match is None:
            return False
        unit = match.group(1)
        data_key = b"\n" + unit + b'"data":'
        found = head.find(data_key)
        if found < 0:
            return False  # no "data" near the top: the streaming parser says what is wrong
        opening = _SPACES.match(head, found + len(data_key)).end()  # type: ignore[union-attr]
        if head[opening : opening + 1] != b"{":
            return False
        first = _SPACES.match(head, opening + 1).end()  # type: ignore[union-attr]
        record_start = b"\n" + unit * 2 + b'"'
        if head[first : first + 1] != b"}" and (
            head[first - len(record_start) + 1 : first + 1] != record_start
        ):
            return False  # records not indented as the rest of the file
        self.unit = unit
        return True

    def _invalid(self, where: tuple[int, int], problem: str) -> DumpError:
        line, column = where
        return DumpError(self.path, f"invalid JSON at line {line}, column {column}: {problem}")

    def _truncated(self, where: tuple[int, int]) -> DumpError:
        line, column = where
        return DumpError(
            self.path, f"dump.json ends early at line {line}, column {column} (truncated file?)"
        )

    def _parse(self, text: bytes, line: int) -> Any:
        """Parse ``text``, whose first line is line ``line`` of the file."""
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        try:
            return _DECODER.decode(text.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise DumpError(
                self.path, f"not UTF-8 text near line {line} (byte {error.start})"
            ) from None
        except json.JSONDecodeError as error:
            where = line + error.lineno - 1
            raise self._invalid((where, error.colno), error.msg) from None

    @staticmethod
    def _batch(
        buf: bytes, first: int, last: int, count: int, closing: bool
    ) -> dict[str, Any] | None:
        """Records ``buf[first:last]`` parsed in one call, or None to read them one by one."""
        body = buf[first:last].rstrip()
        if body.endswith(b","):
            if closing:
                return None  # a trailing comma before "}": the slow path names it
            body = body[:-1]
        elif not closing:
            return None  # the comma before the next record is missing
        try:
            records = orjson.loads(b"{" + body + b"}")
        except orjson.JSONDecodeError:
            return None
        return records if isinstance(records, dict) and len(records) == count else None

    def _header_fields(self, body: bytes, line: int) -> None:
        """Top-level keys other than "data"; ``body`` (from line ``line``) has no outer comma."""
        value = self._parse(b"{" + body + b"}", line)
        if isinstance(value, dict):
            self.header.update(value)

    def records(self) -> Iterator[tuple[str, Any]]:
        unit = self.unit
        data_key = b"\n" + unit + b'"data":'
        record_start = re.compile(re.escape(b"\n" + unit * 2 + b'"'))
        data_end = re.compile(rb"\n" + re.escape(unit) + rb"\}")
        with self.path.open("rb") as handle:
            buf = handle.read(max(_SPLIT_CHUNK, _DETECT_BYTES))
            found = buf.find(data_key)  # detect() saw it in the first _DETECT_BYTES
            brace = buf.index(b"{")
            head = buf[brace + 1 : found].rstrip()
            if head:
                if not head.endswith(b","):
                    where = _locate(buf, found + 1 + len(unit))
                    raise self._invalid(where, "Expecting ',' delimiter")
                self._header_fields(head[:-1], buf.count(b"\n", 0, brace) + 1)
            opening = buf.index(b"{", found + len(data_key))
            origin = _locate(buf, opening + 1)  # line and column of buf[0] from here on
            buf = buf[opening + 1 :]
            first = _SPACES.match(buf).end()  # type: ignore[union-attr]
            if buf[first : first + 1] == b"}":  # "data": {}
                self._tail(handle, buf, first + 1, origin)
                return
            eof = False
            while True:
                end = data_end.search(buf)
                limit = end.start() if end is not None else len(buf)
                starts = [m.start() for m in record_start.finditer(buf, 0, limit)]
                if end is not None:
                    bounds = [*starts, end.start()]
                elif eof:
                    raise self._truncated(_locate(buf, len(buf), *origin))
                else:
                    bounds = starts  # the last record may continue in the next chunk
                counted, line = 0, origin[0] + 1
                last_pair = len(bounds) - 2
                index = slow_until = 0
                while index <= last_pair:
                    # Fast path: a batch of records in one orjson call. Anything unusual in it
                    # (NaN tokens, a syntax error, a missing comma, a duplicate name) and the
                    # whole batch is read record by record below, which reports the exact place.
                    if index >= slow_until:
                        stop = min(index + _BATCH_RECORDS, last_pair + 1)
                        closing = end is not None and stop == last_pair + 1
                        batch = self._batch(buf, bounds[index], bounds[stop], stop - index, closing)
                        if batch is not None:
                            self.record_keys += stop - index  # none repeated in the batch
                            yield from batch.items()
                            index = stop
                            continue
                        slow_until = stop
                    first, last = bounds[index], bounds[index + 1]
                    line += buf.count(b"\n", counted, first)  # incremental: linear per chunk
                    counted = first
                    body = buf[first:last].rstrip()
                    closing = end is not None and index == last_pair
                    if body.endswith(b","):
                        if closing:
                            where = _locate(buf, last + 1 + len(unit), *origin)
                            raise self._invalid(
                                where, "Expecting property name enclosed in double quotes"
                            )
                        body = body[:-1]
                    elif not closing:
                        where = _locate(buf, last + 1 + 2 * len(unit), *origin)
                        raise self._invalid(where, "Expecting ',' delimiter")
                    # body starts with the newline before the record: "{" stands on the line
                    # above it, so every line of the record keeps its own number and columns.
                    record = self._parse(b"{" + body + b"}", line - 1)
                    if not isinstance(record, dict) or len(record) != 1:
                        raise DumpError(
                            self.path,
                            f"unexpected content at line {line}",
                            expected="one record per key",
                        )
                    self.record_keys += 1
                    yield from record.items()
                    index += 1
                if end is not None:
                    self._tail(handle, buf, end.end(), origin)
                    return
                keep = bounds[-1] if len(bounds) > 1 else 0
                origin = _locate(buf, keep, *origin)
                more = handle.read(_SPLIT_CHUNK)
                eof = not more
                buf = buf[keep:] + more

    def _tail(self, handle: BinaryIO, buf: bytes, pos: int, origin: tuple[int, int]) -> None:
        """After data's closing brace: more top-level keys, then the document's own brace."""
        origin = _locate(buf, pos, *origin)
        rest = buf[pos:] + handle.read()
        close = rest.rstrip()
        if not close.endswith(b"}"):
            raise self._truncated(_locate(rest, len(rest), *origin))
        inner = close[:-1]
        comma = _SPACES.match(inner).end()  # type: ignore[union-attr]
        if comma == len(inner):
            return
        if inner[comma : comma + 1] != b",":
            raise self._invalid(_locate(rest, comma, *origin), "Expecting ',' delimiter")
        body = inner[comma + 1 :]
        if not body.strip():
            where = _locate(rest, len(inner), *origin)
            raise self._invalid(where, "Expecting property name enclosed in double quotes")
        self._header_fields(body, _locate(rest, comma, *origin)[0])
