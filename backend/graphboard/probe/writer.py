"""Write one rank folder: construct.json, dump.json and stack.json, formatted as msprobe does.

``json.dump(..., indent=1)`` with no trailing newline, which is byte for byte how msprobe's
files look; NaN and infinities are written as the bare ``NaN`` / ``Infinity`` tokens Python's
json module emits. Each file is written to a temporary name and renamed, so a reader never
sees half a file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from graphboard.probe.session import Session
from graphboard.probe.tensor_files import TENSOR_DIR


def _write_json(path: Path, document: Any) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
    os.replace(temporary, path)


def write_rank_dir(rank_dir: Path, session: Session) -> None:
    rank_dir.mkdir(parents=True, exist_ok=True)
    header = {
        "task": session.task.header_task,
        "level": session.level.value,
        "framework": "pytorch",
        # Relative on purpose: msprobe re-roots it to <rank dir>/dump_tensor_data, and an
        # absolute path would make two dumps of the same run differ.
        "dump_data_dir": TENSOR_DIR if session.leaves.tensor_files is not None else None,
        "data": session.data,
    }
    construct = session.hierarchy.parents if session.level.records_modules else {}
    _write_json(rank_dir / "construct.json", construct)
    _write_json(rank_dir / "dump.json", header)
    _write_json(rank_dir / "stack.json", session.stacks.to_json())
