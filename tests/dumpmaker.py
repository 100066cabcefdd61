"""Hand-made msprobe dumps for tests, written exactly as msprobe lays them out.

``RankDump`` collects construct.json entries, dump.json records and stack.json frames for one
rank folder and ``write``s them (``indent=1`` like msprobe, or compact; stack.json grouped like
msprobe 26 or legacy). ``write_dump_root`` lays several out as ``stepN/rankN``. Leaf helpers
write tensors, scalars and process groups as msprobe's dump.json holds them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fixture_cases import fixture_path as fixture_path  # re-exported for tests
from fixture_cases import reference_db as reference_db
from graphboard.dump.layout import discover
from graphboard.graph.builder import build_graph
from graphboard.graph.model import Graph, Node

BuildFn = Callable[..., Path]

Leaf = dict[str, Any]
Record = dict[str, Any]
Parent = str | None | list[Any]  # a plain parent, or Megatron's [parent, micro_step]


def tensor(
    value: float = 1.0,
    *,
    stats: tuple[Any, Any, Any, Any] | None = None,
    shape: Iterable[int] = (2, 3),
    dtype: str = "torch.float32",
    requires_grad: bool = False,
    **extra: Any,
) -> Leaf:
    """A tensor leaf; ``stats`` is (Max, Min, Mean, Norm), else all four are ``value``."""
    high, low, mean, norm = stats if stats is not None else (value, value, value, value)
    leaf: Leaf = {
        "type": "torch.Tensor",
        "dtype": dtype,
        "shape": list(shape),
        "Max": high,
        "Min": low,
        "Mean": mean,
        "Norm": norm,
        "requires_grad": requires_grad,
    }
    leaf.update(extra)
    return leaf


def scalar(value: Any) -> Leaf:
    return {"type": type(value).__name__, "value": value}


def process_group(ranks: list[int], group_id: str = "group-hash") -> Leaf:
    return {"type": "torch.ProcessGroup", "group_ranks": ranks, "group_id": group_id}


def record(
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    output: list[Any] | None = None,
    parameters: dict[str, Any] | None = None,
) -> Record:
    """A forward record (input_args / input_kwargs / output / parameters)."""
    result: Record = {
        "input_args": [tensor()] if args is None else args,
        "input_kwargs": kwargs or {},
        "output": [tensor()] if output is None else output,
    }
    if parameters is not None:
        result["parameters"] = parameters
    return result


def backward_record(inputs: list[Any] | None = None, output: list[Any] | None = None) -> Record:
    return {
        "input": [tensor()] if inputs is None else inputs,
        "output": [tensor()] if output is None else output,
    }


def default_record(name: str) -> Record:
    return backward_record() if ".backward" in name else record()


def frame(path: str, line: int, function: str, source: str = "pass") -> str:
    """A stack.json frame string as msprobe writes it."""
    return f"File {path}, line {line}, in {function}, \n {source}"


@dataclass
class RankDump:
    """One rank folder. ``add`` keeps construct.json order, which is execution order."""

    task: str = "statistics"
    level: str = "mix"
    framework: str | None = "pytorch"
    dump_data_dir: str | None = None
    construct: dict[str, Parent] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    stacks: dict[str, list[str]] = field(default_factory=dict)
    megatron_micro_steps: int | None = None  # writes megatron_micro_step_number when set
    # Entries written a second time at the end of dump.json's data / construct.json, under the
    # same name, as a corrupted or concatenated dump holds them (JSON objects cannot say so).
    repeated_records: list[tuple[str, Any]] = field(default_factory=list)
    repeated_construct: list[tuple[str, Parent]] = field(default_factory=list)

    def add(
        self,
        name: str,
        parent: str | None = None,
        *,
        data: Any = ...,
        stack: list[str] | None = None,
        micro_step: int | None = None,
    ) -> RankDump:
        """A construct.json entry, its dump.json record (a default one unless given; ``None``
        for no record) and its stack."""
        self.construct[name] = parent if micro_step is None else [parent, micro_step]
        if data is ...:
            data = default_record(name)
        if data is not None:
            self.data[name] = data
        if stack is not None:
            self.stacks[name] = stack
        return self

    def grad(self, name: str, params: Mapping[str, Any] | None = None) -> RankDump:
        """A parameters_grad record: in dump.json only, as msprobe writes it."""
        self.data[name] = (
            {"weight": [tensor()], "bias": [tensor()]} if params is None else dict(params)
        )
        return self

    def header(self) -> dict[str, Any]:
        head: dict[str, Any] = {"task": self.task, "level": self.level}
        if self.framework is not None:
            head["framework"] = self.framework
        head["dump_data_dir"] = self.dump_data_dir
        return head

    def construct_json(self) -> dict[str, Any]:
        if self.megatron_micro_steps is None:
            return dict(self.construct)
        return {"megatron_micro_step_number": self.megatron_micro_steps, **self.construct}

    def stack_json(self, stack_format: Literal["grouped", "legacy"]) -> dict[str, Any]:
        if stack_format == "legacy":
            return dict(self.stacks)
        groups: dict[tuple[str, ...], list[str]] = {}
        for name, frames in self.stacks.items():
            groups.setdefault(tuple(frames), []).append(name)
        return {
            str(index): [names, list(frames)]
            for index, (frames, names) in enumerate(groups.items())
        }

    def write(
        self,
        folder: Path,
        *,
        indent: int | None = 1,
        stack_format: Literal["grouped", "legacy"] = "grouped",
    ) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        dump = {**self.header(), "data": _with_repeats(self.data, self.repeated_records)}
        files = {
            "construct.json": _with_repeats(self.construct_json(), self.repeated_construct),
            "dump.json": dump,
            "stack.json": self.stack_json(stack_format),
        }
        for file_name, document in files.items():
            # json.dumps writes NaN / Infinity / -Infinity tokens, as msprobe's files hold.
            text = _REPEAT_KEY.sub(r'"\1"', json.dumps(document, indent=indent))
            (folder / file_name).write_text(text, "utf-8")
        return folder


# A repeated entry's stand-in key, "name" + this + its index, which ``write`` renames back.
_REPEAT_MARK = "\x00repeat"
_REPEAT_KEY = re.compile(r'"([^"]*)\\u0000repeat\d+"')


def _with_repeats(entries: dict[str, Any], repeats: list[tuple[str, Any]]) -> dict[str, Any]:
    """``entries``, then ``repeats`` under stand-in keys (a JSON object cannot repeat a key)."""
    result = dict(entries)
    for index, (name, value) in enumerate(repeats):
        result[f"{name}{_REPEAT_MARK}{index}"] = value
    return result


def write_dump_root(root: Path, ranks: Mapping[tuple[int, int], RankDump]) -> Path:
    """``root/step<S>/rank<R>`` for each (step, rank)."""
    for (step, rank), dump in ranks.items():
        dump.write(root / f"step{step}" / f"rank{rank}")
    return root


def tiny_model(loss: float = 1.0) -> RankDump:
    """A module with a child module and APIs, forward and backward, and a parameter gradient.

    ``loss`` sets the output statistics of the last API, so two dumps can differ.
    """
    dump = RankDump()
    dump.add("Module.net.Net.forward.0", None, stack=[frame("train.py", 10, "step")])
    dump.add("Module.net.fc.Linear.forward.0", "Module.net.Net.forward.0")
    dump.add("Functional.linear.0.forward", "Module.net.fc.Linear.forward.0")
    dump.add("Torch.relu.0.forward", "Module.net.Net.forward.0")
    dump.add("Torch.sum.0.forward", None, data=record(output=[tensor(loss)]))
    dump.add("Module.net.Net.backward.0", None)
    dump.add("Module.net.fc.Linear.backward.0", "Module.net.Net.backward.0")
    dump.add("Functional.linear.0.backward", "Module.net.fc.Linear.backward.0")
    dump.grad("Module.net.fc.Linear.parameters_grad.0")
    return dump


def build(folder: Path) -> Graph:
    """Discover ``folder`` (one rank) and build its graph, as the pipeline does."""
    layout = discover(folder)
    assert len(layout.ranks) == 1, layout.ranks
    return build_graph(layout.ranks[0])


def child_names(node: Node) -> list[str]:
    return [child.name for child in node.children]


def parent_name(graph: Graph, name: str) -> str | None:
    parent = graph.nodes[name].parent
    return parent.name if parent is not None else None


USER_FILE = "keep.txt"


def output_folder(parent: Path) -> Path:
    """An output folder already holding a file of the user's, which a build must not touch."""
    out = parent / "out"
    out.mkdir()
    (out / USER_FILE).write_text("not graphboard's")
    return out


def assert_nothing_written(out: Path) -> None:
    """No .vis.db, temp or part file left behind, and the user's file still there."""
    assert sorted(entry.name for entry in out.iterdir()) == [USER_FILE]
