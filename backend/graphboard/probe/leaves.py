"""Python values turned into dump.json leaves, the shapes msprobe writes (reference-builder §1.2).

A tensor becomes ``{"type": "torch.Tensor", "dtype", "shape", "Max", "Min", "Mean", "Norm",
"requires_grad"}`` plus ``md5`` or ``data_name`` depending on the task; a scalar becomes
``{"type": "int", "value": 1}``; ``None`` and values that have no faithful JSON form become
``null`` (msprobe's "masked" leaf). Lists, tuples and dicts recurse, and each leaf's record path
(``<node>.input.0.1``) names its tensor file in task ``tensor``.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from graphboard.probe.config import Task
from graphboard.probe.stats import crc32_hex, summarize
from graphboard.probe.tensor_files import TensorFiles

Json = dict[str, "Json"] | list["Json"] | str | int | float | bool | None

MAX_DEPTH = 400  # msprobe's own nesting limit when it reads the leaves back

_SCALAR_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "str"),
)


def _distributed() -> Any:
    """torch.distributed when this build has it, else None."""
    return torch.distributed if torch.distributed.is_available() else None


def process_group_id(group: Any) -> str:
    """An id equal on every rank of ``group`` and different for two groups over the same ranks."""
    ranks = torch.distributed.get_process_group_ranks(group)
    return f"{zlib.crc32(f'{group.group_name}:{ranks}'.encode()):08x}"


class LeafWriter:
    def __init__(self, task: Task, tensor_files: TensorFiles | None) -> None:
        self.task = task
        self.tensor_files = tensor_files

    # Record sections -------------------------------------------------------------------------

    def inputs(self, args: Sequence[Any], kwargs: Mapping[str, Any], name: str) -> dict[str, Json]:
        """A call's ``input_args`` and ``input_kwargs`` as it was given them."""
        return {
            "input_args": self.args(args, f"{name}.input"),
            "input_kwargs": self.kwargs(kwargs, f"{name}.input"),
        }

    def args(self, values: Sequence[Any], path: str) -> list[Json]:
        return [self.value(item, f"{path}.{index}") for index, item in enumerate(values)]

    def kwargs(self, values: Mapping[str, Any], path: str) -> dict[str, Json]:
        return {str(key): self.value(item, f"{path}.{key}") for key, item in values.items()}

    def output(self, value: Any, path: str) -> list[Json]:
        """An API or module result as msprobe lists it: a tuple's items, else the one value."""
        if isinstance(value, tuple | list) and not isinstance(value, torch.Size):
            return self.args(value, path)
        return [self.value(value, f"{path}.0")]

    # Leaves ----------------------------------------------------------------------------------

    def value(self, value: Any, path: str, depth: int = 0) -> Json:
        if depth > MAX_DEPTH or value is None:
            return None
        if isinstance(value, torch.Tensor):
            return self.tensor(value, path)
        for kind, name in _SCALAR_TYPES:
            if isinstance(value, kind) and not isinstance(value, enum.Enum):
                return {"type": name, "value": kind(value)}
        if isinstance(value, torch.Size):
            return {"type": "torch.Size", "value": list(value)}
        if isinstance(value, tuple | list):
            return [
                self.value(item, f"{path}.{index}", depth + 1) for index, item in enumerate(value)
            ]
        if isinstance(value, Mapping):
            return {
                str(key): self.value(item, f"{path}.{key}", depth + 1)
                for key, item in value.items()
            }
        return self._special(value, path, depth)

    def _special(self, value: Any, path: str, depth: int) -> Json:
        if isinstance(value, slice):
            bounds = (value.start, value.stop, value.step)
            return {
                "type": "slice",
                "value": [bound if isinstance(bound, int) else None for bound in bounds],
            }
        if value is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        if isinstance(value, torch.dtype | torch.device | torch.layout | torch.memory_format):
            return {"type": f"torch.{type(value).__name__}", "value": str(value)}
        if isinstance(value, np.generic):
            return self.value(value.item(), path, depth)
        dist = _distributed()
        if dist is not None:
            if isinstance(value, dist.ProcessGroup):
                return self.process_group(value)
            if isinstance(value, dist.ReduceOp | dist.ReduceOp.RedOpType):
                return {"type": "torch.distributed.ReduceOp", "value": str(value)}
            if isinstance(value, dist.P2POp):
                return self.p2p_op(value, path, mask_receive=False)
        # Anything else (modules, generators, user objects) has no stable JSON form: masked.
        return None

    def tensor(self, tensor: torch.Tensor, path: str) -> Json:
        maximum, minimum, mean, norm = summarize(tensor)
        leaf: dict[str, Json] = {
            "type": "torch.Tensor",
            "dtype": str(tensor.dtype),
            "shape": list(tensor.shape),
            "Max": maximum,
            "Min": minimum,
            "Mean": mean,
            "Norm": norm,
            "requires_grad": tensor.requires_grad,
        }
        if self.task is Task.MD5:
            leaf["md5"] = crc32_hex(tensor)
        elif self.task is Task.TENSOR and self.tensor_files is not None:
            leaf["data_name"] = self.tensor_files.save(tensor, path)
        return leaf

    def process_group(self, group: Any) -> Json:
        ranks = torch.distributed.get_process_group_ranks(group)
        return {
            "type": "torch.ProcessGroup",
            "group_ranks": list(ranks),
            "group_id": process_group_id(group),
        }

    def p2p_op(self, op: Any, path: str, *, mask_receive: bool) -> Json:
        """A ``dist.P2POp`` of batch_isend_irecv; a receive buffer is masked before the call."""
        name = getattr(op.op, "__name__", str(op.op))
        tensor = (
            None if mask_receive and "recv" in name else self.tensor(op.tensor, f"{path}.tensor")
        )
        group = op.group
        return {
            "class_type": "torch.distributed.P2POp",
            "op": name,
            "peer": op.peer,
            "tag": op.tag,
            "group_id": process_group_id(group) if group is not None else None,
            "tensor": tensor,
        }
