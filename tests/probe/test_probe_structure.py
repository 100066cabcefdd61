"""A one-step dump of TinyNet, read back by graphboard: hierarchy, counters, records, format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from probe_models import build, dump_one_step, load

from graphboard.dump.records import Role
from graphboard.graph.model import Graph, Node


@pytest.fixture(scope="module")
def dump_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mix")
    dump_one_step(root)
    return root


@pytest.fixture(scope="module")
def graph(dump_root: Path) -> Graph:
    return build(dump_root)


def children(node: Node) -> list[str]:
    return [child.name for child in node.children]


def test_files_are_where_msprobe_puts_them(dump_root: Path) -> None:
    rank_dir = dump_root / "step0" / "rank0"
    assert sorted(path.name for path in rank_dir.iterdir()) == [
        "construct.json",
        "dump.json",
        "stack.json",
    ]
    text = (rank_dir / "dump.json").read_text()
    header = '{\n "task": "statistics",\n "level": "mix",\n "framework": "pytorch",\n "dump_data_dir": null,\n'
    assert text.startswith(header + ' "data": {')
    assert not text.endswith("\n")  # json.dump(indent=1), exactly as msprobe writes


def test_forward_hierarchy(graph: Graph) -> None:
    top = children(graph.root)
    assert top[:2] == [
        "Module.stem.Sequential.forward.0",
        "Module.blocks.0.ResidualBlock.forward.0",
    ]
    nodes = graph.nodes
    assert children(nodes["Module.stem.Sequential.forward.0"]) == [
        "Module.stem.0.Conv2d.forward.0",
        "Module.stem.1.BatchNorm2d.forward.0",
        "Module.stem.2.ReLU.forward.0",
    ]
    # mix level: APIs are children of the module that called them
    assert children(nodes["Module.stem.0.Conv2d.forward.0"]) == ["Functional.conv2d.0.forward"]
    assert children(nodes["Module.stem.1.BatchNorm2d.forward.0"]) == [
        "Tensor.add_.0.forward",  # num_batches_tracked += 1
        "Functional.batch_norm.0.forward",
    ]
    # the block's ReLU module is called twice; per-module and per-API counters
    assert children(nodes["Module.blocks.0.ResidualBlock.forward.0"]) == [
        "Module.blocks.0.conv1.Conv2d.forward.0",
        "Module.blocks.0.bn1.BatchNorm2d.forward.0",
        "Module.blocks.0.relu.ReLU.forward.0",
        "Module.blocks.0.conv2.Conv2d.forward.0",
        "Tensor.__add__.0.forward",
        "Module.blocks.0.relu.ReLU.forward.1",
    ]
    assert children(nodes["Module.blocks.0.relu.ReLU.forward.0"]) == ["Functional.relu.1.forward"]
    assert children(nodes["Module.blocks.0.relu.ReLU.forward.1"]) == ["Functional.relu.2.forward"]
    assert nodes["Torch.flatten.0.forward"].parent is not None
    assert nodes["Torch.flatten.0.forward"].parent.name.startswith("Apis_Between_Modules")


def test_backward_mirrors_forward_despite_inplace_relu(graph: Graph) -> None:
    nodes = graph.nodes
    # msprobe loses the stem's BatchNorm backward behind ReLU(inplace=True); we must not.
    assert children(nodes["Module.stem.Sequential.backward.0"]) == [
        "Module.stem.2.ReLU.backward.0",
        "Module.stem.1.BatchNorm2d.backward.0",
        "Module.stem.0.Conv2d.backward.0",
    ]
    assert nodes["Module.stem.Sequential.backward.0"].parent is graph.root
    assert children(nodes["Module.stem.2.ReLU.backward.0"]) == ["Functional.relu.0.backward"]
    block = children(nodes["Module.blocks.0.ResidualBlock.backward.0"])
    assert block[:3] == [
        "Module.blocks.0.relu.ReLU.backward.1",
        "Tensor.__add__.0.backward",
        "Module.blocks.0.conv2.Conv2d.backward.0",
    ]
    assert "Module.blocks.0.relu.ReLU.backward.0" in block
    assert children(nodes["Module.blocks.0.relu.ReLU.backward.1"]) == ["Functional.relu.2.backward"]


def test_parameters_grad_in_dump_only_and_attached_to_backward(
    dump_root: Path, graph: Graph
) -> None:
    rank_dir = dump_root / "step0" / "rank0"
    construct = load(rank_dir, "construct.json")
    data = load(rank_dir, "dump.json")["data"]
    grads = [name for name in data if ".parameters_grad." in name]
    assert "Module.head.0.Linear.parameters_grad.0" in grads
    assert not any(".parameters_grad" in name for name in construct)
    assert sorted(data["Module.head.0.Linear.parameters_grad.0"]) == ["bias", "weight"]
    owner = graph.nodes["Module.head.0.Linear.parameters_grad.0"].parent
    assert owner is not None and owner.name == "Module.head.0.Linear.backward.0"
    assert not graph.rescued_grads and not graph.orphans


def test_records_have_msprobe_sections(dump_root: Path, graph: Graph) -> None:
    data = load(dump_root / "step0" / "rank0", "dump.json")["data"]
    linear = data["Module.head.0.Linear.forward.0"]
    assert list(linear) == ["input_args", "input_kwargs", "output", "parameters"]
    assert list(linear["parameters"]) == ["weight", "bias"]
    assert list(data["Module.head.0.Linear.backward.0"]) == ["input", "output"]
    leaf = linear["parameters"]["weight"]
    assert list(leaf) == ["type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad"]
    assert (
        leaf["type"] == "torch.Tensor"
        and leaf["dtype"] == "torch.float32"
        and leaf["shape"] == [8, 4]
    )
    # conv2d(input, weight, None, stride, padding, dilation, groups): None is null, ints are leaves
    conv = data["Functional.conv2d.0.forward"]["input_args"]
    assert conv[2] is None and conv[3] == [{"type": "int", "value": 1}, {"type": "int", "value": 1}]
    # the stem's input needs no gradient: its backward has no input gradients, as in msprobe
    assert data["Module.stem.Sequential.backward.0"]["output"] == []
    params = graph.nodes["Module.head.0.Linear.forward.0"].params
    assert params is not None
    assert [param.key for param in params if param.role is Role.PARAMETERS] == [
        "parameters.weight",
        "parameters.bias",
    ]


def test_integer_tensors_have_no_mean_or_norm(dump_root: Path) -> None:
    data = load(dump_root / "step0" / "rank0", "dump.json")["data"]
    labels = data["Functional.cross_entropy.0.forward"]["input_args"][1]
    assert labels["dtype"] == "torch.int64" and labels["Mean"] is None and labels["Norm"] is None
    assert (labels["Max"], labels["Min"]) == (2, 0)
    counter = data["Tensor.add_.0.forward"]["input_args"][0]  # 0-d: all four are the value
    assert counter["shape"] == [] and counter["Max"] == counter["Mean"] == counter["Norm"] == 0
    # inputs are recorded before the call, so an inplace op shows what it was given
    assert data["Tensor.add_.0.forward"]["output"][0]["Max"] == 1


def test_optimizer_scope(dump_root: Path, graph: Graph) -> None:
    construct = load(dump_root / "step0" / "rank0", "construct.json")
    assert construct["optimizer"] is None
    updates = [name for name, parent in construct.items() if parent == "optimizer"]
    assert "Tensor.add_.2.forward" in updates
    assert children(graph.nodes["optimizer"]) == updates


def test_stack_json_grouped_format(dump_root: Path) -> None:
    stacks = load(dump_root / "step0" / "rank0", "stack.json")
    assert list(stacks) == [str(index) for index in range(len(stacks))]
    names, frames = stacks["0"]
    assert names == ["Module.stem.Sequential.forward.0"]
    first = frames[0]
    assert first.startswith("File ") and ", line " in first and ", in inner, \n " in first
    assert any(
        "probe_models.py" in frame and "in forward, \n x = self.stem(images)" in frame
        for frame in frames
    )
    assert not any("graphboard/probe" in frame for group in stacks.values() for frame in group[1])
    everything = [name for names, _ in stacks.values() for name in names]
    assert not any(name.endswith(".backward") or ".backward." in name for name in everything)
    assert json.dumps(stacks)  # plain JSON
