"""Receiving a multipart/form-data body straight to disk, with a size limit as it arrives.

Starlette's form parser spools files to the system temp folder and knows no overall limit;
this one writes each file field into the upload's own folder as the bytes come in, refuses
the body the moment it passes ``max_bytes`` (or at once, from Content-Length), and holds at
most one batch of the body in memory. Parsing and writing run on a worker thread, one
batch at a time, so the event loop never waits on the disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from graphboard.server.errors import ApiError, PayloadTooLarge

BATCH = 1 << 20  # bytes handed to the parser thread at a time
MAX_FIELD_BYTES = 1024  # a text field is a flag or a name
MAX_PARTS = 16


class UnsupportedMediaType(ApiError):
    status = 415
    code = "unsupported_media_type"


@dataclass(slots=True)
class ReceivedFile:
    field: str
    filename: str
    path: Path
    size: int = 0


@dataclass(slots=True)
class ReceivedForm:
    files: dict[str, ReceivedFile] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)


class _Sink:
    """The parser's callbacks: route each part to a file or a small text buffer."""

    def __init__(self, folder: Path, file_fields: dict[str, int], text_fields: set[str]) -> None:
        self.folder = folder
        self.file_fields = file_fields  # field -> its own size limit
        self.text_fields = text_fields
        self.form = ReceivedForm()
        self.parts = 0
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._headers: dict[str, bytes] = {}
        self._file: ReceivedFile | None = None
        self._handle: IO[bytes] | None = None
        self._text: tuple[str, bytearray] | None = None
        self.ended = False

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda data, start, end: self._header_name.extend(data[start:end]),
            "on_header_value": lambda data, start, end: self._header_value.extend(data[start:end]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        }

    def _end(self) -> None:
        self.ended = True

    def _part_begin(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise ApiError(f"more than {MAX_PARTS} form fields", code="bad_form")
        self._headers = {}

    def _header_end(self) -> None:
        self._headers[self._header_name.decode("latin-1").lower()] = bytes(self._header_value)
        self._header_name.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        disposition, options = parse_options_header(self._headers.get("content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        if disposition != b"form-data" or not name:
            raise ApiError("a form part without a name (Content-Disposition)", code="bad_form")
        filename = options.get(b"filename")
        if filename is not None:
            if name not in self.file_fields:
                raise ApiError(
                    f"{name!r} is not a file field (expected {', '.join(self.file_fields)})",
                    code="unknown_field",
                )
            if name in self.form.files:
                raise ApiError(f"file field {name!r} given twice", code="bad_form")
            path = self.folder / f"{name}.upload"
            self._file = ReceivedFile(name, filename.decode("utf-8", "replace"), path)
            self._handle = path.open("xb")
            self.form.files[name] = self._file
        else:
            if name in self.file_fields:
                raise ApiError(f"{name!r} must be sent as a file", code="bad_form")
            if name not in self.text_fields:
                raise ApiError(
                    f"unknown form field {name!r} (expected {', '.join(sorted(self.text_fields))})",
                    code="unknown_field",
                )
            if name in self.form.fields:
                raise ApiError(f"form field {name!r} given twice", code="bad_form")
            self._text = (name, bytearray())

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._file is not None and self._handle is not None:
            self._file.size += end - start
            limit = self.file_fields[self._file.field]
            if self._file.size > limit:
                raise PayloadTooLarge(
                    f"{self._file.field}: more than {limit} bytes", code="upload_too_large"
                )
            self._handle.write(data[start:end])
        elif self._text is not None:
            self._text[1].extend(data[start:end])
            if len(self._text[1]) > MAX_FIELD_BYTES:
                raise ApiError(f"form field {self._text[0]!r} is too long", code="bad_form")

    def _part_end(self) -> None:
        if self._handle is not None:
            self._handle.close()
        if self._text is not None:
            self.form.fields[self._text[0]] = self._text[1].decode("utf-8", "replace")
        self._file, self._handle, self._text = None, None, None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _boundary(request: Request) -> bytes:
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise UnsupportedMediaType(
            "send the dumps as multipart/form-data (curl -F target=@dump.tar.gz ...)"
        )
    return boundary


def _feed(parser: MultipartParser, batch: bytes) -> None:
    try:
        parser.write(batch)
    except MultipartParseError as error:
        raise ApiError(f"malformed multipart body: {error}", code="bad_form") from None


async def receive_form(
    request: Request,
    folder: Path,
    *,
    file_fields: dict[str, int],
    text_fields: set[str],
    max_bytes: int,
) -> ReceivedForm:
    """Parse the request body into ``folder`` (which must exist)."""
    boundary = _boundary(request)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLarge(
            f"the upload is {int(declared)} bytes; the limit is {max_bytes}",
            code="upload_too_large",
        )
    sink = _Sink(folder, file_fields, text_fields)
    parser = MultipartParser(boundary, sink.callbacks())  # type: ignore[arg-type]
    received = 0
    batch = bytearray()
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > max_bytes:
                raise PayloadTooLarge(
                    f"the upload passes the limit of {max_bytes} bytes", code="upload_too_large"
                )
            batch.extend(chunk)
            if len(batch) >= BATCH:
                await run_in_threadpool(_feed, parser, bytes(batch))
                batch.clear()
        if batch:
            await run_in_threadpool(_feed, parser, bytes(batch))
        parser.finalize()
    finally:
        sink.close()
    if not sink.ended:
        raise ApiError("the multipart body ends before its closing boundary", code="bad_form")
    return sink.form
