"""Renamed copies of real dumps, as another framework would name the same model, with the
mapping kept as ground truth: the pairs assisted matching (graphboard.suggest) must find.

A module record is ``Module.<path>.<Class>.<forward|backward>.<n>`` (or
``...<Class>.parameters_grad``): path segments are renamed by ``segments``, the class by
``classes``; API records (``Functional.linear.3.forward``) keep their names, as they do
between Megatron and Hugging Face. construct.json (keys and parents), dump.json's records
and stack.json's names are renamed alike, so the copy is a dump graph_build reads as usual.

    python tests/renamed_dumps.py SRC_DUMP OUT_DUMP [megatron|hf-gpt2]
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

_DIRECTIONS = ("forward", "backward", "parameters_grad")


@dataclass(frozen=True)
class Renaming:
    """Which module path segments and classes another framework calls differently."""

    segments: Mapping[str, str] = field(default_factory=dict)
    classes: Mapping[str, str] = field(default_factory=dict)

    def name(self, name: str) -> str:
        """``name`` as the other framework writes it (API and unknown names unchanged)."""
        parts = name.split(".")
        if parts[0] not in ("Module", "Cell"):
            return name
        at = next((i for i, part in enumerate(parts) if part in _DIRECTIONS and i >= 3), None)
        if at is None:
            return name
        path = [self.segments.get(part, part) for part in parts[1 : at - 1]]
        cls = self.classes.get(parts[at - 1], parts[at - 1])
        return ".".join([parts[0], *path, cls, *parts[at:]])

    def inverse(self) -> Renaming:
        return Renaming(
            {new: old for old, new in self.segments.items()},
            {new: old for old, new in self.classes.items()},
        )


# graphboard.demo's TinyTransformer as Megatron-LM names its GPT.
MEGATRON = Renaming(
    segments={
        "blocks": "layers",
        "attention": "self_attention",
        "mlp": "ffn",
        "qkv": "query_key_value",
        "proj": "dense",
        "norm1": "input_layernorm",
        "norm2": "post_attention_layernorm",
        "norm": "final_layernorm",
        "embedding": "word_embeddings",
        "head": "output_layer",
    },
    classes={
        "Block": "TransformerLayer",
        "Attention": "SelfAttention",
        "Sequential": "MLP",
        "Embedding": "VocabParallelEmbedding",
        "TinyTransformer": "GPTModel",
    },
)

# bench/make_synthetic_dump.py's Megatron names as Hugging Face's GPT-2 spells them.
HF_GPT2 = Renaming(
    segments={
        "decoder": "transformer",
        "layers": "h",
        "self_attention": "attn",
        "linear_qkv": "c_attn",
        "linear_proj": "c_proj",
        "linear_fc1": "c_fc",
        "linear_fc2": "c_out",
        "input_layernorm": "ln_1",
        "pre_mlp_layernorm": "ln_2",
        "embedding": "wte",
    },
    classes={
        "TransformerBlock": "GPT2Model",
        "TransformerLayer": "GPT2Block",
        "Attention": "GPT2Attention",
        "MLP": "GPT2MLP",
        "ColumnParallelLinear": "Conv1D",
        "RowParallelLinear": "Conv1D",
        "LanguageModelEmbedding": "Embedding",
    },
)

# The shared layer-mapping fixture renames its target: head -> classifier, conv1 -> conv_a.
LAYER_MAPPING_TARGET = Renaming(segments={"head": "classifier", "conv1": "conv_a"})


def _rename_construct(data: dict[str, Any], renaming: Renaming) -> dict[str, Any]:
    return {
        renaming.name(key): renaming.name(parent) if isinstance(parent, str) else parent
        for key, parent in data.items()
    }


def _rename_stack(data: Any, renaming: Renaming) -> Any:
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        if all(len(v) == 2 and isinstance(v[0], list) for v in data.values()):  # new format
            return {k: [[renaming.name(n) for n in v[0]], v[1]] for k, v in data.items()}
        return {renaming.name(k): v for k, v in data.items()}  # old format: name -> frames
    return data


def rename_rank(source: Path, out: Path, renaming: Renaming) -> None:
    """One rank folder (construct.json, dump.json, stack.json) renamed into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name == "construct.json":
            data = orjson.loads(item.read_bytes())
            (out / item.name).write_bytes(orjson.dumps(_rename_construct(data, renaming)))
        elif item.name == "dump.json":
            data = orjson.loads(item.read_bytes())
            data["data"] = {renaming.name(k): v for k, v in data.get("data", {}).items()}
            (out / item.name).write_bytes(orjson.dumps(data))
        elif item.name == "stack.json":
            data = orjson.loads(item.read_bytes())
            (out / item.name).write_bytes(orjson.dumps(_rename_stack(data, renaming)))
        elif item.is_dir():
            shutil.copytree(item, out / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, out / item.name)


def rename_dump(source: Path, out: Path, renaming: Renaming = MEGATRON) -> Path:
    """Every rank folder under ``source`` (any layout: the folders holding construct.json)
    renamed into the same place under ``out``."""
    ranks = sorted({path.parent for path in source.rglob("construct.json")})
    if not ranks:
        raise ValueError(f"{source}: no construct.json under it")
    for rank in ranks:
        rename_rank(rank, out / rank.relative_to(source), renaming)
    return out


def truth(target_names: list[str], golden_names: set[str], renaming: Renaming) -> dict[str, str]:
    """Each target node's true golden counterpart, where the golden side has one."""
    found = {name: renaming.name(name) for name in target_names}
    return {name: golden for name, golden in found.items() if golden in golden_names}


RENAMINGS = {"megatron": MEGATRON, "hf-gpt2": HF_GPT2}


@dataclass(frozen=True)
class Measured:
    grey: int  # grey target nodes with a true counterpart
    suggested: int  # proposals at or above the confidence
    right: int  # of which name the true counterpart
    missed: list[str]  # grey nodes with a true counterpart and no right proposal
    wrong: list[tuple[str, str]]

    @property
    def coverage(self) -> float:
        return (self.grey - len(self.missed)) / self.grey if self.grey else 1.0

    @property
    def precision(self) -> float:
        return self.right / self.suggested if self.suggested else 1.0


def measure(path: Path, renaming: Renaming, min_confidence: float, cache: Path) -> Measured:
    """suggest-matches' proposals for step 0 rank 0 of ``path`` against the ground truth:
    each grey target node's counterpart is its name renamed, where the golden has it."""
    from graphboard.store.reader import GraphKey, open_vis_db, overlay
    from graphboard.suggest import propose

    with open_vis_db(path, cache) as db:
        target, golden = (
            overlay.graph_view(db, GraphKey("NPU", 0, 0)),
            overlay.graph_view(db, GraphKey("Bench", 0, 0)),
        )
        golden_names = set(golden.names)
        grey = [target.names[o] for o in range(len(target)) if target.columns["matched"][o] != 1]
        true = truth(grey, golden_names, renaming)
        found = [s for s in propose(db, 0, 0).suggestions if s.confidence >= min_confidence]
    right = {s.target for s in found if true.get(s.target) == s.golden}
    return Measured(
        grey=len(true),
        suggested=len(found),
        right=len(right),
        missed=[name for name in true if name not in right],
        wrong=[(s.target, s.golden) for s in found if true.get(s.target) != s.golden],
    )


@dataclass(frozen=True)
class RenamedCompare:
    """A target against its golden under the original names and under renamed ones."""

    original: Path  # compare .vis.db: target vs golden
    renamed: Path  # compare .vis.db: target vs the golden renamed
    renaming: Renaming


def renamed_compare(root: Path, blocks: int, differ_in: int) -> RenamedCompare:
    """graphboard.demo's transformer with ``blocks`` blocks dumped by graphboard's probe,
    golden and a target whose block ``differ_in`` uses a tanh GELU, compared as they are and
    with the golden renamed Megatron's way."""
    from graphboard.demo import GOLDEN, Variant, train_one_step
    from graphboard.pipeline import BuildOptions, run_build

    train_one_step(GOLDEN, root / "golden", blocks=blocks)
    train_one_step(Variant(gelu_tanh_in_block=differ_in), root / "target", blocks=blocks)
    rename_dump(root / "golden", root / "golden-renamed", MEGATRON)
    built = {}
    for name, golden in (("original", "golden"), ("renamed", "golden-renamed")):
        options = BuildOptions(
            target=root / "target",
            golden=root / golden,
            output_dir=root / name,
            output_name=f"{name}.vis.db",
            workers=1,
        )
        built[name] = run_build(options).path
    return RenamedCompare(built["original"], built["renamed"], MEGATRON)


if __name__ == "__main__":
    chosen = RENAMINGS[sys.argv[3]] if len(sys.argv) > 3 else MEGATRON
    print(rename_dump(Path(sys.argv[1]), Path(sys.argv[2]), chosen))
