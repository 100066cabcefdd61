"""msprobe's own ``graph_visualize``, run as an external program (it is never imported).

Set ``GRAPHBOARD_MSPROBE_BIN`` to its executable, e.g. ``.venv-msprobe/bin/msprobe``, or put
``msprobe`` on PATH; without either, the tests that need it skip. Each run takes several
seconds, mostly msprobe's own start-up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def msprobe_binary() -> str:
    configured = os.environ.get("GRAPHBOARD_MSPROBE_BIN")
    if configured:
        if not Path(configured).is_file():
            pytest.fail(f"GRAPHBOARD_MSPROBE_BIN={configured} does not exist")
        return configured
    found = shutil.which("msprobe")
    if found is None:
        pytest.skip(
            "msprobe not found: set GRAPHBOARD_MSPROBE_BIN to the msprobe executable or put it on PATH"
        )
    return found


def graph_visualize(out_dir: Path, *options: str) -> Path:
    """Run msprobe; return the one .vis.db it wrote."""
    command = [msprobe_binary(), "graph_visualize", *options, "-o", str(out_dir)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (
        f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    databases = list(out_dir.glob("*.vis.db"))
    assert len(databases) == 1, (
        f"expected one .vis.db in {out_dir}, found {databases}\n{result.stdout[-2000:]}"
    )
    return databases[0]


def msprobe_python() -> str:
    """The Python of msprobe's own environment (beside its executable), to run a script that
    dumps a model with msprobe's dumper (``msprobe.pytorch.PrecisionDebugger``): the project
    never imports msprobe, so such scripts run as separate programs."""
    python = Path(msprobe_binary()).with_name("python")
    if not python.is_file():
        pytest.skip(f"no python beside {msprobe_binary()} to run msprobe's dumper")
    return str(python)


def run_msprobe_script(script: Path, *arguments: str, cwd: Path, timeout: float = 600) -> str:
    """Run ``script`` with msprobe's Python in ``cwd``; return its stdout (fail on error)."""
    command = [msprobe_python(), str(script), *arguments]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False
    )
    assert result.returncode == 0, (
        f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result.stdout
