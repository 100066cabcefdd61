"""Unit tests on small hand-made monitor CSVs: the reader's data2db semantics and errors, the
noise rule, module names, stored values, the dump config."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from graphboard.cli import graphboard_main
from graphboard.monitor.compare import compare_runs, read_run
from graphboard.monitor.csv_reader import read_csv_run
from graphboard.monitor.departure import module_of
from graphboard.monitor.dump_config import config_for
from graphboard.monitor.formats import layer_tags, metric_of_file, stored_value
from graphboard.monitor.noise import roundoff, tolerance
from graphboard.monitor.run import MonitorInputError

ACTV = "vpp_stage,name,step,micro_step,norm,mean,max,min,shape,dtype\n"


def write_run(root: Path, rows_by_rank: dict[int, list[str]], metric: str = "actv") -> Path:
    for rank, rows in rows_by_rank.items():
        folder = root / f"Dec01_00-00-00-rank{rank}-abcd"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{metric}_0-9.csv").write_text(ACTV + "".join(rows))
    return root


def row(name: str, step: int, norm: float, micro: int = 0, dtype: str = "torch.float32") -> str:
    return f'0,{name},{step},{micro},{norm:.12f},{norm / 100:.12f},{norm / 10:.12f},{-norm / 10:.12f},"[4, 8]",{dtype}\n'


def test_steps_become_data2db_global_steps(tmp_path: Path) -> None:
    # step 0 has two micro steps on rank 1: data2db counts steps 0 (two), 2 (one) and numbers
    # them 0, 1, 2; a skipped step 1 leaves no gap
    run = read_csv_run(
        write_run(
            tmp_path,
            {
                0: [row("a.output", 0, 1.0), row("a.output", 2, 2.0)],
                1: [row("a.output", 0, 1.0, 1)],
            },
        )
    )
    rows = run.metrics["actv"]
    assert sorted(zip(rows.rank.tolist(), rows.step.tolist(), strict=True)) == [
        (0, 0),
        (0, 2),
        (1, 1),
    ]
    assert (run.min_step, run.max_step, run.ranks, run.decimals) == (0, 2, [0, 1], 12)
    assert rows.targets == [("a.output", 0, 0)]
    assert rows.numel == {0: 32}


def test_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(MonitorInputError, match="no monitor rank folders"):
        read_csv_run(tmp_path)
    folder = tmp_path / "Dec01-rank0-x"
    folder.mkdir()
    (folder / "actv_0-0.csv").write_text("step,norm\n0,1.0\n")
    with pytest.raises(MonitorInputError, match=r"actv_0-0.csv: no 'name' column"):
        read_csv_run(tmp_path)
    (tmp_path / "Dec02-rank0-y").mkdir()
    with pytest.raises(MonitorInputError, match="two folders for rank 0"):
        read_csv_run(tmp_path)
    with pytest.raises(MonitorInputError, match="expected a monitor output folder"):
        read_run(folder / "actv_0-0.csv")


def test_a_rounding_sized_difference_does_not_depart_a_larger_one_does(tmp_path: Path) -> None:
    golden = write_run(tmp_path / "golden", {0: [row("a.output", s, 10.0 + s) for s in range(8)]})
    within = [row("a.output", s, (10.0 + s) * (1 + 2e-8)) for s in range(8)]
    beyond = [row("a.output", s, (10.0 + s) * (1 + (1e-4 if s >= 5 else 0))) for s in range(8)]
    quiet = compare_runs(read_run(write_run(tmp_path / "t1", {0: within})), read_run(golden))
    assert quiet.first is None and quiet.departing == 0
    loud = compare_runs(read_run(write_run(tmp_path / "t2", {0: beyond})), read_run(golden))
    assert loud.first is not None
    assert (loud.first.step, loud.first.module, loud.first.kind) == (5, "a", "forward")


def test_noise_follows_the_dtype() -> None:
    assert roundoff("torch.bfloat16") == 2.0**-8
    assert roundoff("torch.int64") == roundoff("torch.float32") == 2.0**-24
    args = (np.array([1.0]), np.array([1.0]), None, None, np.array([1024.0]))

    def u(dtype: str) -> np.ndarray:
        return np.array([roundoff(dtype)])

    fp32 = tolerance("max", *args, u("torch.float32"), u("torch.float32"), 0.0)
    bf16 = tolerance("max", *args, u("torch.bfloat16"), u("torch.float32"), 0.0)
    assert bf16[0] / fp32[0] > 1e4
    norm = tolerance("norm", *args, u("float32"), u("float32"), 0.0)
    assert norm[0] == pytest.approx(11 * 2 * 2.0**-24)  # (1 + log2 1024) roundings, both sides


def test_names_and_formats() -> None:
    assert module_of("actv", "blocks.2.mlp.output") == "blocks.2.mlp"
    assert module_of("actv_grad", "blocks.2.attn.input.1") == "blocks.2.attn"
    assert module_of("grad_reduced", "blocks.2.mlp.fc.weight") == "blocks.2.mlp.fc"
    assert metric_of_file("actv_grad_10-19.csv") == "actv_grad"
    assert metric_of_file("exp_avg_sq_0-9.csv") == "exp_avg_sq"
    assert metric_of_file("notes_0-9.csv") is None
    assert layer_tags("layers.22.attn.qkv.weight") == {
        ("layers", "module"),
        ("attn", "module"),
        ("qkv", "module"),
        ("weight", "module"),
        ("layers.22", "layer"),
    }
    assert stored_value(math.inf) == 1e9 + 1 and stored_value(-5e12) == -1e9
    assert stored_value(math.nan) is None


def test_dump_config_selects_the_step_rank_and_modules() -> None:
    config = config_for(20, 3, ["blocks.2.mlp", "blocks.2"])
    assert config["step"] == [20] and config["rank"] == [3] and config["level"] == "L0"
    assert config["statistics"] == {
        "scope": [],
        "list": ["Module.blocks.2.mlp.", "Module.blocks.2."],
        "data_mode": ["all"],
        "summary_mode": "statistics",
    }


def test_cli_writes_nothing_on_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code = graphboard_main(
        ["monitor", "-tp", str(tmp_path / "none"), "-gp", str(tmp_path), "-o", str(out)]
    )
    assert code == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_cli_output_holds_both_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = write_run(tmp_path / "golden", {0: [row("a.output", s, 1.0 + s) for s in range(3)]})
    out = tmp_path / "out"
    out.mkdir()
    assert graphboard_main(["monitor", "-tp", str(golden), "-gp", str(golden), "-o", str(out)]) == 0
    assert "no departure" in capsys.readouterr().out
    (written,) = out.glob("*.trend.db")
    with sqlite3.connect(written) as connection:
        tables = {
            r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        assert {"trend_data", "monitoring_targets", "global_stats", "gb_monitor_cells"} <= tables
        assert connection.execute("SELECT count(*) FROM gb_monitor_cells").fetchone() == (3,)
