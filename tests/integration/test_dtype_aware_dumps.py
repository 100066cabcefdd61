"""The dtype-aware rules on real dumps made in the test: GPT- and Llama-style models, bf16 and
fp16 targets against an fp32 golden, the same code and seed (dtype_model_script.py), dumped by
graphboard's probe and by msprobe's own dumper, built by graph_build into real files and read
back through the reader as the server and ``graphboard verdict`` read them.

- same code: at most 2% of the matched nodes are dtype-aware errors (msprobe's count printed);
- one layer's MLP output scaled by 1.05: the first introduced error is in that MLP, and no
  node before it in execution order is an error;
- tanh GELU in the bf16 target, exact in fp32: the first introduced error is the first GELU.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dtype_dumps import Dumps, dtype_dumps, scaled_layer
from graphboard.compare.result import Level
from graphboard.store.reader import GraphKey, open_vis_db, search, tree
from graphboard.verdict_cli import file_verdict
from msprobe_runner import graph_visualize

__all__ = ["dtype_dumps"]  # the session fixture, shared with the other dtype-aware tests

TARGET = GraphKey("NPU", 0, 0)


@pytest.fixture(scope="session")
def dumps(dtype_dumps: Dumps) -> Dumps:
    return dtype_dumps


CASES = [
    ("graphboard", "gpt", 4, "bf16"),
    ("graphboard", "gpt", 4, "fp16"),
    ("graphboard", "llama", 4, "bf16"),
    ("graphboard", "llama", 2, "fp16"),
    ("msprobe", "gpt", 4, "bf16"),
    ("msprobe", "llama", 2, "bf16"),
]


def _counts(path: Path, rules: str) -> dict[str, int]:
    found = file_verdict(path, rules=rules).model_dump(by_alias=True)
    return dict(found["counts"])


@pytest.mark.parametrize(("dumper", "arch", "layers", "variant"), CASES)
def test_same_code_in_a_narrower_dtype_is_at_most_two_percent_errors(
    dumps: Dumps, dumper: str, arch: str, layers: int, variant: str
) -> None:
    path = dumps.compare(dumper, arch, layers, variant)
    ours, theirs = _counts(path, "dtype-aware"), _counts(path, "msprobe")
    judged = ours["pass"] + ours["warning"] + ours["error"]
    print(
        f"{dumper} {arch}{layers} {variant}: dtype-aware {ours['error']} errors of {judged}, "
        f"msprobe's rules {theirs['error']}"
    )
    assert judged == theirs["pass"] + theirs["warning"] + theirs["error"]  # the same nodes
    assert ours["error"] <= 0.02 * judged
    assert theirs["error"] > 0.5 * judged  # msprobe's dtype rule flags nearly all of them


def _first_error_and_errors_before(path: Path) -> tuple[str, list[str]]:
    """The first introduced error under the dtype-aware rules, and every error node that runs
    before it (execution order: the filter's order)."""
    with open_vis_db(path, path.parent / "cache") as db:
        first = tree.first_error(db, TARGET, "dtype-aware")
        assert first is not None and first.introduced == "error"
        errors = search.filter_by(
            db, TARGET, levels=[Level.ERROR], limit=100_000, rules="dtype-aware"
        ).items
        before = [node.name for node in errors if node.exec_order < first.exec_order]
        return first.name, before


@pytest.mark.parametrize(
    ("dumper", "arch"), [("graphboard", "gpt"), ("graphboard", "llama"), ("msprobe", "gpt")]
)
def test_a_scaled_mlp_output_is_the_first_introduced_error(
    dumps: Dumps, dumper: str, arch: str
) -> None:
    path = dumps.compare(dumper, arch, 4, "scaled")
    first, before = _first_error_and_errors_before(path)
    assert first.startswith(f"Module.blocks.{scaled_layer(4)}.mlp."), first
    assert before == []


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["gpt", "llama"])
def test_48_layers(dumps: Dumps, arch: str) -> None:
    """The deepest models the issue names: same code within 2%, the scaled MLP still found
    (graphboard's probe; a dump of 48 layers takes msprobe's dumper much longer)."""
    same = _counts(dumps.compare("graphboard", arch, 48, "bf16"), "dtype-aware")
    assert same["error"] <= 0.02 * (same["pass"] + same["warning"] + same["error"])
    first, before = _first_error_and_errors_before(dumps.compare("graphboard", arch, 48, "scaled"))
    assert first.startswith(f"Module.blocks.{scaled_layer(48)}.mlp."), first
    assert before == []


@pytest.mark.parametrize("dumper", ["graphboard", "msprobe"])
def test_a_tanh_gelu_is_the_first_introduced_error(dumps: Dumps, dumper: str) -> None:
    path = dumps.compare(dumper, "gpt", 4, "tanh")
    first, before = _first_error_and_errors_before(path)
    assert first == "Functional.gelu.0.forward"
    assert before == []


def test_msprobes_verdicts_stay_as_they_were(dumps: Dumps) -> None:
    """tb_nodes.precision_index and msprobe's counts are what the msprobe rules give, with or
    without the second set: the scaled run and the plain one count the same under msprobe."""
    plain = _counts(dumps.compare("graphboard", "gpt", 4, "bf16"), "msprobe")
    scaled = _counts(dumps.compare("graphboard", "gpt", 4, "scaled"), "msprobe")
    assert plain == scaled  # the complaint: msprobe's rules cannot tell them apart


def _precision(path: Path) -> dict[str, object]:
    with sqlite3.connect(path) as conn:
        return dict(
            conn.execute(
                "SELECT node_name, precision_index FROM tb_nodes WHERE data_source = 'NPU'"
            ).fetchall()
        )


def _rank_folder(dump: Path) -> Path:
    """msprobe's dumper writes step0/proc<pid> (or step0/rank<r>): graph_visualize wants it."""
    (folder,) = [entry for entry in (dump / "step0").iterdir() if entry.is_dir()]
    return folder


# transformers' kernel swap and bf16 migration on the project's model (msprobe's dumper):
# sdpa's attention module gets mask=None where eager's gets an additive finfo(dtype).min mask.
SWAPS = [("sdpa-fp32", "finfo-fp32"), ("finfo-bf16", "finfo-fp32")]


@pytest.mark.parametrize(("variant", "golden"), SWAPS)
def test_msprobe_rules_give_msprobes_precision_on_kernel_swaps_and_masks(
    dumps: Dumps, variant: str, golden: str, tmp_path: Path
) -> None:
    """Node by node against msprobe's own .vis.db of the same dumps: before the null-leaf
    fix graphboard's msprobe rules made each attention module an error (None against the
    mask) where msprobe has none."""
    path = dumps.compare("msprobe", "gpt", 2, variant, golden_variant=golden)
    target, reference_golden = (dumps.dump("msprobe", "gpt", 2, name) for name in (variant, golden))
    reference = graph_visualize(
        tmp_path / "msprobe",
        "-tp",
        str(_rank_folder(target)),
        "-gp",
        str(_rank_folder(reference_golden)),
    )
    ours, theirs = _precision(path), _precision(reference)
    assert ours == theirs
    assert sum(value == 1 for value in theirs.values()) > 0 or variant.startswith("sdpa")


@pytest.mark.parametrize(("variant", "golden"), SWAPS)
def test_no_dtype_aware_error_on_kernel_swaps_and_finfo_masks(
    dumps: Dumps, variant: str, golden: str
) -> None:
    """No "arguments differ (None against ...)" for sdpa's absent mask, none for the bf16
    mask fill -3.3895e38 against fp32's -3.4028e38: both were the first error before."""
    path = dumps.compare("msprobe", "gpt", 2, variant, golden_variant=golden)
    assert _counts(path, "dtype-aware")["error"] == 0


def test_no_dtype_aware_error_under_autocast_with_rotary_embeddings(dumps: Dumps) -> None:
    """bf16 autocast against fp32, Llama-style with rotary angles up to 2011 rad (graphboard's
    probe): the fp32-bounded blocks of bf16 matmuls, the fp32 residual stream after them, the
    rotary multiply of a bf16 operand by an fp32 one. Before the module's inner dtype and the
    rounding upstream, 5 errors (a block, an RMSNorm's mean and backward)."""
    path = dumps.compare("graphboard", "llama", 2, "rotary-autocast", golden_variant="rotary-fp32")
    ours, theirs = _counts(path, "dtype-aware"), _counts(path, "msprobe")
    print(f"autocast rotary: dtype-aware {ours['error']} errors, msprobe's rules {theirs['error']}")
    assert ours["error"] == 0


def test_the_demo_has_one_dtype_aware_error_the_injected_gelu(tmp_path: Path) -> None:
    """The demo (tanh GELU in block 0, bf16 softmax in block 1, against fp32): the first
    introduced error is the GELU, and nothing downstream of the bf16 softmax is an error
    (before the sensitivity bands: 4 more, fp32 matmuls and a layer_norm backward whose
    inputs' rounding explains them)."""
    from graphboard.demo import build_demo

    path = build_demo(tmp_path).path
    first, before = _first_error_and_errors_before(path)
    assert first == "Functional.gelu.0.forward" and before == []
    with open_vis_db(path, path.parent / "cache") as db:
        errors = search.filter_by(
            db, TARGET, levels=[Level.ERROR], limit=100_000, rules="dtype-aware"
        ).items
    assert [node.name for node in errors] == ["Functional.gelu.0.forward"]
