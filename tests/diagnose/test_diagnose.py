"""graphboard diagnose on real runs (graphboard's probe, msprobe's dumper, the shared fp16
overflow fixture): the origin of inf/NaN and its class, the rank it was born on, the first
non-deterministic op, the next dump's config.json accepted by msprobe's dumper."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from diagnose.diagnose_runs import Runs, runs
from fixture_cases import fixture_path
from graphboard.cli import graphboard_main
from graphboard.diagnose.command import diagnosis_of
from graphboard.diagnose.nonfinite import DTYPE_LIMITS
from msprobe_runner import msprobe_python

CASES = Path(__file__).with_name("diagnose_cases.py")

__all__ = ["runs"]


def _fixture() -> Path:
    return fixture_path("convnet-overflow")


def test_dtype_limits_are_the_dtypes_own() -> None:
    torch = pytest.importorskip("torch")
    expected = {
        float(torch.finfo(d).max)
        for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    }
    assert expected == set(DTYPE_LIMITS)


def test_msprobe_fp16_overflow_is_the_op_that_made_it() -> None:
    """The shared fixture (msprobe's dumper): Tensor.__mul__ by 1e5 in float16 overflows;
    `graphboard verdict` names no first overflow there."""
    found = diagnosis_of([_fixture() / "target"])
    assert (found.kind, found.node, found.node_class) == (
        "overflow",
        "Tensor.__mul__.0.forward",
        "output",
    )
    assert found.evidence[0].key == "output.0" and "+inf" in found.evidence[0].kinds


def test_msprobe_built_file_gives_the_same_answer() -> None:
    reference = next((_fixture() / "reference").glob("*.vis.db"))
    found = diagnosis_of([reference])
    assert (found.node, found.node_class) == ("Tensor.__mul__.0.forward", "output")


def test_layer_output_overflow(runs: Runs) -> None:
    found = diagnosis_of([runs.single("overflow")])
    assert found.node is not None and found.node.startswith("Tensor.__mul__.")
    assert found.node_class == "output"
    assert found.module is not None and "blocks.1.scale" in found.module
    assert found.next_config is not None and found.next_config["tensor"]["list"] == [found.node]


def test_weight_from_a_bad_previous_update(runs: Runs) -> None:
    found = diagnosis_of([runs.single("weight")])
    assert found.step == 1 and found.node_class == "weight"
    assert found.module is not None and "blocks.1.mlp.fc1" in found.module
    assert found.advice is not None and "previous step's backward" in found.advice
    config = found.next_config
    assert config is not None and config["step"] == [0]
    assert config["statistics"]["data_mode"] == ["backward"]


def test_input_made_outside_the_dump(runs: Runs) -> None:
    found = diagnosis_of([runs.single("input")])
    assert found.node_class == "input" and found.evidence[0].key.startswith("input.")
    assert found.node is not None and found.node.startswith("Functional.layer_norm.0.")


def test_masks_made_on_purpose_are_no_origin(runs: Runs) -> None:
    found = diagnosis_of([runs.single("clean")])
    assert not found.found and found.kind == "none"


def test_clean_run_exits_0_and_an_origin_exits_1(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert graphboard_main(["diagnose", str(runs.single("clean"))]) == 0
    assert "no origin found" in capsys.readouterr().out
    assert graphboard_main(["diagnose", "--json", str(runs.single("overflow"))]) == 1
    assert json.loads(capsys.readouterr().out)["node_class"] == "output"
    assert graphboard_main(["diagnose", "/nonexistent/dump"]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("task", ["statistics", "md5"])
def test_non_deterministic_op(runs: Runs, task: str) -> None:
    plain, perturbed = runs.single("nondet", task), runs.single("nondet", task, perturb=True)
    found = diagnosis_of([plain, perturbed])
    assert (found.kind, found.node, found.node_class) == (
        "nondeterminism",
        "Functional.gelu.0.forward",
        "nondeterministic",
    )
    assert found.evidence and all(item.key.startswith("output.") for item in found.evidence)


@pytest.mark.parametrize("task", ["statistics", "md5"])
def test_uncaptured_op_feeding_the_first_difference(runs: Runs, task: str) -> None:
    plain = runs.single("uncaptured", task)
    found = diagnosis_of([plain, runs.single("uncaptured", task, perturb=True)])
    assert found.node_class == "uncaptured_input"
    assert found.node is not None and found.node.startswith("Functional.layer_norm.0.")
    assert not diagnosis_of([plain, plain]).found  # one run against itself: identical


@pytest.mark.parametrize(("world", "parallel", "bad"), [(4, "dp", 2), (2, "tp", 1)])
def test_rank_where_nan_was_born(runs: Runs, world: int, parallel: str, bad: int) -> None:
    found = diagnosis_of([runs.ranks(world, parallel, bad)])
    assert (found.rank, found.node, found.node_class) == (
        bad,
        "Functional.gelu.0.forward",
        "output",
    )
    states = {rank.rank: rank.state for rank in found.ranks}
    assert states == {rank: "born" if rank == bad else "receiver" for rank in range(world)}
    receiver = next(rank for rank in found.ranks if rank.state == "receiver")
    assert receiver.collective is not None and receiver.collective.startswith(
        "Distributed.all_reduce"
    )
    assert any(peer["rank"] == bad and peer["inputs_bad"] for peer in receiver.peers)
    assert found.next_config is not None and found.next_config["rank"] == [bad]


def test_next_config_is_accepted_by_msprobe(runs: Runs, tmp_path: Path) -> None:
    """The written config.json, given to msprobe's PrecisionDebugger: it dumps the op's
    tensors (a config msprobe misread would dump nothing or everything)."""
    config = tmp_path / "config.json"
    assert (
        graphboard_main(["diagnose", str(runs.single("overflow")), "--next-config", str(config)])
        == 1
    )
    written = json.loads(config.read_text())
    node = written["tensor"]["list"][0]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [
            msprobe_python(),
            str(CASES),
            "overflow",
            "unused",
            "--dumper",
            "msprobe",
            "--config",
            str(config),
        ],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    dumped = list((tmp_path / "next_dump").rglob("dump.json"))
    assert len(dumped) == 1
    records = json.loads(dumped[0].read_text())["data"]
    assert list(records) == [node]
    assert list(dumped[0].parent.glob(f"dump_tensor_data/{node}.output.0.pt"))


def test_read_api_and_download(runs: Runs, tmp_path: Path) -> None:
    """GET /api/graphs/{graph}/diagnosis gives the CLI's answer with the viewer URL on the
    node; /diagnosis/config.json downloads the next dump's config; a job's verdict carries
    the answer's summary."""
    from fastapi.testclient import TestClient

    from graphboard.pipeline import BuildOptions, run_build
    from graphboard.server.app import create_app
    from graphboard.server.settings import Settings

    dump = runs.ranks(2, "tp", 1)
    built = run_build(BuildOptions(target=dump, output_dir=tmp_path, overflow_check=True)).path
    graph = built.name.removesuffix(".vis.db")
    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        response = client.get(f"/api/graphs/{graph}/diagnosis")
        assert response.status_code == 200, response.text
        shown = response.json()
        assert shown == {**diagnosis_of([built]).as_json(), "url": shown["url"]}
        assert shown["url"] == f"/?graph={graph}&step=0&rank=1&node=Functional.gelu.0.forward"
        download = client.get(f"/api/graphs/{graph}/diagnosis/config.json")
        assert download.status_code == 200
        assert "attachment" in download.headers["content-disposition"]
        assert download.json() == shown["next_config"]
        assert client.get(f"/api/graphs/{graph}/diagnosis", params={"mode": "x"}).status_code == 422
    from graphboard.verdict_cli import file_verdict

    found = file_verdict(built).diagnosis
    assert found is not None and (found.rank, found.node) == (1, "Functional.gelu.0.forward")


def test_msprobe_dump_of_masked_attention_is_clean(tmp_path: Path) -> None:
    """msprobe's dumper captures neither torch.full nor torch.triu: the causal mask (zeros and
    -inf) first shows as an argument of the add, and the padding mask holds float32's min; an
    msprobe mix dump of the clean run has no origin."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "clean"
    subprocess.run(
        [msprobe_python(), str(CASES), "clean", str(out), "--dumper", "msprobe"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    found = diagnosis_of([out])
    assert not found.found, found.summary
