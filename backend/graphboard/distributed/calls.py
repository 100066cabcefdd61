"""Reading one communication call from its parameters: API, direction, group, peer or root,
ReduceOp, and the tensors it sent or received."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from graphboard.distributed.apis import (
    P2P_KINDS,
    ROOTED_KINDS,
    Family,
    RootArg,
    batch_op,
    family_of,
)
from graphboard.distributed.model import CommNode, Endpoint
from graphboard.distributed.stats import TensorStats, as_int
from graphboard.dump.records import Param, Role

DEFAULT_GROUP = "default"

# Role values as plain strings: formatting a StrEnum member runs Python code, per lookup
INPUT, OUTPUT = Role.INPUT.value, Role.OUTPUT.value
_INPUT_ROLE = Role.INPUT  # checked once per parameter: a module name is cheaper to look up
_MANY_TO_MANY = Family.MANY_TO_MANY


REDUCE_OP = re.compile(r"\b(SUM|AVG|PRODUCT|MIN|MAX|BAND|BOR|BXOR|PREMUL_SUM)\b")


def group_ranks(value: Any) -> tuple[int, ...]:
    if type(value) is list and all(type(item) is int for item in value):
        return tuple(value)  # what dump.json nearly always holds, read without conversions
    if isinstance(value, str):  # msprobe sometimes writes the list as a JSON string
        try:
            value = json.loads(value)
        except ValueError:
            return ()
    if not isinstance(value, list):
        return ()
    return tuple(rank for rank in (as_int(item) for item in value) if rank is not None)


@dataclass(slots=True)
class Call:
    """One communication node: its parameters indexed by key, its API and group resolved."""

    node: CommNode
    api: str
    direction: str
    family: Family
    root_arg: RootArg | None
    params: dict[str, Param]
    group_key: str
    members: tuple[int, ...] | None  # None: the default group
    endpoint: Endpoint  # this call as one end of its links (a batch has one per inner op)
    call_id: int | None = None  # its group call (gb_comm_calls.id), once collectives are paired

    @classmethod
    def of(cls, node: CommNode) -> Call:
        parts = node.name.split(".")
        api = parts[1] if len(parts) > 1 else node.name
        direction = parts[-1] if parts[-1] in ("forward", "backward") else ""
        family, root_arg = family_of(api)
        group_key, members = DEFAULT_GROUP, None
        for param in node.params:
            if param.role is _INPUT_ROLE and param.extra and "group_ranks" in param.extra:
                members = group_ranks(param.extra["group_ranks"])
                group_id = param.extra.get("group_id")
                group_key = str(group_id) if group_id is not None else f"ranks{list(members)}"
                break
        params = {param.key: param for param in node.params}
        endpoint = Endpoint(node.rank, node, api)
        return cls(node, api, direction, family, root_arg, params, group_key, members, endpoint)

    def arg(self, role: str, position: int, name: str | None = None) -> Param | None:
        found = self.params.get(f"{role}.{position}")
        if found is None and name is not None:
            found = self.params.get(f"{role}.{name}")
        return found

    def tensor(self, role: str, position: int, name: str | None = None) -> TensorStats | None:
        return TensorStats.of_param(self.arg(role, position, name))

    def tensor_list(self, role: str, position: int) -> list[TensorStats | None]:
        """The tensors of a list argument (``output.0.0``, ``output.0.1`` ...), in order."""
        items: list[TensorStats | None] = []
        while (param := self.params.get(f"{role}.{position}.{len(items)}")) is not None:
            items.append(TensorStats.of_param(param))
        return items

    def rank_arg(self) -> int | None:
        """The global peer/root rank: ``src``/``dst``, or ``group_src``/``group_dst`` mapped."""
        spec = self.root_arg
        if spec is None:
            return None
        param = self.arg(INPUT, spec.position, spec.name)
        if param is not None and (rank := as_int(param.value)) is not None:
            return rank
        local = self.params.get(f"input.group_{spec.name}")
        if local is not None and self.members and (index := as_int(local.value)) is not None:
            return self.members[index] if 0 <= index < len(self.members) else None
        return spec.default

    def reduce_op(self) -> str:
        for param in self.node.params:
            if param.role is _INPUT_ROLE and (param.type or "").endswith("ReduceOp"):
                found = REDUCE_OP.search(str(param.value))
                if found:
                    return found.group(1)
        return "SUM"  # torch's default

    def kind(self) -> str:
        """This node's msprobe communications_type."""
        if self.family is _MANY_TO_MANY:
            return "send_receive"
        if self.family in P2P_KINDS:
            return P2P_KINDS[self.family]
        if self.family is Family.BATCH:
            ops = self.node.batch_p2p or []
            kinds = {P2P_KINDS[parsed[1]] for op in ops if (parsed := batch_op(op))}
            return kinds.pop() if len(kinds) == 1 else "send_receive"
        if self.family in ROOTED_KINDS:
            root_kind, member_kind = ROOTED_KINDS[self.family]
            return root_kind if self.rank_arg() == self.node.rank else member_kind
        return "send_receive"
