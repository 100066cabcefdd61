"""What a node shows that survives a renaming: its kind and direction, its class or API after
normalisation, its parameter names, and the shapes, dtypes and statistics of its tensors."""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from graphboard.dump.records import Param, Role
from graphboard.graph.model import NodeType

# Words frameworks add around the same operation: Megatron's ColumnParallelLinear is a
# Linear, MindSpore's Dense is one too; Torch.matmul, Tensor.matmul and Mint.matmul agree.
_CLASS_NOISE = re.compile(r"(column|row|vocab|parallel|te|fused|megatron|gpt2?|llama|qwen)")
_API_PREFIXES = frozenset(
    {
        "Functional",
        "Torch",
        "Tensor",
        "Mint",
        "MintFunctional",
        "Primitive",
        "Jit",
        "NPU",
        "Aten",
        "Distributed",
        "MindSpore",
        "Ms",
    }
)
_CLASS_SYNONYMS = {"dense": "linear", "conv1d": "linear", "rmsnorm": "norm", "layernorm": "norm"}
_DIRECTIONS = ("forward", "backward", "parameters_grad")


class Tensor(NamedTuple):
    role: Role
    dtype: str | None
    shape: tuple[int, ...] | None
    norm: float | None
    mean: float | None


class Features(NamedTuple):
    kind: int  # NodeType
    direction: str  # forward | backward | parameters_grad | "" (a collection)
    label: str  # normalised class (a module) or operation (an API)
    raw_label: str  # as named: the class, or Functional.linear
    attribute: str  # a module's attribute under its parent ("qkv"), "" for an API
    call: str  # the call index in the name
    param_names: frozenset[str]  # "parameters.weight", "weight" (grads)
    tensors: tuple[Tensor, ...]  # inputs, outputs, parameters in dump order
    descendants: int  # how many nodes run inside it: a whole model's wrapper is no embedding

    @property
    def bucket(self) -> tuple[int, str]:
        """Only nodes of one bucket may pair: never a module with an API, never forward with
        backward."""
        return self.kind, self.direction


def _number(value: object) -> float | None:
    if type(value) is float:  # nearly every statistic: the quick way first
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def normal_class(name: str) -> str:
    lowered = _CLASS_NOISE.sub("", name.lower()) or name.lower()
    return _CLASS_SYNONYMS.get(lowered, lowered)


def normal_api(name: str) -> str:
    """``Functional.linear`` / ``Torch.linear`` / ``Mint.nn.functional.linear`` -> ``linear``;
    ``Tensor.__add__`` -> ``add``."""
    parts = [part for part in name.split(".") if part not in _API_PREFIXES]
    return (parts[-1] if parts else name).strip("_").lower()


def _split_name(name: str, kind: int) -> tuple[str, str, str, str]:
    """(direction, raw label, attribute, call index) from a node name."""
    parts = name.split(".")
    if kind == NodeType.MODULE:
        at = next((i for i, p in enumerate(parts) if p in _DIRECTIONS and i >= 2), None)
        if at is None:
            return "", name, "", ""
        call = parts[at + 1] if at + 1 < len(parts) else ""
        attribute = parts[at - 2] if at >= 3 else ""
        return parts[at], parts[at - 1], attribute, call
    if kind == NodeType.API:
        direction = parts[-1] if parts[-1] in ("forward", "backward") else ""
        call = parts[-2] if direction and len(parts) >= 3 and parts[-2].isdigit() else ""
        end = len(parts) - (1 if direction else 0) - (1 if call else 0)
        return direction, ".".join(parts[:end]), "", call
    return "", name.rsplit(".", 1)[0], "", ""


def _tensor(param: Param) -> Tensor:
    shape = param.shape  # the reader's tuple of ints
    return Tensor(param.role, param.dtype, shape, _number(param.norm), _number(param.mean))


def features(name: str, kind: int, params: list[Param], descendants: int = 0) -> Features:
    direction, raw, attribute, call = _split_name(name, kind)
    label = normal_class(raw) if kind == NodeType.MODULE else normal_api(raw)
    return Features(
        kind=kind,
        direction=direction,
        label=label,
        raw_label=raw,
        attribute=attribute,
        call=call,
        param_names=frozenset(
            p.key for p in params if p.role in (Role.PARAMETERS, Role.PARAMETERS_GRAD)
        ),
        tensors=tuple(_tensor(p) for p in params if p.is_tensor),
        descendants=descendants,
    )
