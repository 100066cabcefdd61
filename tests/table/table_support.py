"""What the table tests share: msprobe compare's table read back, and agreement with ours."""

from __future__ import annotations

import csv
import subprocess
from dataclasses import dataclass
from pathlib import Path

from graphboard.table.rows import CompareTable
from msprobe_runner import msprobe_binary


@dataclass(frozen=True)
class MsprobeTable:
    header: list[str]
    results: dict[str, str]  # NPU Name -> Result


def msprobe_compare(target_dump: Path, golden_dump: Path, out_dir: Path) -> MsprobeTable:
    """Run ``msprobe compare -tp DUMP.json -gp DUMP.json -o OUT`` (26.2 writes a CSV)."""
    command = [
        msprobe_binary(),
        "compare",
        "-tp",
        str(target_dump),
        "-gp",
        str(golden_dump),
        "-o",
        str(out_dir),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}"
    found = list(out_dir.glob("compare_result_*.csv"))
    assert len(found) == 1, f"expected one compare_result_*.csv in {out_dir}, found {found}"
    with found[0].open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    result = header.index("Result")
    return MsprobeTable(header, {row[0]: row[result] for row in rows[1:]})


def assert_agrees(table: CompareTable, expected: MsprobeTable, share: float = 0.98) -> None:
    """msprobe's header first, the same set of NPU Name rows, the same Result on at least
    ``share`` of them."""
    assert list(table.columns[: len(expected.header)]) == expected.header
    ours = dict(zip(table.column("NPU Name"), table.column("Result"), strict=True))
    assert len(ours) == len(table), "an NPU Name appears twice"
    assert set(ours) == set(expected.results), (
        f"only ours: {sorted(set(ours) - set(expected.results))[:10]}; "
        f"only msprobe's: {sorted(set(expected.results) - set(ours))[:10]}"
    )
    differing = {
        name: (ours[name], theirs)
        for name, theirs in expected.results.items()
        if ours[name] != theirs
    }
    assert len(differing) <= (1 - share) * len(expected.results), differing
