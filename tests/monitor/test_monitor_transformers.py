"""msprobe's monitor on a transformers model (issue 33): a 4-layer Llama built from a config,
50 steps under TrainerMon with its 4 decoder layers monitored (monitor_transformers_script.py,
msprobe's Python). Slow: msprobe's monitor calls ``inspect.stack()`` in its hooks, about 0.6 s
a step here on a quiet machine (docs/monitor-trends.md has the costs of larger target sets).

A rerun of the golden's configuration departs nowhere; the target, whose layer 2 MLP weight is
scaled from step 20, departs first at step 20 in ``model.layers.2``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from monitor_runs import FAULT_STEP, STEPS, MonitorRuns

from graphboard.monitor.compare import compare_runs, read_run
from msprobe_runner import msprobe_python

SCRIPT = Path(__file__).with_name("monitor_transformers_script.py")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llama_runs(monitor_runs: MonitorRuns) -> Path:
    """golden, rerun and scale, made once (kept with the other runs under
    GRAPHBOARD_MONITOR_RUNS when it is set)."""
    out = monitor_runs.root / "transformers-llama"
    if (out / "done").is_file():
        return out
    python = msprobe_python()
    probe = subprocess.run([python, "-c", "import transformers"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("transformers is not installed in msprobe's environment")
    command = [
        python,
        str(SCRIPT),
        str(out),
        "golden=none",
        "rerun=none",
        "scale=scale",
        "--targets",
        "blocks",
        "--steps",
        str(STEPS),
        "--step",
        str(FAULT_STEP),
        "--layer",
        "2",
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=3600, cwd=out.parent, check=False
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stderr[-3000:]}"
    runs = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [run["run"] for run in runs] == ["golden", "rerun", "scale"]
    (out / "done").write_text(json.dumps(runs))
    return out


def test_a_rerun_departs_nowhere_and_a_scaled_layer_departs_at_its_step(llama_runs: Path) -> None:
    golden = read_run(llama_runs / "golden")
    assert golden.min_step == 0 and golden.max_step == STEPS - 1
    same = compare_runs(read_run(llama_runs / "rerun"), golden)
    assert same.first is None and all(d is None for d in same.departures.values())
    faulty = compare_runs(read_run(llama_runs / "scale"), golden)
    assert faulty.first is not None
    assert (faulty.first.step, faulty.first.module, faulty.first.metric) == (
        FAULT_STEP,
        "model.layers.2",
        "actv",
    )
