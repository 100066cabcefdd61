"""The three-way compare (graph_build -nr) on real dumps made in the test: an fp32 golden, a
bf16 target with or without one injected fault, and the bf16 reference without it ("the same
model in the target's precision without the fault").

- a ``transformers`` Llama (built from a config, random weights; hf_model_script.py) dumped by
  graphboard's probe: noise only, 0 errors (its bf16 causal mask passes ``finfo(bf16).min``
  where the golden passes ``finfo(fp32).min``); rotary base 500 instead of 10000: the first
  introduced error is the rotary embedding module;
- the GPT of dtype_model_script.py dumped by msprobe's dumper: a 5% MLP output and a tanh GELU
  are the first introduced error, with no error before them;
- the file: msprobe's tables as without -nr, the reference in gb_reference, its path in
  gb_meta; the node API returns the three sides and d_T / d_R; ``graphboard verdict`` reads it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ci_support import auth, new_token, wait_job
from dtype_dumps import Dumps, dtype_dumps, scaled_layer
from graphboard.cli import graph_build_main, graphboard_main
from graphboard.compare.result import Level
from graphboard.errors import GraphboardError
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.store.reader import GraphKey, open_vis_db, search, summaries, tree
from graphboard.verdict.rule_explain import explain_stored
from graphboard.verdict_cli import file_verdict

__all__ = ["dtype_dumps"]

HF_SCRIPT = Path(__file__).with_name("hf_model_script.py")
TARGET = GraphKey("NPU", 0, 0)
ROTARY = "Module.model.rotary_emb.LlamaRotaryEmbedding.forward.0"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The Llama dumps: fp32 golden, bf16 target, bf16 target with the rotary fault. The bf16
    run is the reference: the same model in the target's precision without the fault (a second
    bf16 run on this CPU is the same to the bit, so it is not made again)."""
    root = tmp_path_factory.mktemp("noise-reference-llama")
    variants = {
        "fp32": ["--dtype", "fp32"],
        "bf16": ["--dtype", "bf16"],
        "rope": ["--dtype", "bf16", "--rope-theta", "500"],
    }
    found: dict[str, Path] = {}
    for name, options in variants.items():
        out = root / name
        subprocess.run(
            [sys.executable, str(HF_SCRIPT), str(out), *options],
            check=True,
            capture_output=True,
            cwd=root,
        )
        found[name] = out
    found["reference"] = found["bf16"]
    return found


def _compare(target: Path, golden: Path, reference: Path | None, out: Path) -> Path:
    options = BuildOptions(target=target, golden=golden, output_dir=out, noise_reference=reference)
    return run_build(options).path


def _errors(path: Path) -> tuple[str | None, list[str]]:
    """The first introduced error under the dtype-aware rules, and every error node before it
    in execution order (all of them when there is none)."""
    with open_vis_db(path, path.parent / "cache") as db:
        first = tree.first_error(db, TARGET, "dtype-aware")
        errors = search.filter_by(
            db, TARGET, levels=[Level.ERROR], limit=100_000, rules="dtype-aware"
        ).items
        if first is None:
            return None, [node.name for node in errors]
        assert first.introduced == "error"
        return first.name, [node.name for node in errors if node.exec_order < first.exec_order]


def test_noise_only_has_no_error_with_a_reference(llama: dict[str, Path], tmp_path: Path) -> None:
    path = _compare(llama["bf16"], llama["fp32"], llama["reference"], tmp_path)
    assert _errors(path) == (None, [])
    counts = file_verdict(path, rules="dtype-aware").model_dump(by_alias=True)["counts"]
    assert counts["error"] == 0 and counts["pass"] > 300


def test_the_rotary_fault_is_the_first_introduced_error(
    llama: dict[str, Path], tmp_path: Path
) -> None:
    path = _compare(llama["rope"], llama["fp32"], llama["reference"], tmp_path)
    assert _errors(path) == (ROTARY, [])


@pytest.mark.parametrize(
    ("variant", "first"), [("scaled", None), ("tanh", "Functional.gelu.0.forward")]
)
def test_msprobes_dumps_name_the_fault(
    dtype_dumps: Dumps, tmp_path: Path, variant: str, first: str | None
) -> None:
    target = dtype_dumps.dump("msprobe", "gpt", 4, variant)
    golden = dtype_dumps.dump("msprobe", "gpt", 4, "fp32")
    reference = dtype_dumps.dump("msprobe", "gpt", 4, "bf16")
    found, before = _errors(_compare(target, golden, reference, tmp_path))
    assert found is not None and before == []
    if first is None:
        assert found.startswith(f"Module.blocks.{scaled_layer(4)}.mlp."), found
    else:
        assert found == first


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def rope_files(llama: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The rotary fault compared with and without the reference, in a served folder."""
    out = tmp_path_factory.mktemp("noise-reference-files")
    found = {}
    for name, reference in (("with", llama["reference"]), ("without", None)):
        options = BuildOptions(
            target=llama["rope"],
            golden=llama["fp32"],
            output_dir=out,
            noise_reference=reference,
            output_name=f"{name}.vis.db",
        )
        found[name] = run_build(options).path
    return found


def test_the_file_keeps_msprobes_tables_and_records_the_reference(
    rope_files: dict[str, Path], llama: dict[str, Path]
) -> None:
    with_reference, without = rope_files["with"], rope_files["without"]
    for table in ("tb_nodes", "tb_stack", "tb_config"):
        assert _rows(with_reference, f"SELECT * FROM {table} ORDER BY 1") == _rows(
            without, f"SELECT * FROM {table} ORDER BY 1"
        ), table
    assert _rows(without, "SELECT name FROM sqlite_master WHERE name = 'gb_reference'") == []
    stored = _rows(with_reference, "SELECT node_name, data FROM gb_reference")
    assert len(stored) > 300
    inputs = json.loads(
        str(_rows(with_reference, "SELECT value FROM gb_meta WHERE key = 'inputs'")[0][0])
    )
    assert inputs["noise_reference"] == str(llama["reference"].resolve())
    # the reference changes the dtype-aware verdicts only: msprobe's are the same
    with_counts = file_verdict(with_reference, rules="msprobe").counts
    assert with_counts == file_verdict(without, rules="msprobe").counts


def test_without_a_reference_the_wrong_base_enters_where_inv_freq_is_read(
    rope_files: dict[str, Path],
) -> None:
    """No reference: the rotary base's change enters through ``inv_freq``, a buffer no
    record holds (docs/dtype-aware.md §3.3), at the call inside the rotary module that reads
    it first; the stored verdict is explained by that rule, with the band it was judged
    against, not by the call's own records (which pass)."""
    path = rope_files["without"]
    first, before = _errors(path)
    assert first is not None and before == []
    with open_vis_db(path, path.parent / "cache") as db:
        found = summaries.summary(db, TARGET, first)
        assert found is not None and found.parent == ROTARY
        explained = explain_stored(db, TARGET, first)
    assert explained is not None and explained.introduced
    assert explained.deciding is not None
    assert explained.deciding.reason.startswith("error: an input no recorded node made")


def test_the_node_api_shows_target_golden_and_reference(rope_files: dict[str, Path]) -> None:
    folder = rope_files["with"].parent
    with TestClient(create_app(Settings(data_dir=folder))) as client:
        query = {"side": "NPU", "step": 0, "rank": 0, "name": ROTARY}
        detail = client.get("/api/graphs/with/node", params=query)
        assert detail.status_code == 200, detail.text
        found = detail.json()
        assert found["reference_golden"] == ROTARY
        output = next(row for row in found["rows"] if row["key"] == "output.0")
        reference = output["reference"]
        assert reference["dtype"] == "torch.bfloat16"
        assert reference["verdict"] == "error"
        assert reference["d_target"] > reference["band"] > reference["d_reference"] >= 0
        assert set(reference["stats"]) == {"max", "min", "mean", "norm"}
        verdict = client.get("/api/graphs/with/rule-verdict", params=query).json()
        assert verdict["verdict"] == "error" and "reference" in verdict["reason"]
        plain = client.get("/api/graphs/without/node", params=query).json()
        assert plain["reference_golden"] is None
        assert all(row["reference"] is None for row in plain["rows"])


def test_graphboard_verdict_reads_a_three_way_file(
    rope_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status = graphboard_main(["verdict", str(rope_files["with"]), "--rules", "dtype-aware"])
    out = capsys.readouterr().out
    assert status == 1 and f"first error: {ROTARY}" in out


def test_a_reference_needs_a_golden_and_the_targets_layout(
    llama: dict[str, Path], tmp_path: Path
) -> None:
    with pytest.raises(GraphboardError, match="-nr"):
        run_build(
            BuildOptions(
                target=llama["bf16"], output_dir=tmp_path, noise_reference=llama["reference"]
            )
        )
    with pytest.raises(GraphboardError, match=r"noise reference .* folder"):
        _compare(llama["bf16"], llama["fp32"], llama["reference"] / "step0", tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_graph_build_and_graphboard_build_take_nr(
    llama: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = ["-tp", str(llama["rope"]), "-gp", str(llama["fp32"])]
    assert (
        graph_build_main(
            [*folders, "-nr", str(llama["reference"]), "-o", str(tmp_path / "a"), "-q"]
        )
        == 0
    )
    assert (
        graphboard_main(
            [
                "build",
                *folders,
                "--noise_reference",
                str(llama["reference"]),
                "-o",
                str(tmp_path / "b"),
                "-q",
            ]
        )
        == 0
    )
    for folder in ("a", "b"):
        (built,) = (tmp_path / folder).glob("*.vis.db")
        assert _errors(built) == (ROTARY, [])
    capsys.readouterr()
    assert (
        graph_build_main(
            ["-tp", str(llama["rope"]), "-nr", str(llama["reference"]), "-o", str(tmp_path / "c")]
        )
        == 1
    )
    assert capsys.readouterr().err.strip() == "graph_build: error: -nr needs a golden dump (-gp)"
    assert not (tmp_path / "c").exists()


def test_a_folder_job_takes_a_noise_reference(llama: dict[str, Path], tmp_path: Path) -> None:
    """POST /api/jobs with noise_reference builds as graph_build -nr does."""
    for name in ("rope", "fp32", "bf16"):
        shutil.copytree(llama[name], tmp_path / "runs" / name)
    settings = Settings(data_dir=tmp_path)
    token = new_token(settings)
    with TestClient(create_app(settings)) as http:
        body = {"target": "runs/rope", "golden": "runs/fp32", "noise_reference": "runs/bf16"}
        created = http.post("/api/jobs", headers=auth(token), json=body)
        assert created.status_code == 201, created.text
        job = wait_job(http, created.json()["job_id"], token)
        assert job["status"] == "done", job
        path = tmp_path / f"{job['graph']}.vis.db"
        assert _errors(path) == (ROTARY, [])
        assert _rows(path, "SELECT count(*) FROM gb_reference")[0][0] > 300
        refused = http.post(
            "/api/jobs",
            headers=auth(token),
            json={"target": "runs/rope", "noise_reference": "runs/bf16"},
        )
        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "needs_golden"
