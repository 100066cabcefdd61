"""A tiny Megatron-style GPT trained one step on gloo (CPU), dumped with msprobe's dumper.

Run with msprobe's torchrun (``.venv-msprobe/bin/torchrun --nproc-per-node N megatron_gpt.py
--out DIR --tp T --pp P [--vpp V] [--sequence-parallel] [--wrong-layer K] [--level L0|mix]``);
the world size gives the data-parallel count (N / (T * P)). Ranks follow Megatron's default order
tp-cp-ep-dp-pp (tp fastest), the one msprobe falls back to when it cannot find the groups.

The model keeps Megatron's module names (``decoder.layers.N.self_attention.linear_qkv`` ...,
layers numbered locally on each pipeline stage) and its communication: a ColumnParallelLinear
runs ``torch.matmul`` forward and a ``Tensor.matmul`` dgrad backward inside an autograd Function
whose backward all-reduces (or, sequence-parallel, reduce-scatters) the input gradient; a
RowParallelLinear's partial sum is all-reduced (or reduce-scattered) right after its matmul;
stages pass activations and gradients with send/recv. Each full weight comes from a seed keyed
by its global name and each rank takes its shard, so every layout computes the same model and
TP1, TP2, PP2 and TP2xPP2 runs are numerically comparable. ``--wrong-layer K`` scales the
first MLP weight of global layer K, the bug a compare must find first. ``--vpp V`` (above 1)
gives each rank V model chunks, each wrapped as Megatron's DDP does (``module.``) and given to
the dumper as a list (``Module.<chunk>.module...``); one microbatch runs Megatron's interleaved
schedule simplified: chunk 0 on every stage, then chunk 1 ..., backward in reverse.
``--model-list`` gives a single chunk as such a list (Megatron without VPP does the same), the
golden whose names a VPP run's can match.

This script runs in msprobe's environment only (tests/msprobe_runner.py); the project never
imports it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger
from torch import nn

HIDDEN = 16
HEADS = 4
FFN = 32
VOCAB = 32
SEQUENCE = 8
BATCH = 2
LAYERS = 4


@dataclass
class Parallel:
    """This rank's place in the layout and its process groups (Megatron's parallel_state)."""

    tp: int
    pp: int
    dp: int
    sequence_parallel: bool
    tp_rank: int
    pp_rank: int
    dp_rank: int
    tp_group: Any
    pp_ranks: list[int]
    pp_group: Any
    dp_group: Any

    @property
    def first_stage(self) -> bool:
        return self.pp_rank == 0

    @property
    def last_stage(self) -> bool:
        return self.pp_rank == self.pp - 1


def global_rank(tp: int, dp: int, tp_rank: int, dp_rank: int, pp_rank: int) -> int:
    return tp_rank + tp * (dp_rank + dp * pp_rank)


def init_parallel(tp: int, pp: int, sequence_parallel: bool) -> Parallel:
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    if world % (tp * pp):
        raise SystemExit(f"world size {world} is not a multiple of tp {tp} x pp {pp}")
    dp = world // (tp * pp)
    tp_rank, dp_rank, pp_rank = rank % tp, (rank // tp) % dp, rank // (tp * dp)
    mine: dict[str, Any] = {}
    # every rank creates every group, in the same order, as torch.distributed requires
    for p in range(pp):
        for d in range(dp):
            ranks = [global_rank(tp, dp, t, d, p) for t in range(tp)]
            group = dist.new_group(ranks)
            if rank in ranks:
                mine["tp"] = group
    for t in range(tp):
        for d in range(dp):
            ranks = [global_rank(tp, dp, t, d, p) for p in range(pp)]
            group = dist.new_group(ranks)
            if rank in ranks:
                mine["pp"], mine["pp_ranks"] = group, ranks
    for p in range(pp):
        for t in range(tp):
            ranks = [global_rank(tp, dp, t, d, p) for d in range(dp)]
            group = dist.new_group(ranks)
            if rank in ranks:
                mine["dp"] = group
    return Parallel(
        tp, pp, dp, sequence_parallel, tp_rank, pp_rank, dp_rank,
        mine["tp"], mine["pp_ranks"], mine["pp"], mine["dp"],
    )  # fmt: skip


def full_weight(name: str, *shape: int) -> torch.Tensor:
    seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator) * (1.0 / math.sqrt(shape[-1]))


# --- the communication of Megatron's tensor_parallel/mappings.py, as autograd Functions ---


def _all_gather(tensor: torch.Tensor, dim: int, par: Parallel) -> torch.Tensor:
    if par.tp == 1:
        return tensor
    moved = tensor.movedim(dim, 0).contiguous()
    gathered = torch.zeros((moved.shape[0] * par.tp, *moved.shape[1:]), dtype=tensor.dtype)
    dist.all_gather_into_tensor(gathered, moved, group=par.tp_group)
    return gathered.movedim(0, dim).contiguous()


def _reduce_scatter(tensor: torch.Tensor, par: Parallel) -> torch.Tensor:
    """Sum over the TP group, keep this rank's slice of dim 0 (the sequence)."""
    if par.tp == 1:
        return tensor
    output = torch.zeros((tensor.shape[0] // par.tp, *tensor.shape[1:]), dtype=tensor.dtype)
    dist.reduce_scatter_tensor(output, tensor.contiguous(), group=par.tp_group)
    return output


def _split(tensor: torch.Tensor, dim: int, par: Parallel) -> torch.Tensor:
    if par.tp == 1:
        return tensor
    return tensor.chunk(par.tp, dim=dim)[par.tp_rank].contiguous()


class ReduceFromTensorParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, par: Parallel) -> torch.Tensor:
        if par.tp > 1:
            dist.all_reduce(tensor, group=par.tp_group)
        return tensor

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


class ReduceScatterToSequenceParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, par: Parallel) -> torch.Tensor:
        ctx.par = par
        return _reduce_scatter(tensor, par)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _all_gather(grad, 0, ctx.par), None


class GatherFromTensorParallel(torch.autograd.Function):
    """The last dim gathered forward (output_layer's gather_output), split backward."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, par: Parallel) -> torch.Tensor:
        ctx.par = par
        return _all_gather(tensor, tensor.dim() - 1, par)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _split(grad, grad.dim() - 1, ctx.par), None


class LinearWithGradAllReduce(torch.autograd.Function):
    """Megatron's LinearWithGradAccumulationAndAsyncCommunication: torch.matmul forward, a
    Tensor.matmul dgrad backward, and for a column-parallel layer the input gradient's
    all-reduce (sequence-parallel: the input all-gathered forward, its gradient reduce-scattered)."""

    @staticmethod
    def forward(
        ctx: Any, tensor: torch.Tensor, weight: torch.Tensor, column: bool, par: Parallel
    ) -> torch.Tensor:
        ctx.column, ctx.par = column, par
        ctx.save_for_backward(tensor, weight)
        total = _all_gather(tensor, 0, par) if column and par.sequence_parallel else tensor
        return torch.matmul(total, weight.t())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        tensor, weight = ctx.saved_tensors
        par: Parallel = ctx.par
        sequence_gathered = ctx.column and par.sequence_parallel
        total = _all_gather(tensor, 0, par) if sequence_gathered else tensor
        grad_input = grad.matmul(weight)
        grad_weight = (
            grad.reshape(-1, grad.shape[-1]).t().matmul(total.reshape(-1, total.shape[-1]))
        )
        if ctx.column and par.tp > 1:
            if sequence_gathered:
                grad_input = _reduce_scatter(grad_input, par)
            else:
                dist.all_reduce(grad_input, group=par.tp_group)
        return grad_input, grad_weight, None, None


# --- the modules, with Megatron's names ---


class ColumnParallelLinear(nn.Module):
    def __init__(self, name: str, in_size: int, out_size: int, par: Parallel, gather: bool = False):
        super().__init__()
        self.par, self.gather = par, gather
        self.weight = nn.Parameter(_split(full_weight(name + ".weight", out_size, in_size), 0, par))
        self.bias = nn.Parameter(torch.zeros(out_size // par.tp))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        output = LinearWithGradAllReduce.apply(hidden, self.weight, True, self.par) + self.bias
        return GatherFromTensorParallel.apply(output, self.par) if self.gather else output


class RowParallelLinear(nn.Module):
    def __init__(self, name: str, in_size: int, out_size: int, par: Parallel):
        super().__init__()
        self.par = par
        self.weight = nn.Parameter(_split(full_weight(name + ".weight", out_size, in_size), 1, par))
        self.bias = nn.Parameter(torch.zeros(out_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        partial = LinearWithGradAllReduce.apply(hidden, self.weight, False, self.par)
        if self.par.sequence_parallel:
            reduced = ReduceScatterToSequenceParallel.apply(partial, self.par)
        else:
            reduced = ReduceFromTensorParallel.apply(partial, self.par)
        return reduced + self.bias


class VocabParallelEmbedding(nn.Module):
    def __init__(self, par: Parallel):
        super().__init__()
        self.par = par
        self.per_rank = VOCAB // par.tp
        self.start = par.tp_rank * self.per_rank
        full = full_weight("embedding.word_embeddings.weight", VOCAB, HIDDEN)
        self.weight = nn.Parameter(_split(full, 0, par))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.par.tp > 1:  # as Megatron, only a sharded vocabulary masks the other ranks' ids
            outside = (tokens < self.start) | (tokens >= self.start + self.per_rank)
            local = (tokens - self.start).masked_fill(outside, 0)
            embedded = F.embedding(local, self.weight).masked_fill(outside.unsqueeze(-1), 0.0)
        else:
            embedded = F.embedding(tokens, self.weight)
        embedded = embedded.transpose(0, 1).contiguous()  # [s, b, h] as Megatron
        if self.par.sequence_parallel:
            return ReduceScatterToSequenceParallel.apply(embedded, self.par)
        return ReduceFromTensorParallel.apply(embedded, self.par)


class LanguageModelEmbedding(nn.Module):
    def __init__(self, par: Parallel):
        super().__init__()
        self.word_embeddings = VocabParallelEmbedding(par)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.word_embeddings(tokens)


class DotProductAttention(nn.Module):
    def __init__(self, par: Parallel):
        super().__init__()
        self.heads = HEADS // par.tp

    def forward(self, qkv: torch.Tensor) -> torch.Tensor:
        sequence, batch = qkv.shape[0], qkv.shape[1]
        head_size = HIDDEN // HEADS
        qkv = qkv.view(sequence, batch, self.heads, 3 * head_size)
        query, key, value = qkv.split(head_size, dim=-1)
        query, key, value = (t.permute(1, 2, 0, 3) for t in (query, key, value))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(head_size)
        causal = torch.ones(sequence, sequence, dtype=torch.bool).triu(1)
        probabilities = torch.softmax(scores.masked_fill(causal, -1e4), dim=-1)
        context = torch.matmul(probabilities, value)  # [b, heads, s, d]
        return context.permute(2, 0, 1, 3).reshape(sequence, batch, self.heads * head_size)


class SelfAttention(nn.Module):
    def __init__(self, prefix: str, par: Parallel):
        super().__init__()
        self.linear_qkv = ColumnParallelLinear(prefix + ".linear_qkv", HIDDEN, 3 * HIDDEN, par)
        self.core_attention = DotProductAttention(par)
        self.linear_proj = RowParallelLinear(prefix + ".linear_proj", HIDDEN, HIDDEN, par)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.linear_proj(self.core_attention(self.linear_qkv(hidden)))


class MLP(nn.Module):
    def __init__(self, prefix: str, par: Parallel):
        super().__init__()
        self.linear_fc1 = ColumnParallelLinear(prefix + ".linear_fc1", HIDDEN, FFN, par)
        self.linear_fc2 = RowParallelLinear(prefix + ".linear_fc2", FFN, HIDDEN, par)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.linear_fc2(F.gelu(self.linear_fc1(hidden)))


class TransformerLayer(nn.Module):
    def __init__(self, number: int, par: Parallel, wrong: bool):
        super().__init__()
        prefix = f"decoder.layers.{number}"
        self.input_layernorm = nn.LayerNorm(HIDDEN)
        self.self_attention = SelfAttention(prefix + ".self_attention", par)
        self.pre_mlp_layernorm = nn.LayerNorm(HIDDEN)
        self.mlp = MLP(prefix + ".mlp", par)
        if wrong:
            with torch.no_grad():
                self.mlp.linear_fc1.weight.mul_(1.5)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.self_attention(self.input_layernorm(hidden))
        return hidden + self.mlp(self.pre_mlp_layernorm(hidden))


class TransformerBlock(nn.Module):
    def __init__(self, par: Parallel, wrong_layer: int | None, chunk: int = 0, vpp: int = 1):
        super().__init__()
        per_stage = LAYERS // (par.pp * vpp)
        # layers are numbered locally on each stage (and chunk), as Megatron
        first = chunk * (LAYERS // vpp) + par.pp_rank * per_stage
        self.layers = nn.ModuleList(
            TransformerLayer(first + i, par, first + i == wrong_layer) for i in range(per_stage)
        )
        last = par.last_stage and chunk == vpp - 1
        self.final_layernorm = nn.LayerNorm(HIDDEN) if last else None

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            hidden = layer(hidden)
        return self.final_layernorm(hidden) if self.final_layernorm is not None else hidden


class GPTModel(nn.Module):
    def __init__(self, par: Parallel, wrong_layer: int | None, chunk: int = 0, vpp: int = 1):
        super().__init__()
        self.par = par
        first, last = par.first_stage and chunk == 0, par.last_stage and chunk == vpp - 1
        self.embedding = LanguageModelEmbedding(par) if first else None
        self.decoder = TransformerBlock(par, wrong_layer, chunk, vpp)
        self.output_layer = (
            ColumnParallelLinear("output_layer", HIDDEN, VOCAB, par, gather=True) if last else None
        )

    def forward(self, tokens: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
        if self.embedding is not None:
            hidden = self.embedding(tokens)
        assert hidden is not None
        hidden = self.decoder(hidden)
        # sequence-parallel: the output layer's linear all-gathers the sequence itself
        return hidden if self.output_layer is None else self.output_layer(hidden)


class ModelChunk(nn.Module):
    """Megatron's DDP wrapper of one virtual-pipeline chunk: its module is ``module``."""

    def __init__(self, model: GPTModel):
        super().__init__()
        self.module = model

    def forward(self, tokens: torch.Tensor, hidden: torch.Tensor | None = None) -> torch.Tensor:
        return self.module(tokens, hidden)


def batch(par: Parallel) -> tuple[torch.Tensor, torch.Tensor]:
    """Each data-parallel replica its own batch; the ranks of a replica the same one."""
    generator = torch.Generator().manual_seed(1000 + par.dp_rank)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQUENCE + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def hidden_shape(par: Parallel) -> tuple[int, int, int]:
    sequence = SEQUENCE // par.tp if par.sequence_parallel else SEQUENCE
    return sequence, BATCH, HIDDEN


def train_step(model: GPTModel, par: Parallel) -> float | None:
    """One forward and backward through the pipeline, then the data-parallel gradient sum."""
    tokens, labels = batch(par)
    stage = par.pp_rank
    previous = par.pp_ranks[stage - 1] if stage > 0 else None
    following = par.pp_ranks[stage + 1] if stage < par.pp - 1 else None
    received: torch.Tensor | None = None
    if previous is not None:
        received = torch.zeros(hidden_shape(par))
        dist.recv(received, src=previous, group=par.pp_group)
        received.requires_grad_()
    output = model(tokens, received)
    loss_value: float | None = None
    if following is not None:
        dist.send(output.detach(), dst=following, group=par.pp_group)
        grad = torch.zeros_like(output)
        dist.recv(grad, src=following, group=par.pp_group)
        output.backward(grad)
    else:
        logits = output.transpose(0, 1).reshape(-1, VOCAB)
        loss = F.cross_entropy(logits, labels.reshape(-1))
        loss.backward()
        loss_value = loss.item()
    if received is not None:
        assert received.grad is not None
        dist.send(received.grad, dst=previous, group=par.pp_group)
    reduce_gradients(model, par)
    return loss_value


def reduce_gradients(model: nn.Module, par: Parallel) -> None:
    if par.sequence_parallel and par.tp > 1:  # Megatron's _allreduce_layernorm_grads
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                for parameter in module.parameters():
                    assert parameter.grad is not None
                    dist.all_reduce(parameter.grad, group=par.tp_group)
    if par.dp > 1:
        for parameter in model.parameters():
            if parameter.grad is not None:
                dist.all_reduce(parameter.grad, group=par.dp_group)
                parameter.grad.div_(par.dp)


def train_step_interleaved(chunks: list[ModelChunk], par: Parallel) -> float | None:
    """One microbatch through Megatron's interleaved schedule, simplified: the activations go
    stage 0 chunk 0, stage 1 chunk 0, ..., stage 0 chunk 1, ... (the last stage's chunk c
    sends to the first stage's chunk c + 1); the gradients go back the same way reversed."""
    tokens, labels = batch(par)
    stage, count = par.pp_rank, len(chunks)
    previous, following = par.pp_ranks[stage - 1], par.pp_ranks[(stage + 1) % par.pp]
    received: list[torch.Tensor | None] = []
    outputs: list[torch.Tensor] = []
    loss: torch.Tensor | None = None
    for chunk, model in enumerate(chunks):
        hidden: torch.Tensor | None = None
        if stage > 0 or chunk > 0:
            hidden = torch.zeros(hidden_shape(par))
            dist.recv(hidden, src=previous, group=par.pp_group)
            hidden.requires_grad_()
        received.append(hidden)
        outputs.append(model(tokens, hidden))
        if par.last_stage and chunk == count - 1:
            logits = outputs[-1].transpose(0, 1).reshape(-1, VOCAB)
            loss = F.cross_entropy(logits, labels.reshape(-1))
        else:
            dist.send(outputs[-1].detach(), dst=following, group=par.pp_group)
    for chunk in reversed(range(count)):
        if loss is not None and chunk == count - 1:
            loss.backward()
        else:
            grad = torch.zeros_like(outputs[chunk])
            dist.recv(grad, src=following, group=par.pp_group)
            outputs[chunk].backward(grad)
        hidden = received[chunk]
        if hidden is not None:
            assert hidden.grad is not None
            dist.send(hidden.grad, dst=previous, group=par.pp_group)
    reduce_gradients(nn.ModuleList(chunks), par)
    return None if loss is None else loss.item()


def main() -> None:
    global LAYERS  # the layer count the model classes read
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--vpp", type=int, default=1)
    parser.add_argument("--model-list", action="store_true")
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--wrong-layer", type=int)
    parser.add_argument("--level", choices=("L0", "mix"), default="mix")
    parser.add_argument(
        "--layers", type=int, default=LAYERS, help="bench/bench_merge.py's larger runs"
    )
    args = parser.parse_args()
    LAYERS = args.layers
    torch.manual_seed(0)
    torch.set_num_threads(1)
    par = init_parallel(args.tp, args.pp, args.sequence_parallel)
    config = {
        "task": "statistics",
        "dump_path": str(args.out),
        "rank": [],
        "step": [0],
        "level": args.level,
        "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"},
    }
    config_path = args.out.with_name(f"{args.out.name}.config.{dist.get_rank()}.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(json.dumps(config))
    debugger = PrecisionDebugger(config_path=str(config_path))
    listed = args.vpp > 1 or args.model_list
    if listed:
        chunks = [
            ModelChunk(GPTModel(par, args.wrong_layer, chunk, args.vpp))
            for chunk in range(args.vpp)
        ]
    else:
        model = GPTModel(par, args.wrong_layer)
    parameters = nn.ModuleList(chunks).parameters() if listed else model.parameters()
    optimizer = torch.optim.SGD(parameters, lr=0.1)
    for _ in range(2):  # step 0 dumped, step 1 trains on the updated weights undumped
        optimizer.zero_grad()
        if listed:
            debugger.start(chunks)  # a list of chunks, as Megatron gives it
            loss = train_step_interleaved(chunks, par)
        else:
            debugger.start(model)
            loss = train_step(model, par)
        debugger.stop()
        debugger.step()
        optimizer.step()
        if loss is not None and par.tp_rank == 0 and par.dp_rank == 0:
            print(f"loss {loss:.6f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
