"""Real runs for the diagnose tests and bench: a small causal language model (attention with
a -inf causal mask made by ``triu(full(-inf))`` and a padding mask of the dtype's min, an MLP
with GELU), dumped by graphboard's probe or msprobe's dumper, with one fault made for real:

- ``clean``: nothing wrong; the masks make infinities on purpose;
- ``overflow``: block 1's ``Scale`` module casts to float16 and multiplies by 1e5 (overflows);
- ``weight``: step 0's update uses a learning rate of 1e60 on ``blocks.1.mlp.fc1`` (its weight
  becomes inf); only step 1 is dumped;
- ``input``: the model's input is made inf before the dump starts (an op outside the dump);
- ``nondet``: ``F.gelu`` returns its result moved by one ulp (``torch.nextafter``): run it once
  with ``--perturb`` and once without for two runs of one configuration;
- ``uncaptured``: with ``--perturb`` the input is moved by one ulp before the dump starts;
- ``llama``: a transformers Llama built from a tiny config (random weights, eager attention,
  whose masks hold the dtype's min) with a padded batch, clean;
- ``nan_rank``: one rank of a gloo run (``make_ranks``) has ``F.gelu`` put a NaN (or ``fill``)
  in one element of its output; ``--parallel dp`` all-reduces the gradients, ``--parallel tp`` splits the MLP's hidden
  units over the ranks (row-parallel: its output is all-reduced in the forward).

Run as ``python diagnose_cases.py CASE OUT [--dumper probe|msprobe] [--task statistics|md5]``
(msprobe's dumper: with msprobe's Python), or import and call :func:`make`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

DIM, HEADS, SEQ, BATCH, VOCAB = 16, 2, 6, 2, 11
CASES = ("clean", "llama", "overflow", "weight", "input", "nondet", "uncaptured", "nan_rank")


class Scale(nn.Module):
    """Multiplies by ``factor`` in ``dtype`` (the overflow case: float16 and 1e5)."""

    def __init__(self) -> None:
        super().__init__()
        self.factor: float | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.factor is None:
            return x
        return (x.half() * self.factor).float()


class Mlp(nn.Module):
    def __init__(self, hidden: int, tp: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.tp = tp
        shard = hidden // tp[1] if tp else hidden
        self.fc1 = nn.Linear(DIM, shard)
        self.fc2 = nn.Linear(shard, DIM, bias=tp is None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc2(F.gelu(self.fc1(x)))
        if self.tp is not None:  # row-parallel: the partial sums are added across ranks
            import torch.distributed as dist

            dist.all_reduce(out)
        return out


class Block(nn.Module):
    def __init__(self, tp: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = Mlp(4 * DIM, tp)
        self.scale = Scale()

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        shape = (x.shape[0], x.shape[1], HEADS, DIM // HEADS)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(DIM // HEADS)
        causal = torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1)
        scores = scores + causal  # -inf above the diagonal, on purpose
        # padded keys get the dtype's min, as transformers' eager attention does
        scores = scores.masked_fill(padding[:, None, None, :] == 0, torch.finfo(scores.dtype).min)
        attended = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(x.shape)
        x = x + self.proj(attended)
        return x + self.scale(self.mlp(self.norm2(x)))


class TinyLM(nn.Module):
    def __init__(self, tp: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(tp), Block(tp)])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, x: torch.Tensor, padding: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, padding)
        return F.cross_entropy(self.head(x).reshape(-1, VOCAB), labels.reshape(-1))


class Dumper:
    """One dump window, with graphboard's probe or msprobe's PrecisionDebugger."""

    def __init__(
        self, kind: str, out: Path, model: nn.Module, task: str, step: int, config: Path | None
    ) -> None:
        self.kind, self.out, self.model, self.task, self.step = kind, out, model, task, step
        self.config = config  # msprobe: a config.json to use as it is (diagnose --next-config)
        self.window: Any = None

    def __enter__(self) -> Dumper:
        if self.kind == "probe":
            from graphboard import probe

            self.window = probe.dump(
                self.model, self.out, step=self.step, level="mix", task=self.task
            )
            self.window.__enter__()
        else:
            from msprobe.pytorch import PrecisionDebugger

            config = {
                "task": "statistics",
                "dump_path": str(self.out),
                "rank": [],
                "step": [self.step],
                "level": "mix",
                "statistics": {
                    "scope": [],
                    "list": [],
                    "data_mode": ["all"],
                    "summary_mode": "md5" if self.task == "md5" else "statistics",
                },
            }
            path = self.config or self.out.parent / f"{self.out.name}.config.json"
            if self.config is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(config))
            self.window = PrecisionDebugger(config_path=str(path))
            for _ in range(self.step):
                self.window.step()  # msprobe counts steps itself
            self.window.start(model=self.model)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.kind == "probe":
            self.window.__exit__(*exc)
        else:
            self.window.stop()
            self.window.step()


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, SEQ, DIM, generator=generator)
    padding = torch.ones(BATCH, SEQ)
    padding[1, -2:] = 0  # the second sequence is padded
    labels = torch.randint(0, VOCAB, (BATCH, SEQ), generator=generator)
    return x, padding, labels


def make(
    case: str,
    out: Path,
    dumper: str = "probe",
    task: str = "statistics",
    perturb: bool = False,
    rank: int = 0,
    world: int = 1,
    parallel: str = "dp",
    bad_rank: int = -1,
    config: Path | None = None,
    fill: float = math.nan,
) -> Path:
    """Dump one run of ``case`` under ``out`` (``out/stepN/rankM``); return ``out``."""
    torch.manual_seed(0)
    if case == "llama":
        return _llama(out, dumper, task, config)
    tp = (rank, world) if world > 1 and parallel == "tp" else None
    model = TinyLM(tp)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, padding, labels = _batch(rank if parallel == "dp" else 0)
    original_gelu = F.gelu
    if case == "nondet" and perturb:
        F.gelu = lambda t, *a, **k: torch.nextafter(
            original_gelu(t, *a, **k), torch.tensor(math.inf)
        )  # type: ignore[assignment]
    if case == "nan_rank" and rank == bad_rank:

        def gelu_with_nan(t: torch.Tensor, *a: Any, **k: Any) -> torch.Tensor:
            result = original_gelu(t, *a, **k)
            result.view(-1)[3] = fill  # one element of one op's output on one rank
            return result

        F.gelu = gelu_with_nan  # type: ignore[assignment]
    try:
        step = 0
        if case == "overflow":
            model.blocks[1].scale.factor = 1e5
        if case == "weight":  # step 0, not dumped: a bad update of one layer
            model(x, padding, labels).backward()
            with torch.no_grad():  # a learning rate of 1e60 in float32: inf where grad != 0
                for param in model.blocks[1].mlp.fc1.parameters():
                    assert param.grad is not None
                    param.sub_(param.grad * 1e30 * 1e30)
            optimizer.zero_grad()
            step = 1
        if case == "input":
            x = x * 1e39  # outside the dump: inf before the first captured op
        if case == "uncaptured" and perturb:
            x = torch.from_numpy(__import__("numpy").nextafter(x.numpy(), math.inf))
        with Dumper(dumper, out, model, task, step, config):
            loss = model(x, padding, labels)
            loss.backward()
            if world > 1 and parallel == "dp":
                import torch.distributed as dist

                for param in model.parameters():
                    if param.grad is not None:
                        dist.all_reduce(param.grad)
            optimizer.step()
            optimizer.zero_grad()
    finally:
        F.gelu = original_gelu  # type: ignore[assignment]
    return out


def _llama(out: Path, dumper: str, task: str, config: Path | None) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    settings = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    settings._attn_implementation = "eager"
    model = LlamaForCausalLM(settings)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 64, (2, 8), generator=generator)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :3] = 0  # left padding: the masked keys get the dtype's min
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Dumper(dumper, out, model, task, 0, config):
        loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return out


def run_rank(
    rank: int,
    world: int,
    init: str,
    out: str,
    parallel: str,
    bad_rank: int,
    task: str,
    fill: float = math.nan,
) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        make(
            "nan_rank",
            Path(out),
            "probe",
            task,
            rank=rank,
            world=world,
            parallel=parallel,
            bad_rank=bad_rank,
            fill=fill,
        )
    finally:
        dist.destroy_process_group()


def make_ranks(
    out: Path,
    world: int,
    parallel: str,
    bad_rank: int,
    task: str = "statistics",
    fill: float = math.nan,
) -> Path:
    """A ``world``-rank gloo run of the nan_rank case dumped with graphboard's probe."""
    import torch.multiprocessing as mp

    out.parent.mkdir(parents=True, exist_ok=True)
    store = out.parent / f"{out.name}.store"
    mp.spawn(
        run_rank,
        args=(world, f"file://{store}", str(out), parallel, bad_rank, task, fill),
        nprocs=world,
        join=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=CASES)
    parser.add_argument("out", type=Path)
    parser.add_argument("--dumper", choices=("probe", "msprobe"), default="probe")
    parser.add_argument("--task", choices=("statistics", "md5"), default="statistics")
    parser.add_argument("--perturb", action="store_true")
    parser.add_argument("--config", type=Path, help="msprobe: dump with this config.json")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    make(args.case, args.out, args.dumper, args.task, args.perturb, config=args.config)


if __name__ == "__main__":
    main()
