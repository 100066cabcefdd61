"""Write a synthetic msprobe dump of a decoder-only transformer, for benchmarks.

Level ``mix``, task ``statistics``: per layer 128 construct entries and 105 dump records
(modules forward and backward, 60 forward API calls of which 20 leave no record, like
``Torch.clone`` in real dumps, 50 backward API calls, 6 parameters_grad records), as msprobe
writes them. ``--variant target`` perturbs the statistics slightly everywhere and strongly
in one MLP, so a compare has pass, warning and error nodes.

    python bench/make_synthetic_dump.py --layers 256 --out /tmp/syn/golden
    python bench/make_synthetic_dump.py --layers 256 --out /tmp/syn/target --variant target
    python bench/make_synthetic_dump.py --records 1000000 --out /tmp/big/golden
    python bench/make_synthetic_dump.py --layers 8 --ranks 64 --steps 2 --out /tmp/wide/golden
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

import orjson

RECORDS_PER_LAYER = 105
HIDDEN = 4096
SEQ = 2048
BATCH = 1
CALL_SITE = "File megatron/core/transformer/{module}.py, line {line}, in forward, \n {source}"
FRAMES_BELOW = [
    "File site-packages/torch/nn/modules/module.py, line 1778, in _wrapped_call_impl, \n return self._call_impl(*args, **kwargs)",
    "File megatron/core/transformer/transformer_block.py, line 549, in forward, \n hidden_states = layer(hidden_states)",
    "File pretrain_gpt.py, line 181, in forward_step, \n output_tensor = model(tokens, position_ids)",
]

# Sub-modules of a layer: (attribute path, class, parent path ("" = the layer itself)).
SUBMODULES: list[tuple[str, str, str]] = [
    ("input_layernorm", "RMSNorm", ""),
    ("self_attention", "Attention", ""),
    ("self_attention.linear_qkv", "ColumnParallelLinear", "self_attention"),
    ("self_attention.linear_proj", "RowParallelLinear", "self_attention"),
    ("pre_mlp_layernorm", "RMSNorm", ""),
    ("mlp", "MLP", ""),
    ("mlp.linear_fc1", "ColumnParallelLinear", "mlp"),
    ("mlp.linear_fc2", "RowParallelLinear", "mlp"),
]
NORM_CALLS = [
    "Tensor.float",
    "Torch.pow",
    "Torch.mean",
    "Tensor.__add__",
    "Torch.rsqrt",
    "Tensor.__mul__",
    "Tensor.type_as",
    "Tensor.__mul__",
]
# Forward API calls of one layer in execution order: (owner path, API). 47 calls.
LAYER_CALLS: list[tuple[str, str]] = [
    *[("input_layernorm", api) for api in NORM_CALLS],
    ("self_attention.linear_qkv", "Functional.linear"),
    *[
        ("self_attention", api)
        for api in [
            "Tensor.view",
            "Torch.split",
            "Tensor.__mul__",
            "Tensor.__mul__",
            "Torch.cat",
            "Tensor.__add__",
            "Tensor.__mul__",
            "Tensor.__mul__",
            "Torch.cat",
            "Tensor.__add__",
            "Tensor.transpose",
            "Tensor.transpose",
            "Tensor.transpose",
            "Torch.matmul",
            "Tensor.__truediv__",
            "Tensor.masked_fill",
            "Functional.softmax",
            "Functional.dropout",
            "Torch.matmul",
            "Tensor.transpose",
            "Tensor.contiguous",
            "Tensor.reshape",
        ]
    ],
    ("self_attention.linear_proj", "Functional.linear"),
    ("", "Tensor.__add__"),
    *[("pre_mlp_layernorm", api) for api in NORM_CALLS],
    ("mlp.linear_fc1", "Functional.linear"),
    *[("mlp", api) for api in ["Torch.chunk", "Functional.silu", "Tensor.__mul__"]],
    ("mlp.linear_fc2", "Functional.linear"),
    ("", "Tensor.__add__"),
]
# Calls msprobe lists in construct.json without writing a record (views, clones...).
RECORDLESS_FORWARD = frozenset({"Tensor.view", "Tensor.transpose", "Tensor.contiguous"})
RECORDLESS_BACKWARD = RECORDLESS_FORWARD | {"Tensor.reshape", "Torch.clone"}
CLONES_PER_LAYER = 13  # recordless Torch.clone calls, 3 of them with a (recordless) backward
WITH_PARAMETERS = {
    "input_layernorm": ("weight",),
    "self_attention.linear_qkv": ("weight", "bias"),
    "self_attention.linear_proj": ("weight",),
    "pre_mlp_layernorm": ("weight",),
    "mlp.linear_fc1": ("weight",),
    "mlp.linear_fc2": ("weight",),
}


class Generator:
    def __init__(self, variant: str, seed: int, error_layer: int) -> None:
        self.rng = random.Random(seed)
        self.noise = random.Random(seed + 1)
        self.variant = variant
        self.error_layer = error_layer
        self.construct: dict[str, str | None] = {}
        self.data: dict[str, Any] = {}
        self.stacks: dict[tuple[str, ...], list[str]] = {}
        self.counters: dict[str, int] = {}
        self.scale = 1.0
        self.pending_backward: list[tuple[int, list[tuple[str, str]]]] = []

    def leaf(self, shape: list[int], requires_grad: bool = True) -> dict[str, Any]:
        base = self.rng.uniform(0.5, 2.0) * self.scale
        jitter = 1.0 + (self.noise.uniform(-1e-6, 1e-6) if self.variant == "target" else 0.0)
        return {
            "type": "torch.Tensor",
            "dtype": "torch.bfloat16",
            "shape": shape,
            "Max": base * 3.1 * jitter,
            "Min": -base * 2.9 * jitter,
            "Mean": base * 0.01 * jitter,
            "Norm": base * 181.0 * jitter,
            "requires_grad": requires_grad,
        }

    def io_record(self, backward: bool = False) -> dict[str, Any]:
        hidden = [BATCH, SEQ, HIDDEN]
        if backward:
            return {"input": [self.leaf(hidden, False)], "output": [self.leaf(hidden, False)]}
        return {
            "input_args": [self.leaf(hidden)],
            "input_kwargs": {},
            "output": [self.leaf(hidden)],
        }

    def forward_api(self, api: str) -> str:
        index = self.counters.get(api, 0)
        self.counters[api] = index + 1
        return f"{api}.{index}.forward"

    def add_stack(self, name: str, site: tuple[str, ...]) -> None:
        self.stacks.setdefault(site, []).append(name)

    def module_name(self, layer: int, path: str, direction: str) -> str:
        if not path:
            return f"Module.decoder.layers.{layer}.TransformerLayer.{direction}.0"
        class_name = next(cls for sub, cls, _ in SUBMODULES if sub == path)
        return f"Module.decoder.layers.{layer}.{path}.{class_name}.{direction}.0"

    def layer(self, layer: int) -> None:
        block = "Module.decoder.TransformerBlock.forward.0"
        layer_forward = self.module_name(layer, "", "forward")
        self.construct[layer_forward] = block
        self.data[layer_forward] = self.io_record()
        self.add_stack(layer_forward, (FRAMES_BELOW[1], FRAMES_BELOW[2]))
        for position, (path, class_name, parent) in enumerate(SUBMODULES):
            name = self.module_name(layer, path, "forward")
            self.construct[name] = self.module_name(layer, parent, "forward")
            record = self.io_record()
            if path in WITH_PARAMETERS:
                record["parameters"] = {
                    p: self.leaf([HIDDEN] if p == "bias" else [HIDDEN, HIDDEN])
                    for p in WITH_PARAMETERS[path]
                }
            self.data[name] = record
            self.add_stack(
                name,
                (
                    CALL_SITE.format(
                        module=class_name.lower(), line=100 + position, source=f"self.{path}(x)"
                    ),
                    *FRAMES_BELOW,
                ),
            )
        calls: list[tuple[str, str]] = []  # (forward API name, owner path)
        for position, (path, api) in enumerate(LAYER_CALLS):
            name = self.forward_api(api)
            self.construct[name] = self.module_name(layer, path, "forward")
            self.add_stack(
                name,
                (CALL_SITE.format(module="layer", line=200 + position, source=api), *FRAMES_BELOW),
            )
            calls.append((name, path))
            if api in RECORDLESS_FORWARD:
                continue
            record = self.io_record()
            if api in ("Torch.cat", "Torch.split", "Torch.chunk"):
                record["input_args"].append({"type": "int", "value": -1})
            if api == "Functional.softmax":
                record["input_kwargs"] = {"dim": {"type": "int", "value": -1}}
            if self.variant == "target" and layer == self.error_layer and api == "Functional.silu":
                record["output"][0]["Norm"] *= 2.0  # the error starts here
                record["output"][0]["Max"] *= 1.3
            self.data[name] = record
        for clone in range(CLONES_PER_LAYER):
            name = self.forward_api("Torch.clone")
            self.construct[name] = layer_forward
            self.add_stack(
                name,
                (CALL_SITE.format(module="layer", line=300, source="x.clone()"), *FRAMES_BELOW),
            )
            if clone < 3:
                calls.append((name, ""))
        self.pending_backward.append((layer, calls))

    def layer_backward(self, layer: int, calls: list[tuple[str, str]]) -> None:
        layer_backward = self.module_name(layer, "", "backward")
        self.construct[layer_backward] = "Module.decoder.TransformerBlock.backward.0"
        self.data[layer_backward] = self.io_record(backward=True)
        for path, _class_name, parent in reversed(SUBMODULES):
            name = self.module_name(layer, path, "backward")
            self.construct[name] = self.module_name(layer, parent, "backward")
            self.data[name] = self.io_record(backward=True)
            if path in WITH_PARAMETERS:
                grad = name.replace(".backward.0", ".parameters_grad.0")
                self.data[grad] = {
                    p: [self.leaf([HIDDEN] if p == "bias" else [HIDDEN, HIDDEN], False)]
                    for p in WITH_PARAMETERS[path]
                }
        for name, path in reversed(calls):
            backward = name[: -len("forward")] + "backward"
            self.construct[backward] = self.module_name(layer, path, "backward")
            if name.rsplit(".", 2)[0] not in RECORDLESS_BACKWARD:
                self.data[backward] = self.io_record(backward=True)

    def model(self, layers: int) -> None:
        embedding = "Module.embedding.LanguageModelEmbedding.forward.0"
        self.construct[embedding] = None
        self.data[embedding] = {
            "input_args": [self.leaf([BATCH, SEQ], False)],
            "input_kwargs": {},
            "output": [self.leaf([BATCH, SEQ, HIDDEN])],
        }
        block = "Module.decoder.TransformerBlock.forward.0"
        self.construct[block] = None
        self.data[block] = {
            "input_args": [self.leaf([BATCH, SEQ, HIDDEN])],
            "input_kwargs": {},
            "output": [self.leaf([BATCH, SEQ, HIDDEN])],
        }
        for layer in range(layers):
            self.scale = 1.0 + layer / max(layers, 1)
            self.layer(layer)
        # Backward runs after the whole forward, last layer first.
        block_backward = "Module.decoder.TransformerBlock.backward.0"
        self.construct[block_backward] = None
        self.data[block_backward] = self.io_record(backward=True)
        for layer, calls in reversed(self.pending_backward):
            self.layer_backward(layer, calls)

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        options = orjson.OPT_INDENT_2
        (folder / "construct.json").write_bytes(orjson.dumps(self.construct, option=options))
        dump = {
            "task": "statistics",
            "level": "mix",
            "framework": "pytorch",
            "dump_data_dir": None,
            "data": self.data,
        }
        (folder / "dump.json").write_bytes(orjson.dumps(dump, option=options))
        grouped = {
            str(index): [names, list(frames)]
            for index, (frames, names) in enumerate(self.stacks.items())
        }
        (folder / "stack.json").write_bytes(orjson.dumps(grouped, option=options))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--layers", type=int, default=256)
    size.add_argument(
        "--records", type=int, help="approximate dump records per rank (sets --layers)"
    )
    parser.add_argument("--out", type=Path, required=True, help="dump root: writes step0/rank<r>/")
    parser.add_argument("--variant", choices=("golden", "target"), default="golden")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1, help="writes step0 ... step<N-1>")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    layers = max(1, round(args.records / RECORDS_PER_LAYER)) if args.records else args.layers
    started = time.perf_counter()
    for step in range(args.steps):
        for rank in range(args.ranks):
            # each (step, rank) its own statistics: a trend across them has something to show
            seed = args.seed + rank + 100_003 * step
            generator = Generator(args.variant, seed, error_layer=layers // 2)
            generator.model(layers)
            generator.write(args.out / f"step{step}" / f"rank{rank}")
            print(
                f"step {step} rank {rank}: {len(generator.construct)} construct entries, "
                f"{len(generator.data)} records"
            )
    print(f"wrote {args.out} in {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
