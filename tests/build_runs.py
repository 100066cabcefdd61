"""graph_build command lines run side by side, each a real process, for tests that compare the
files two installs or two paths (pure and compiled) make of the same dumps."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from graphboard.accel import PURE_ENV


def environment(pure: bool, dropped: Sequence[str] = ()) -> dict[str, str]:
    """This process's environment with GRAPHBOARD_PURE=1 or without it, less ``dropped``."""
    env = {
        key: value for key, value in os.environ.items() if key != PURE_ENV and key not in dropped
    }
    return {**env, PURE_ENV: "1"} if pure else env


def build_side_by_side(
    runs: Mapping[str, tuple[Sequence[str], Mapping[str, str]]], args: Sequence[str], out: Path
) -> dict[str, Path]:
    """The .vis.db each labelled (graph_build command, environment) writes of ``args`` into
    out/<label>, all started at once."""
    started = {
        label: subprocess.Popen(
            [*command, *args, "-o", str(out / label), "-q"],
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for label, (command, env) in runs.items()
    }
    paths = {}
    try:
        for label, process in started.items():
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, (
                f"{label}: graph_build {' '.join(args)} failed:\n{stderr}"
            )
            paths[label] = Path(stdout.strip().splitlines()[-1])
    finally:  # a failed or timed-out run leaves no other running
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    return paths
