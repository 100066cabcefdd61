"""One rank of a 2-process gloo run dumped twice by graphboard's probe: a golden that averages
its gradients (all_reduce with AVG) and a target that sums them (SUM: a sum where a mean was
expected, the collective's own corruption), on the same model, seed and data."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from graphboard import probe

WORLD_SIZE = 2


def _step(rank: int, out_dir: str, op: dist.ReduceOp) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2))
    torch.manual_seed(1 + rank)  # each rank its own batch
    batch = torch.randn(5, 6)
    with probe.dump(model, out_dir, step=0):  # rank comes from torch.distributed
        model(batch).square().mean().backward()
        for param in model.parameters():
            assert param.grad is not None
            dist.all_reduce(param.grad, op=op)


def run_rank(rank: int, init_method: str, root: str) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=WORLD_SIZE)
    try:
        _step(rank, f"{root}/golden", dist.ReduceOp.AVG)
        _step(rank, f"{root}/target", dist.ReduceOp.SUM)
    finally:
        dist.destroy_process_group()
