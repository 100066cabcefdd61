"""Reading msprobe's JSON files with errors that point at the file, line and column.

dump.json may hold bare ``NaN``, ``Infinity`` and ``-Infinity`` tokens (Python's json module
writes them), which strict parsers reject. Small files are parsed whole (orjson first, the
standard library when orjson refuses those tokens); large dump.json files are streamed record
by record so that memory stays proportional to one record, not to the file.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import orjson

from graphboard.errors import DumpError

# Above this size dump.json is streamed instead of parsed whole.
STREAM_THRESHOLD_BYTES = 64 * 1024 * 1024
_CHUNK_CHARS = 4 * 1024 * 1024
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _decode_error(path: Path, error: json.JSONDecodeError, what: str) -> DumpError:
    if error.pos >= len(error.doc.rstrip()):
        problem = (
            f"{what} ends early at line {error.lineno}, column {error.colno} (truncated file?)"
        )
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
    value = parse_json_bytes(read_text(path), path, "object")
    if not isinstance(value, dict):
        raise DumpError(
            path, f"top level is a JSON {type(value).__name__}", expected=f"{what} as a JSON object"
        )
    return value


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
        line, column = self.location(pos)
        if self.eof and pos >= len(self.buf.rstrip()):
            return DumpError(
                self._path,
                f"dump.json ends early at line {line}, column {column} (truncated file?)",
            )
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
    """dump.json read record by record. ``header`` is complete once ``records()`` is exhausted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.has_data = False

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
        else:
            yield from self._streamed()

    def _whole(self) -> Iterator[tuple[str, Any]]:
        document = load_json_object(self.path, "dump.json")
        data = document.get("data")
        self.header = {key: value for key, value in document.items() if key != "data"}
        self._check_data(data)
        assert isinstance(data, dict)
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
            stream.expect("{")
            first = True
            while True:
                if stream.peek() == "}":
                    stream.pos += 1
                    break
                if not first:
                    stream.expect(",")
                first = False
                key = stream.value()
                if not isinstance(key, str):
                    raise stream.fail(stream.pos, "expecting a property name")
                stream.expect(":")
                if key != "data":
                    self.header[key] = stream.value()
                    continue
                if stream.peek() != "{":
                    self._check_data(stream.value())
                self.has_data = True
                stream.expect("{")
                first_record = True
                while True:
                    if stream.peek() == "}":
                        stream.pos += 1
                        break
                    if not first_record:
                        stream.expect(",")
                    first_record = False
                    name = stream.value()
                    if not isinstance(name, str):
                        raise stream.fail(stream.pos, "expecting a node name")
                    stream.expect(":")
                    yield name, stream.value()
            if not self.has_data:
                self._check_data(None)


_INDENT = re.compile(rb"\A\s*\{\r?\n( +)\"")
_SPLIT_CHUNK = 32 * 1024 * 1024


class _PrettySplitter:
    """Fast path for big pretty-printed dump.json files (msprobe writes ``indent=1``).

    A record of ``data`` starts on a line indented exactly twice the file's unit, and no JSON
    string holds a raw newline, so those lines split the file into records that orjson parses
    one by one (the standard parser takes a record orjson refuses, e.g. one with NaN).
    ``detect`` says whether the file has that shape; if not, the caller streams it instead.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.unit = b""

    def detect(self) -> bool:
        try:
            with self.path.open("rb") as handle:
                head = handle.read(4096)
        except OSError:
            return False
        match = _INDENT.match(head)
        if match is None:
            return False
        self.unit = match.group(1)
        return True

    def _parse(self, text: bytes, line: int) -> Any:
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
            raise DumpError(
                self.path, f"invalid JSON at line {where}, column {error.colno}: {error.msg}"
            ) from None

    def _header_fields(self, text: bytes, line: int) -> None:
        body = text.strip().rstrip(b",")
        if body:
            value = self._parse(b"{" + body + b"}", line)
            if isinstance(value, dict):
                self.header.update(value)

    def records(self) -> Iterator[tuple[str, Any]]:
        unit = self.unit
        data_key = b"\n" + unit + b'"data":'
        record_start = b"\n" + unit * 2 + b'"'
        data_end = re.compile(rb"\n" + re.escape(unit) + rb"\}")
        with self.path.open("rb") as handle:
            buf = handle.read(_SPLIT_CHUNK)
            lines = 0
            while (found := buf.find(data_key)) < 0:
                more = handle.read(_SPLIT_CHUNK)
                if not more:
                    raise DumpError(
                        self.path,
                        'no "data" key',
                        expected='{"task": ..., "data": {node name: record}}',
                    )
                buf += more
            self._header_fields(buf[buf.index(b"{") + 1 : found], 1)
            lines += buf.count(b"\n", 0, found)
            opening = buf.index(b"{", found + len(data_key))
            lines += buf.count(b"\n", found, opening)
            buf = buf[opening + 1 :]
            eof = False
            while True:
                starts = [m.start() for m in re.finditer(re.escape(record_start), buf)]
                end = data_end.search(buf)
                if end is not None:
                    starts = [start for start in starts if start < end.start()]
                    bounds = [*starts, end.start()]
                elif eof:
                    line = lines + buf.count(b"\n") + 1
                    raise DumpError(
                        self.path, f"dump.json ends early at line {line} (truncated file?)"
                    )
                else:
                    bounds = starts  # the last record may continue in the next chunk
                counted, line = 0, lines + 2
                for first, last in itertools.pairwise(bounds):
                    line += buf.count(b"\n", counted, first)  # incremental: linear per chunk
                    counted = first
                    record = self._parse(b"{" + buf[first:last].strip().rstrip(b",") + b"}", line)
                    if not isinstance(record, dict) or len(record) != 1:
                        raise DumpError(
                            self.path,
                            f"unexpected content at line {line}",
                            expected="one record per key",
                        )
                    yield from record.items()
                if end is not None:
                    rest = buf[end.end() :]
                    rest = rest[: rest.rfind(b"}")] if b"}" in rest else rest
                    self._header_fields(rest, lines + buf.count(b"\n", 0, end.end()) + 1)
                    return
                keep = bounds[-1] if len(bounds) > 1 else 0
                lines += buf.count(b"\n", 0, keep)
                more = handle.read(_SPLIT_CHUNK)
                eof = not more
                buf = buf[keep:] + more
