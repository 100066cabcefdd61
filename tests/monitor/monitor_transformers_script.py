"""msprobe's training-state monitor on a ``transformers`` model (issue 33, item 4): a 4-layer
Llama built from a config (random weights, CPU), trained ``--steps`` steps under TrainerMon on
a chosen set of modules (``none``: no monitor, for the cost), one run per NAME=FAULT into
``OUT/NAME``; seconds per step printed as one JSON line per run. Fault ``scale``: layer
``--layer``'s MLP down projection weight multiplied by 1.5 once, before step ``--step``.

Run with msprobe's own Python (the project never imports msprobe); transformers must be
installed there. tests/monitor/test_monitor_transformers.py (slow) runs it; the costs of the
target sets are in docs/monitor-trends.md.

    <msprobe python> tests/monitor/monitor_transformers_script.py OUT golden=none scale=scale \
        --targets blocks --steps 50
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

TARGET_SETS = ("none", "blocks", "parts", "every")


def build_model(layers: int) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def targets_of(model: torch.nn.Module, chosen: str) -> list[str]:
    """``blocks``: the decoder layers; ``parts``: also their attention and MLP, the
    embedding, the final norm and the head; ``every``: every named module."""
    layers = len(model.model.layers)  # type: ignore[union-attr]
    if chosen == "blocks":
        return [f"model.layers.{i}" for i in range(layers)]
    if chosen == "parts":
        names = ["model.embed_tokens"]
        for i in range(layers):
            names += [f"model.layers.{i}", f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"]
        return [*names, "model.norm", "lm_head"]
    return [name for name, _ in model.named_modules() if name]


def train(out: Path, fault: str, args: argparse.Namespace) -> dict[str, float | int | str]:
    chosen, steps = args.targets, args.steps
    model = build_model(args.layers)
    faulty = model.model.layers[args.layer].mlp.down_proj.weight  # type: ignore[union-attr,index]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    targets: list[str] = []
    monitor = None
    if chosen != "none":
        from msprobe.pytorch import TrainerMon

        out.mkdir(parents=True, exist_ok=True)
        os.environ["MONITOR_OUTPUT_DIR"] = str(out)
        targets = targets_of(model, chosen)
        config = out / "monitor_config.json"
        config.write_text(
            json.dumps(
                {
                    "targets": {name: {} for name in targets},
                    "xy_distribution": True,
                    "wg_distribution": True,
                    "mv_distribution": True,
                    "param_distribution": True,
                    "format": "csv",
                    "ops": ["norm", "mean", "max", "min"],
                    "ndigits": 12,
                    "step_count_per_record": 10,
                }
            )
        )
        monitor = TrainerMon(config_file_path=str(config), params_have_main_grad=False)
        monitor.set_monitor(model, grad_acc_steps=1, optimizer=optimizer)
    data = torch.Generator().manual_seed(1000)
    started = time.perf_counter()
    for step in range(steps):
        if fault == "scale" and step == args.step:
            with torch.no_grad():
                faulty.mul_(1.5)
        tokens = torch.randint(0, 128, (4, 32), generator=data)
        loss = model(input_ids=tokens, labels=tokens).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    seconds = time.perf_counter() - started
    if monitor is not None:
        monitor.summary_writer.close()
    return {
        "run": out.name,
        "fault": fault,
        "targets": chosen,
        "modules": len(targets),
        "steps": steps,
        "seconds": round(seconds, 2),
        "per_step": round(seconds / steps, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path, help="one folder per run: OUT/<name>")
    parser.add_argument("runs", nargs="+", help="NAME=FAULT (FAULT: none or scale)")
    parser.add_argument("--targets", choices=TARGET_SETS, default="blocks")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--step", type=int, default=20)
    parser.add_argument("--layer", type=int, default=2)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    for run in args.runs:
        name, _, fault = run.partition("=")
        print(json.dumps(train(args.out / name, fault or "none", args)), flush=True)


if __name__ == "__main__":
    main()
