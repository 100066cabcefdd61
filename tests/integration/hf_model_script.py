"""Dump one training step of a small ``transformers`` Llama (built from a config, random weights,
never downloaded), for the noise-reference tests: fp32 golden, a bf16 target, optionally with
one injected fault, and the bf16 reference without it.

    python hf_model_script.py OUT --dtype bf16 [--rope-theta 500] [--dumper msprobe]

The weights are made in fp32 from the seed and then cast, so every run holds the same model;
``transformers`` builds its causal mask with the dtype's own ``finfo.min`` fill, so a bf16 run
passes the mask op another value than the fp32 one (a difference of precision, not a fault).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
VOCAB, TOKENS = 128, 16


def _config(out: Path) -> Path:
    path = out.parent / f"{out.name}.config.json"
    section = {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}
    config = {
        "task": "statistics",
        "dump_path": str(out),
        "rank": [],
        "step": [],
        "level": "mix",
        "statistics": section,
    }
    path.write_text(json.dumps(config))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--rope-theta", type=float, default=10000.0, help="the fault: rotary base")
    parser.add_argument("--dumper", choices=("graphboard", "msprobe"), default="graphboard")
    args = parser.parse_args()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        rope_theta=args.rope_theta,
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(config).to(DTYPES[args.dtype])
    tokens = torch.randint(0, VOCAB, (2, TOKENS), generator=torch.Generator().manual_seed(1))

    def step() -> None:
        model(input_ids=tokens, labels=tokens).loss.backward()

    args.out.mkdir(parents=True, exist_ok=True)
    if args.dumper == "graphboard":
        from graphboard import probe

        with probe.dump(model, args.out, step=0, level="mix", task="statistics"):
            step()
    else:
        from msprobe.pytorch import PrecisionDebugger  # msprobe's Python only

        debugger = PrecisionDebugger(config_path=str(_config(args.out)))
        debugger.start(model)
        step()
        debugger.stop()
        debugger.step()


if __name__ == "__main__":
    main()
