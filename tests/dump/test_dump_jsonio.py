"""dump.json's three readers (whole file, pretty-file record splitter, stream) read the same
records and header, NaN/Infinity tokens included, wherever chunk boundaries fall."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import graphboard.dump.jsonio as jsonio
from dumpmaker import fixture_path, record, tensor, tiny_model
from graphboard.dump.jsonio import DumpFile
from graphboard.dump.records import parse_record

READERS = ["whole", "split", "stream"]


def _read(
    path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Records and header of ``path`` through one reader; ``split`` checks that the splitter
    takes the file, ``stream`` keeps the splitter out."""
    original = jsonio._PrettySplitter.detect

    def must_split(splitter: jsonio._PrettySplitter) -> bool:
        assert original(splitter), f"{path} is not taken by the splitter"
        return True

    with monkeypatch.context() as patch:
        if reader != "whole":
            patch.setattr(jsonio, "STREAM_THRESHOLD_BYTES", 0)
        if reader == "split":
            patch.setattr(jsonio._PrettySplitter, "detect", must_split)
        if reader == "stream":
            patch.setattr(jsonio._PrettySplitter, "detect", lambda _splitter: False)
        dump = DumpFile(path)
        records = list(dump.records())
        return records, dump.header


def _canonical(value: Any) -> Any:
    """``value`` with NaN made comparable (NaN != NaN) and types kept apart (1 == 1.0)."""
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("float", value)
    if isinstance(value, dict):
        return [(key, _canonical(item)) for key, item in value.items()]
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return (type(value).__name__, value)


def _same(left: Any, right: Any) -> bool:
    return bool(_canonical(left) == _canonical(right))


def _dump_file(tmp_path: Path, document: dict[str, Any], indent: int | None = 1) -> Path:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(document, indent=indent))
    return path


NON_FINITE: dict[str, Any] = {
    "task": "statistics",
    "level": "mix",
    "framework": "pytorch",
    "dump_data_dir": None,
    "data": {
        "Tensor.__mul__.0.forward": record(
            args=[tensor(stats=(math.inf, -math.inf, math.nan, math.inf))],
            output=[tensor(stats=(math.nan, math.nan, math.nan, math.nan))],
        ),
        "Torch.sum.0.forward": record(output=[tensor(stats=(1, 0, 0.5, 2))]),
    },
}


@pytest.mark.parametrize("reader", READERS)
def test_nan_and_infinity_tokens_come_back_as_floats(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _dump_file(tmp_path, NON_FINITE, indent=None if reader == "stream" else 1)
    text = path.read_text()
    assert "NaN" in text and "-Infinity" in text and ": Infinity" in text  # bare tokens
    records, header = _read(path, reader, monkeypatch)
    assert header == {
        "task": "statistics",
        "level": "mix",
        "framework": "pytorch",
        "dump_data_dir": None,
    }
    assert [name for name, _ in records] == ["Tensor.__mul__.0.forward", "Torch.sum.0.forward"]
    params = parse_record(records[0][0], records[0][1], path)
    first, output = params[0], params[-1]
    assert (first.max, first.min, first.norm) == (math.inf, -math.inf, math.inf)
    assert isinstance(first.mean, float) and math.isnan(first.mean)
    assert all(
        isinstance(value, float) and math.isnan(value)
        for value in (output.max, output.min, output.mean, output.norm)
    )
    # JSON ints in statistics stay ints in every reader (msprobe shows them as "1", not "1.0")
    total = parse_record(records[1][0], records[1][1], path)[-1]
    stats = [total.max, total.min, total.mean, total.norm]
    assert stats == [1, 0, 0.5, 2]
    assert [type(value) for value in stats] == [int, int, float, int]


@pytest.mark.parametrize("reader", ["split", "stream"])
def test_every_reader_reads_the_public_resnet_dump_as_the_whole_file_parser_does(
    reader: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = fixture_path("msprobe-resnet50-gpu", "step0", "proc2016", "dump.json")
    expected = _read(path, "whole", monkeypatch)
    assert len(expected[0]) == 760
    if reader == "stream":
        compact = tmp_path / "dump.json"
        compact.write_text(json.dumps(json.loads(path.read_text())))
        path = compact
    assert _same(_read(path, reader, monkeypatch), expected)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 4096])
def test_the_splitter_reads_the_same_records_wherever_chunks_end(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fixture_path("convnet-overflow", "target", "step0", "rank0", "dump.json")  # NaN, inf
    expected = _read(path, "whole", monkeypatch)
    monkeypatch.setattr(jsonio, "_SPLIT_CHUNK", chunk)
    assert _same(_read(path, "split", monkeypatch), expected)


@pytest.mark.parametrize("chunk", [5, 997])
def test_the_stream_reads_the_same_records_wherever_chunks_end(
    chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = fixture_path("convnet-overflow", "target", "step0", "rank0", "dump.json")
    expected = _read(source, "whole", monkeypatch)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(json.loads(source.read_text())))
    monkeypatch.setattr(jsonio, "_CHUNK_CHARS", chunk)
    assert _same(_read(path, "stream", monkeypatch), expected)


@pytest.mark.parametrize("reader", READERS)
def test_header_keys_after_data_are_read(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid JSON in any key order: the splitter once rejected keys after "data"."""
    data = NON_FINITE["data"]
    document = {"task": "tensor", "data": data, "level": "L1", "framework": "mindspore"}
    path = _dump_file(tmp_path, document, indent=None if reader == "stream" else 1)
    records, header = _read(path, reader, monkeypatch)
    assert header == {"task": "tensor", "level": "L1", "framework": "mindspore"}
    assert [name for name, _ in records] == list(data)


@pytest.mark.parametrize("reader", READERS)
def test_a_dump_with_no_records_reads_as_empty(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = {"task": "statistics", "level": "mix", "data": {}}
    path = _dump_file(tmp_path, document, indent=None if reader == "stream" else 1)
    assert _read(path, reader, monkeypatch) == ([], {"task": "statistics", "level": "mix"})


def test_a_big_file_indented_unevenly_is_streamed_not_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records not indented twice the file's unit cannot be split by lines; the stream
    parser reads them instead of the splitter reading nothing."""
    path = tmp_path / "dump.json"
    path.write_text(
        '{\n "task": "statistics",\n "data": {\n    "Torch.sum.0.forward": {"output": []}\n }\n}'
    )
    assert not jsonio._PrettySplitter(path).detect()
    monkeypatch.setattr(jsonio, "STREAM_THRESHOLD_BYTES", 0)
    dump = DumpFile(path)
    assert list(dump.records()) == [("Torch.sum.0.forward", {"output": []})]
    assert dump.header == {"task": "statistics"}


def test_msprobe_formatted_dumps_take_the_splitter(tmp_path: Path) -> None:
    rank = tiny_model().write(tmp_path / "rank0")
    assert jsonio._PrettySplitter(rank / "dump.json").detect()
    (rank / "dump.json").write_text(json.dumps(json.loads((rank / "dump.json").read_text())))
    assert not jsonio._PrettySplitter(rank / "dump.json").detect()


def test_errors_inside_a_split_record_point_at_the_file_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first line of a record keeps its own column (the record is parsed alone)."""
    rank = tiny_model().write(tmp_path / "rank0")
    path = rank / "dump.json"
    text = path.read_text()
    key = '  "Torch.relu.0.forward": {'
    at = text.index(key)
    path.write_text(text[:at] + key.replace(":", "") + text[at + len(key) :])
    line = text.count("\n", 0, at) + 1
    column = len(key.replace(": {", "")) + 2  # after the name and a space: the brace
    expected = f"{path}: invalid JSON at line {line}, column {column}: Expecting ':' delimiter"
    for reader in ("whole", "split"):
        with pytest.raises(jsonio.DumpError) as caught:
            _read(path, reader, monkeypatch)
        assert str(caught.value) == expected, reader


def test_header_errors_in_a_split_file_point_at_the_right_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rank = tiny_model().write(tmp_path / "rank0")
    path = rank / "dump.json"
    path.write_text(path.read_text().replace('"level": "mix"', '"level": mix', 1))
    for reader in ("whole", "split"):
        with pytest.raises(jsonio.DumpError, match=r"at line 3, column 11: Expecting value"):
            _read(path, reader, monkeypatch)
