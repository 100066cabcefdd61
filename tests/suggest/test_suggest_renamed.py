"""Assisted matching on renamed pairs: graphboard.demo's transformer (2 and 48 blocks) dumped
by graphboard's probe, its golden renamed Megatron's way (blocks -> layers, attention ->
self_attention, Block -> TransformerLayer, ...), and the shared layer-mapping fixture built
without -lm. The renaming is the ground truth the proposals are held to."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from fixture_cases import BuildFn
from graphboard.store.reader import open_vis_db
from graphboard.suggest import DEFAULT_MIN_CONFIDENCE, propose
from graphboard.verdict_cli import file_verdict
from renamed_dumps import LAYER_MAPPING_TARGET, RenamedCompare, measure
from test_cli import graphboard_command


@pytest.mark.parametrize("blocks", [2, 48])
def test_proposals_cover_the_grey_nodes_and_are_right(
    blocks: int, renamed: Callable[[int], RenamedCompare], cache_dir: Path
) -> None:
    pair = renamed(blocks)
    found = measure(pair.renamed, pair.renaming, DEFAULT_MIN_CONFIDENCE, cache_dir)
    assert found.grey > 60 * blocks  # the renaming leaves most of the model grey
    assert found.coverage >= 0.9, found.missed[:10]
    assert found.precision >= 0.95, found.wrong[:10]


def _direction(name: str) -> str:
    return next(d for d in ("parameters_grad", "backward", "forward", "") if d in name)


def test_never_a_module_with_an_api_nor_forward_with_backward(
    renamed: Callable[[int], RenamedCompare], cache_dir: Path
) -> None:
    with open_vis_db(renamed(2).renamed, cache_dir) as db:
        found = propose(db, 0, 0).suggestions
    assert len(found) > 100
    for item in found:
        assert item.target.startswith("Module.") == item.golden.startswith("Module."), item
        assert _direction(item.target) == _direction(item.golden), item
        assert 0 <= item.confidence <= 1 and item.reason.startswith(("under", "both roots"))
    reasons = {item.target: item.reason for item in found}
    # children follow their parent's pair, and say whether it was matched or proposed
    assert reasons["Module.blocks.0.Block.forward.0"].startswith(
        "under DefaultModel ↔ DefaultModel (matched); "
    )
    assert reasons["Module.blocks.0.mlp.Sequential.forward.0"].startswith(
        "under Module.blocks.0.Block.forward.0 ↔ Module.layers.0.TransformerLayer.forward.0 "
        "(proposed, 0."
    )


def test_layer_mapping_fixture_without_its_mapping(built: BuildFn, cache_dir: Path) -> None:
    path = built("layer-mapping")
    found = measure(path, LAYER_MAPPING_TARGET.inverse(), DEFAULT_MIN_CONFIDENCE, cache_dir)
    assert found.grey >= 20  # classifier (head) and conv_a (conv1), their APIs and twins
    assert found.coverage >= 0.9, found.missed
    assert found.precision >= 0.95, found.wrong


@pytest.mark.parametrize("blocks", [2, 48])
def test_apply_finds_the_first_error_the_original_names_find(
    blocks: int, renamed: Callable[[int], RenamedCompare], tmp_path: Path
) -> None:
    pair = renamed(blocks)
    path = Path(shutil.copy2(pair.renamed, tmp_path / "renamed.vis.db"))
    # msprobe's rules: they rescore applied (manual) matches; dtype-aware, the default,
    # withholds a re-paired node's verdict until a rebuild (docs/dtype-aware.md §6)
    original = file_verdict(pair.original, rules="msprobe")
    before = file_verdict(path, rules="msprobe")
    assert original.first_error is not None
    assert before.first_error is None or before.first_error.name != original.first_error.name
    run = graphboard_command("suggest-matches", path, "--apply", "--json")
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert shown["applied"]["matched"] == len(shown["suggestions"])
    assert shown["applied"]["refused"] == []
    first = shown["suggestions"][0]
    assert set(first) == {"step", "rank", "target", "golden", "confidence", "reason"}
    assert 0 <= first["confidence"] <= 1 and first["reason"]
    after = file_verdict(path, rules="msprobe")
    assert after.first_error is not None and original.first_error is not None
    assert after.first_error.name == original.first_error.name
    assert after.counts == original.counts


def test_a_target_with_extra_calls_and_other_dtypes(
    renamed: Callable[[int], RenamedCompare], tmp_path: Path, cache_dir: Path
) -> None:
    """The demo's target (bf16 softmax in block 1: two Tensor.to calls the golden lacks, and
    bf16 tensors there) against the renamed golden: the extra calls get no proposal, the
    rest still pairs."""
    from graphboard.demo import TARGET, train_one_step
    from graphboard.pipeline import BuildOptions, run_build

    golden = renamed(2).renamed.parents[1] / "golden-renamed"
    train_one_step(TARGET, tmp_path / "target", blocks=2)
    path = run_build(
        BuildOptions(target=tmp_path / "target", golden=golden, output_dir=tmp_path / "out")
    ).path
    found = measure(path, renamed(2).renaming, DEFAULT_MIN_CONFIDENCE, cache_dir)
    assert found.coverage >= 0.9, found.missed
    assert found.precision >= 0.95, found.wrong
    with open_vis_db(path, cache_dir) as db:
        proposed = {s.target for s in propose(db, 0, 0).suggestions}
    extra = {f"Tensor.to.{call}.{d}" for call in (0, 1) for d in ("forward", "backward")}
    assert not extra & proposed


def test_a_wrapper_level_on_one_side(tmp_path: Path, cache_dir: Path) -> None:
    """Megatron's layout against Hugging Face's (a model wrapper around the layers): the
    decoder pairs with the wrapper by what runs inside them, not the embedding by its
    tensors, so every layer below still finds its twin; the embedding, a level higher on the
    target, finds embed_tokens inside the wrapper."""
    from wrapped_models import MEGATRON_TO_HF, HfGpt, MegatronGpt, dump

    from graphboard.pipeline import BuildOptions, run_build

    target, golden = dump(tmp_path / "target", MegatronGpt), dump(tmp_path / "golden", HfGpt)
    path = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out")).path
    found = measure(path, MEGATRON_TO_HF, DEFAULT_MIN_CONFIDENCE, cache_dir)
    assert found.grey > 100
    assert found.coverage >= 0.9, found.missed
    # the only proposals the renaming cannot name: the embedding's, one level apart
    assert all(
        target.startswith(("Module.embedding.", "Functional.embedding."))
        for target, _g in found.wrong
    )
    with open_vis_db(path, cache_dir) as db:
        pairs = {(s.target, s.golden): s for s in propose(db, 0, 0).suggestions}
    assert ("Module.decoder.Decoder.backward.0", "Module.model.Inner.backward.0") in pairs
    assert (
        "Module.decoder.layers.1.Block.backward.0",
        "Module.model.layers.1.Block.backward.0",
    ) in pairs
    embedding = pairs[
        ("Module.embedding.Embedding.backward.0", "Module.model.embed_tokens.Embedding.backward.0")
    ]
    assert embedding.confidence >= DEFAULT_MIN_CONFIDENCE
    assert embedding.reason.startswith("one level apart: under DefaultModel")
    assert (
        "Module.embedding.Embedding.parameters_grad.0",
        "Module.model.embed_tokens.Embedding.parameters_grad.0",
    ) in pairs
