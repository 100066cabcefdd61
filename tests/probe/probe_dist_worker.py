"""One rank of the 2-process gloo run dumped by the distributed probe tests."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from graphboard import probe

WORLD_SIZE = 2


def run_rank(rank: int, init_method: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=WORLD_SIZE)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 3))
        pair = dist.new_group([0, 1])
        peer = 1 - rank
        with probe.dump(model, out_dir, step=0):  # rank comes from torch.distributed
            shift = torch.arange(3.0) if rank == 0 else torch.zeros(3)
            dist.broadcast(shift, src=0)
            loss = (model(torch.randn(2, 4) + rank) + shift).sum()
            loss.backward()
            for param in model.parameters():
                dist.all_reduce(param.grad)
            total = loss.detach().reshape(1).clone()
            dist.all_reduce(total, group=pair)
            losses = [torch.zeros(1) for _ in range(WORLD_SIZE)]
            dist.all_gather(losses, loss.detach().reshape(1))
            if rank == 0:
                dist.send(torch.full((2,), 7.0), dst=1)
                received = torch.zeros(2)
                request = dist.irecv(received, src=1)
            else:
                received = torch.zeros(2)
                dist.recv(received, src=0)
                request = dist.isend(torch.full((2,), 9.0), dst=0)
            assert request is not None
            request.wait()
            outgoing = torch.full((3,), float(rank + 1))
            incoming = torch.zeros(3)
            ops = [dist.P2POp(dist.isend, outgoing, peer), dist.P2POp(dist.irecv, incoming, peer)]
            for request in dist.batch_isend_irecv(ops):
                request.wait()
            mine = torch.full((2,), float(rank + 1))
            dist.reduce(mine, dst=0)
            gathered = [torch.zeros(2) for _ in range(WORLD_SIZE)] if rank == 0 else None
            dist.gather(mine, gathered, dst=0)
            piece = torch.zeros(2)
            dist.scatter(
                piece,
                [torch.full((2,), 5.0 + index) for index in range(WORLD_SIZE)]
                if rank == 0
                else None,
                src=0,
            )
            shard = torch.zeros(2)
            dist.reduce_scatter(
                shard, [torch.full((2,), float(index)) for index in range(WORLD_SIZE)]
            )
            exchanged = [torch.zeros(1) for _ in range(WORLD_SIZE)]
            dist.all_to_all(
                exchanged,
                [torch.full((1,), float(10 * rank + index)) for index in range(WORLD_SIZE)],
            )
            dist.barrier()
    finally:
        dist.destroy_process_group()
