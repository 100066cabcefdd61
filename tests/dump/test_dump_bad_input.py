"""Bad input: each failure names the file (and the record), says what was expected, and
leaves nothing in the output folder: no .vis.db, no temp file, no part file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import graphboard.dump.jsonio as jsonio
from dumpmaker import (
    RankDump,
    assert_nothing_written,
    output_folder,
    tiny_model,
    write_dump_root,
)
from graphboard.errors import DumpError, GraphboardError, LayoutError
from graphboard.pipeline import BuildOptions, run_build

NOBODY = 65534


def _fails(target: Path, out: Path, golden: Path | None = None) -> str:
    """Run a build that must fail; return its message after checking nothing was left."""
    with pytest.raises(GraphboardError) as caught:
        run_build(BuildOptions(target=target, golden=golden, output_dir=out, workers=1))
    assert_nothing_written(out)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return output_folder(tmp_path)


@pytest.fixture
def rank(tmp_path: Path) -> Path:
    """A good rank folder, written as msprobe does (indent=1)."""
    return tiny_model().write(tmp_path / "dump" / "step0" / "rank0")


# --- missing and empty files ------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["construct.json", "dump.json", "stack.json"])
def test_a_missing_dump_file_is_named_with_the_rank_folder(
    rank: Path, out: Path, missing: str
) -> None:
    (rank / missing).unlink()
    message = _fails(rank, out)
    assert message.startswith(f"{rank}: missing {missing}")
    present = [name for name in ("construct.json", "dump.json", "stack.json") if name != missing]
    assert f"(found {', '.join(present)})" in message
    assert "expected construct.json, dump.json and stack.json in every rank folder" in message


def test_an_empty_construct_json_asks_for_level_l0_or_mix(rank: Path, out: Path) -> None:
    (rank / "construct.json").write_text("{}")
    message = _fails(rank, out)
    assert message.startswith(f"{rank / 'construct.json'}: construct.json is empty")
    assert "dump at level L0 or mix" in message


def test_a_megatron_construct_json_with_no_entries_is_empty_too(rank: Path, out: Path) -> None:
    (rank / "construct.json").write_text('{"megatron_micro_step_number": 2}')
    assert "level L0 or mix" in _fails(rank, out)


@pytest.mark.parametrize("name", ["construct.json", "dump.json", "stack.json"])
def test_a_zero_byte_file_is_reported_as_empty(rank: Path, out: Path, name: str) -> None:
    (rank / name).write_bytes(b"")
    message = _fails(rank, out)
    assert message.startswith(f"{rank / name}: file is empty")
    assert "expected a JSON object" in message


# --- truncated and invalid JSON ---------------------------------------------------------------


def _cut_after(path: Path, marker: str, keep: int = 0) -> tuple[int, int]:
    """Truncate ``path`` ``keep`` characters after the first ``marker``; return the line and
    column where the text now stops."""
    text = path.read_text()
    text = text[: text.index(marker) + len(marker) + keep]
    path.write_text(text)
    return text.count("\n") + 1, len(text) - text.rfind("\n")


def _corrupt(path: Path, old: str, new: str) -> tuple[int, int]:
    """Replace the first ``old``; return the line and 1-based column where ``new`` starts."""
    text = path.read_text()
    at = text.index(old)
    path.write_text(text[:at] + new + text[at + len(old) :])
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


@pytest.mark.parametrize("name", ["construct.json", "stack.json"])
def test_a_truncated_json_file_gives_file_line_and_column(rank: Path, out: Path, name: str) -> None:
    line, column = _cut_after(rank / name, '"Module.net.Net.forward.0"')
    message = _fails(rank, out)
    assert message == (
        f"{rank / name}: the JSON document ends early at line {line}, column {column}"
        " (truncated file?)"
    )


def test_an_invalid_construct_json_gives_file_line_and_column(rank: Path, out: Path) -> None:
    name = '"Torch.relu.0.forward"'
    line, column = _corrupt(rank / "construct.json", name + ":", name)  # no colon
    assert _fails(rank, out) == (
        f"{rank / 'construct.json'}: invalid JSON at line {line}, column {column + len(name) + 1}:"
        " Expecting ':' delimiter"
    )


@pytest.fixture(params=["small file", "big pretty file", "big one-line file"])
def dump_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """dump.json through each of its readers: parsed whole; split into records (above
    STREAM_THRESHOLD_BYTES, pretty-printed as msprobe writes it); streamed (big, one line)."""
    if request.param != "small file":
        monkeypatch.setattr(jsonio, "STREAM_THRESHOLD_BYTES", 0)
    return str(request.param)


def _write_rank(tmp_path: Path, dump: RankDump, dump_path: str) -> Path:
    rank = dump.write(tmp_path / "dump" / "step0" / "rank0")
    if dump_path == "big one-line file":
        document = json.loads((rank / "dump.json").read_text())
        (rank / "dump.json").write_text(json.dumps(document))
    return rank


def test_a_truncated_dump_json_gives_the_line_and_column_where_it_stops(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    line, column = _cut_after(rank / "dump.json", '"Torch.relu.0.forward"', keep=6)
    message = _fails(rank, out)
    assert message.startswith(f"{rank / 'dump.json'}: ")
    assert message.endswith(f"ends early at line {line}, column {column} (truncated file?)")


def test_a_dump_json_cut_inside_a_string_is_reported_as_truncated(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    line, column = _cut_after(rank / "dump.json", '"Torch.re')
    assert _fails(rank, out).endswith(
        f"ends early at line {line}, column {column} (truncated file?)"
    )


def test_an_invalid_token_in_dump_json_gives_file_line_and_column(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    line, column = _corrupt(rank / "dump.json", '"requires_grad": false', '"requires_grad": nope')
    assert _fails(rank, out) == (
        f"{rank / 'dump.json'}: invalid JSON at line {line}, column {column + 17}: Expecting value"
    )


def test_a_missing_comma_between_dump_records_is_invalid_json(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    """The record splitter parses records one by one: it must still see the commas."""
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    text = (rank / "dump.json").read_text()
    separator = "}, " if dump_path == "big one-line file" else "},\n  "
    at = text.index(separator + '"Torch.relu.0.forward"')
    broken = text[: at + 1] + text[at + 2 :]
    (rank / "dump.json").write_text(broken)
    quote = at + len(separator) - 1  # the next record's name, now after no comma
    line, column = broken.count("\n", 0, quote) + 1, quote - broken.rfind("\n", 0, quote)
    message = _fails(rank, out)
    assert message.startswith(
        f"{rank / 'dump.json'}: invalid JSON at line {line}, column {column}: "
    )
    assert "xpecting ','" in message  # "Expecting ',' delimiter" / "expecting ','" (streamed)


def test_a_trailing_comma_after_the_last_dump_record_is_invalid_json(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    text = (rank / "dump.json").read_text().rstrip()
    closing = text.rindex("}", 0, len(text) - 1)  # the closing brace of "data"
    head = text[:closing].rstrip()
    (rank / "dump.json").write_text(head + "," + text[len(head) :])
    line, column = head.count("\n") + 1, len(head) - head.rfind("\n") + 1
    message = _fails(rank, out)
    assert message.startswith(f"{rank / 'dump.json'}: invalid JSON at line ")
    if dump_path != "big one-line file":  # the streaming parser stops at the brace itself
        line, column = line + 1, 2
    assert f"at line {line}, column {column}:" in message


def test_a_dump_json_missing_its_last_brace_is_truncated(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    text = (rank / "dump.json").read_text()
    (rank / "dump.json").write_text(text.rstrip()[:-1])
    assert _fails(rank, out).endswith("(truncated file?)")


def test_a_record_that_is_not_an_object_is_named(tmp_path: Path, out: Path, dump_path: str) -> None:
    dump = tiny_model()
    dump.data["Torch.relu.0.forward"] = [1, 2]
    rank = _write_rank(tmp_path, dump, dump_path)
    assert _fails(rank, out) == (
        f"{rank / 'dump.json'}: record 'Torch.relu.0.forward': record is a JSON list;"
        " expected an object with input_args / input_kwargs / output / parameters"
    )


def test_a_record_section_of_the_wrong_type_is_named(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    dump = tiny_model()
    dump.data["Functional.linear.0.forward"]["input_args"] = "x"
    rank = _write_rank(tmp_path, dump, dump_path)
    assert _fails(rank, out) == (
        f"{rank / 'dump.json'}: record 'Functional.linear.0.forward': "
        '"input_args" is a JSON str; expected a list or an object'
    )


def test_a_dump_json_without_data_says_what_it_should_hold(
    tmp_path: Path, out: Path, dump_path: str
) -> None:
    rank = _write_rank(tmp_path, tiny_model(), dump_path)
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "mix"}, indent=1))
    assert _fails(rank, out) == (
        f'{rank / "dump.json"}: no "data" key;'
        ' expected {"task": ..., "data": {node name: record}}'
    )


def test_a_dump_json_without_a_task_is_reported(rank: Path, out: Path) -> None:
    document = json.loads((rank / "dump.json").read_text())
    del document["task"]
    (rank / "dump.json").write_text(json.dumps(document, indent=1))
    message = _fails(rank, out)
    assert message.startswith(f'{rank / "dump.json"}: no "task" in the header')


@pytest.mark.parametrize("name", ["construct.json", "dump.json", "stack.json"])
def test_a_top_level_that_is_not_an_object_is_reported(rank: Path, out: Path, name: str) -> None:
    (rank / name).write_text("[1, 2]")
    message = _fails(rank, out)
    assert message.startswith(f"{rank / name}: top level is a JSON list; expected ")
    assert "as a JSON object" in message


def test_a_construct_parent_that_is_not_a_name_is_named(rank: Path, out: Path) -> None:
    construct = json.loads((rank / "construct.json").read_text())
    construct["Torch.relu.0.forward"] = 3
    (rank / "construct.json").write_text(json.dumps(construct, indent=1))
    assert _fails(rank, out) == (
        f"{rank / 'construct.json'}: record 'Torch.relu.0.forward': parent is a JSON int;"
        " expected a node name or null"
    )


def test_a_file_that_is_not_utf8_is_reported(rank: Path, out: Path) -> None:
    (rank / "stack.json").write_bytes(b'{"a": "\xff\xfe"}')
    assert _fails(rank, out) == f"{rank / 'stack.json'}: not UTF-8 text (byte 7)"


# --- paths ------------------------------------------------------------------------------------


def test_a_rank_folder_missing_files_among_good_ones_fails_the_whole_build(
    tmp_path: Path, out: Path
) -> None:
    root = write_dump_root(tmp_path / "dump", {(0, r): tiny_model() for r in range(3)})
    (root / "step0" / "rank1" / "stack.json").unlink()
    message = _fails(root, out)
    assert message.startswith(f"{root / 'step0' / 'rank1'}: missing stack.json")


def test_a_path_that_does_not_exist_is_named(tmp_path: Path, out: Path) -> None:
    assert _fails(tmp_path / "nowhere", out) == f"{tmp_path / 'nowhere'}: no such file or folder"


def test_a_missing_golden_path_is_named_too(rank: Path, tmp_path: Path, out: Path) -> None:
    message = _fails(rank, out, golden=tmp_path / "no-golden")
    assert message == f"{tmp_path / 'no-golden'}: no such file or folder"


def test_an_empty_folder_is_reported(tmp_path: Path, out: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert _fails(tmp_path / "empty", out) == (
        f"{tmp_path / 'empty'}: folder is empty; expected a dump folder written by msprobe"
    )


def test_an_empty_step_folder_in_a_dump_root_is_reported(tmp_path: Path, out: Path) -> None:
    root = write_dump_root(tmp_path / "dump", {(0, 0): tiny_model()})
    (root / "step1").mkdir()
    message = _fails(root, out)
    assert message.startswith(f"{root / 'step1'}: folder is empty")


def test_a_folder_without_a_dump_lists_what_it_holds(tmp_path: Path, out: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"")
    message = _fails(tmp_path / "photos", out)
    assert message.startswith(f"{tmp_path / 'photos'}: no dump found (contains cat.jpg)")
    assert "expected construct.json/dump.json/stack.json, rankN" in message


def test_a_file_given_instead_of_a_folder_is_reported(rank: Path, out: Path) -> None:
    message = _fails(rank / "dump.json", out)
    assert message.startswith(f"{rank / 'dump.json'}: is a file; expected a dump folder")


@contextmanager
def _permissions_apply() -> Iterator[None]:
    """Run the body where file permissions are enforced: as root, under the nobody user."""
    if os.geteuid() != 0:
        yield
        return
    try:
        os.seteuid(NOBODY)
    except PermissionError:
        pytest.skip("running as root without the right to switch user: permissions do not apply")
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temporary folder the nobody user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="graphboard-perm-"))
    path.chmod(0o755)
    yield path
    for folder, _dirs, _files in os.walk(path):
        Path(folder).chmod(0o755)
    shutil.rmtree(path)


def _shared_output(parent: Path) -> Path:
    out = output_folder(parent)
    out.chmod(0o777)
    return out


def test_an_unreadable_dump_folder_is_named(shared_tmp: Path) -> None:
    rank = tiny_model().write(shared_tmp / "rank0")
    out = _shared_output(shared_tmp)
    rank.chmod(0)
    with _permissions_apply():
        message = _fails(rank, out)
    assert message == f"{rank}: permission denied (cannot list the folder)"


def test_an_unreadable_dump_file_is_named(shared_tmp: Path) -> None:
    rank = tiny_model().write(shared_tmp / "rank0")
    out = _shared_output(shared_tmp)
    (rank / "dump.json").chmod(0)
    with _permissions_apply():
        message = _fails(rank, out)
    assert message == f"{rank / 'dump.json'}: permission denied (cannot read the file)"


def test_layout_errors_are_dump_errors_with_their_parts() -> None:
    error: DumpError = LayoutError("/d", "folder is empty", expected="a dump")
    assert (error.path, error.problem, error.expected) == ("/d", "folder is empty", "a dump")
