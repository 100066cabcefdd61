"""Train the project's own small GPT (tests/integration/dtype_model_script.py) under msprobe's
training-state monitor (TrainerMon), on one rank or under torchrun with gloo, optionally with one
fault switched on from a given step. Run it with msprobe's own Python: the project never imports
msprobe. Each rank writes ``<time>-rank<r>-<id>/`` CSV folders under ``OUT`` (MONITOR_OUTPUT_DIR).

Faults (``--fault``, from step ``--step`` on, in block ``--layer``):
  scale    the block's MLP input projection weight (``mlp.fc``) multiplied by 1.5 once, before step k's forward
  lr       the learning rate of the block's parameter group multiplied by 10 from step k
  bf16     the block's MLP output (its last Linear's) rounded to bfloat16 and back from step k
  spike    the weight gradient of the block's MLP input projection multiplied by 100 at step k
  nan      at step k, one element of that weight's gradient on the last rank set to NaN before
           the gradient reduction (later steps train on NaN, as a real run would)
  notmean  from step k, that weight's reduced gradient averages all ranks but the last (a wrong
           process group), so it is not the mean of the ranks' gradients
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def build_model(layers: int) -> torch.nn.Module:
    # transformers is not used: msprobe's monitor walks the stack (inspect.stack) in every
    # module's backward hook, and that costs time in proportion to the modules imported
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "integration"))
    from dtype_model_script import Model

    return Model("gpt", layers, "none")


def monitor_config(path: Path, targets: list[str]) -> str:
    config = {
        # the blocks and their attention and MLP, not every Linear: msprobe's monitor walks
        # the stack in each monitored module's backward hook, its main cost here
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
    path.write_text(json.dumps(config))
    return str(path)


def monitored_modules(model: torch.nn.Module) -> list[str]:
    names = ["embed"]
    for index in range(len(model.blocks)):
        names += [f"blocks.{index}", f"blocks.{index}.attn", f"blocks.{index}.mlp"]
    return [*names, "norm", "head"]


def train(out: Path, fault: str, args: argparse.Namespace, rank: int, world: int) -> None:
    """One run into ``out``: a fresh model, optimizer and monitor, the same seeds every time."""
    from msprobe.pytorch import TrainerMon

    out.mkdir(parents=True, exist_ok=True)
    os.environ["MONITOR_OUTPUT_DIR"] = str(out)
    torch.manual_seed(0)
    model = build_model(args.layers)
    block = model.blocks[args.layer]
    faulty_weight = block.mlp.fc.weight
    block_params = {id(p) for p in block.parameters()}
    groups = [
        {"params": [p for p in model.parameters() if id(p) not in block_params]},
        {"params": list(block.parameters())},
    ]
    optimizer = torch.optim.AdamW(groups, lr=1e-3)
    config = monitor_config(out / f"monitor_config_rank{rank}.json", monitored_modules(model))
    monitor = TrainerMon(config_file_path=config, params_have_main_grad=False)
    monitor.set_monitor(model, grad_acc_steps=1, optimizer=optimizer)

    state = {"step": 0}
    if fault == "bf16":

        def round_output(_module, _inputs, output):
            if state["step"] >= args.step:
                return output.to(torch.bfloat16).to(output.dtype)
            return output

        # on the MLP's last Linear, inside the monitored MLP: a hook on the MLP itself would run
        # after the monitor's (registered first) and the MLP's own output would look unchanged
        block.mlp.out.register_forward_hook(round_output)
    if fault in ("spike", "nan"):

        def corrupt(grad):
            if state["step"] != args.step:
                return grad
            if fault == "spike":
                return grad * 100.0
            if rank == world - 1:
                grad = grad.clone()
                grad.view(-1)[0] = float("nan")
            return grad

        faulty_weight.register_hook(corrupt)

    data = torch.Generator().manual_seed(1000 + rank)
    for step in range(args.steps):
        state["step"] = step
        if fault == "scale" and step == args.step:
            with torch.no_grad():
                faulty_weight.mul_(1.5)
        if fault == "lr" and step == args.step:
            optimizer.param_groups[1]["lr"] *= 10.0
        tokens = torch.randint(0, 64, (4, 16), generator=data)
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 64), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        if world > 1:
            for param in model.parameters():
                if param is faulty_weight and fault == "notmean" and step >= args.step:
                    # reduce over every rank but the last: a reduction over the wrong group
                    contribution = param.grad if rank < world - 1 else torch.zeros_like(param.grad)
                    dist.all_reduce(contribution)
                    param.grad = contribution / (world - 1)
                    continue
                dist.all_reduce(param.grad)
                param.grad /= world
        optimizer.step()
    monitor.summary_writer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path, help="one folder per run: OUT/<name>")
    parser.add_argument(
        "runs",
        nargs="+",
        help="NAME=FAULT (FAULT one of none, scale, lr, bf16, spike, nan, notmean)",
    )
    parser.add_argument("--step", type=int, default=20)
    parser.add_argument("--layer", type=int, default=2)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("gloo")
    for run in args.runs:
        name, _, fault = run.partition("=")
        train(args.out / name, fault or "none", args, rank, world)
        if world > 1:
            dist.barrier()
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
