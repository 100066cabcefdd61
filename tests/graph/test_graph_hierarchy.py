"""The module hierarchy built from hand-made dumps: parents and order from construct.json,
backward repairs, recompute, API groups, parameter gradients, micro steps, node types,
orphans and cycles (reference-builder.md §2, plus graphboard's documented differences)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from dumpmaker import (
    RankDump,
    build,
    child_names,
    fixture_path,
    frame,
    parent_name,
    tensor,
    tiny_model,
)
from graphboard.dump.layout import discover
from graphboard.graph.builder import NO_FORWARD_STACK, build_graph
from graphboard.graph.model import ROOT_NAME, Graph, NodeType, node_type_of

CHECKPOINT = frame("site-packages/torch/utils/checkpoint.py", 1611, "recompute_fn")
CALL = frame("model.py", 20, "forward", "out = self.mlp(x)")


def _graph(tmp_path: Path, dump: RankDump) -> Graph:
    return build(dump.write(tmp_path / "rank0"))


def _tree(graph: Graph) -> list[str]:
    """Every node as an indented line, in execution (pre-)order."""
    return ["  " * len(node.ancestors()) + node.name for node in graph.walk()]


# --- parents and order ------------------------------------------------------------------------


def test_parents_and_child_order_come_from_construct_json(tmp_path: Path) -> None:
    graph = _graph(tmp_path, tiny_model())
    assert _tree(graph) == [
        "DefaultModel",
        "  Module.net.Net.forward.0",
        "    Module.net.fc.Linear.forward.0",
        "      Functional.linear.0.forward",
        "    Torch.relu.0.forward",
        "  Torch.sum.0.forward",
        "  Module.net.Net.backward.0",
        "    Module.net.fc.Linear.backward.0",
        "      Functional.linear.0.backward",
        "      Module.net.fc.Linear.parameters_grad.0",
    ]
    assert len(graph) == 10
    assert graph.orphans == [] and graph.rescued_grads == [] and graph.warnings == []


def test_a_parent_listed_after_its_children_is_created_on_first_mention(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Torch.mm.0.forward", "Module.b.B.forward.0")
    dump.add("Module.a.A.forward.0", None)
    dump.add("Torch.mm.1.forward", "Module.b.B.forward.0")
    dump.add("Module.b.B.forward.0", None)
    graph = _graph(tmp_path, dump)
    # B joins the root when its own entry comes, after A; its children keep their order
    assert child_names(graph.root) == ["Module.a.A.forward.0", "Module.b.B.forward.0"]
    assert child_names(graph.nodes["Module.b.B.forward.0"]) == [
        "Torch.mm.0.forward",
        "Torch.mm.1.forward",
    ]
    assert graph.orphans == []


def test_nodes_without_a_dump_record_have_no_parameters(tmp_path: Path) -> None:
    dump = RankDump().add("Module.a.A.forward.0", None, data=None)
    dump.add("Torch.mm.0.forward", "Module.a.A.forward.0")
    graph = _graph(tmp_path, dump)
    assert graph.nodes["Module.a.A.forward.0"].params is None
    assert graph.nodes["Torch.mm.0.forward"].params is not None


# --- backward parent repair -------------------------------------------------------------------


def test_a_backward_module_with_no_parent_goes_under_its_forward_parents_backward(
    tmp_path: Path,
) -> None:
    dump = RankDump()
    dump.add("Module.block.Block.forward.0", None)
    dump.add("Module.block.fc.Linear.forward.0", "Module.block.Block.forward.0")
    dump.add("Torch.mm.0.forward", "Module.block.fc.Linear.forward.0")
    dump.add("Module.block.Block.backward.0", None)
    dump.add("Module.block.fc.Linear.backward.0", None)  # the hook lost its parent
    dump.add("Torch.mm.0.backward", None)  # an API too
    graph = _graph(tmp_path, dump)
    assert (
        parent_name(graph, "Module.block.fc.Linear.backward.0") == "Module.block.Block.backward.0"
    )
    assert parent_name(graph, "Torch.mm.0.backward") == "Module.block.fc.Linear.backward.0"
    assert child_names(graph.root) == [
        "Module.block.Block.forward.0",
        "Module.block.Block.backward.0",
    ]


def test_a_backward_node_stays_at_the_root_when_its_forward_parent_has_no_backward(
    tmp_path: Path,
) -> None:
    dump = RankDump()
    dump.add("Module.block.Block.forward.0", None)
    dump.add("Module.block.fc.Linear.forward.0", "Module.block.Block.forward.0")
    dump.add("Module.block.fc.Linear.backward.0", None)  # no Block.backward.0 in the dump
    dump.add("Torch.flatten.0.forward", None)
    dump.add("Torch.flatten.0.backward", None)  # forward at the root: backward stays there
    graph = _graph(tmp_path, dump)
    assert parent_name(graph, "Module.block.fc.Linear.backward.0") == ROOT_NAME
    # both flatten calls stay at the root, where they form a group of root-level APIs
    assert parent_name(graph, "Torch.flatten.0.backward") == "Apis_Between_Modules.0"
    assert child_names(graph.root)[-1] == "Apis_Between_Modules.0"


def _inplace_stem() -> RankDump:
    """The stem of the convnet fixtures: Conv2d-BatchNorm2d-ReLU(inplace=True). In backward
    the inplace ReLU's hook leaves ReLU.backward.0 parentless and holding the stem's other
    backward records; BatchNorm2d has no backward node at all."""
    dump = RankDump()
    dump.add("Module.stem.Sequential.forward.0", None)
    dump.add("Module.stem.0.Conv2d.forward.0", "Module.stem.Sequential.forward.0")
    dump.add("Functional.conv2d.0.forward", "Module.stem.0.Conv2d.forward.0")
    dump.add("Module.stem.1.BatchNorm2d.forward.0", "Module.stem.Sequential.forward.0")
    dump.add("Functional.batch_norm.0.forward", "Module.stem.1.BatchNorm2d.forward.0")
    dump.add("Module.stem.2.ReLU.forward.0", "Module.stem.Sequential.forward.0")
    dump.add("Functional.relu.0.forward", "Module.stem.2.ReLU.forward.0")
    dump.add("Module.stem.Sequential.backward.0", None)
    dump.add("Functional.relu.0.backward", "Module.stem.2.ReLU.backward.0")
    dump.add("Module.stem.2.ReLU.backward.0", None)
    dump.add("Functional.batch_norm.0.backward", "Module.stem.2.ReLU.backward.0")
    dump.add("Module.stem.0.Conv2d.backward.0", "Module.stem.2.ReLU.backward.0")
    dump.add("Functional.conv2d.0.backward", "Module.stem.2.ReLU.backward.0")
    dump.grad("Module.stem.0.Conv2d.parameters_grad.0")
    dump.grad("Module.stem.1.BatchNorm2d.parameters_grad.0")
    return dump


def test_inplace_hooks_are_repaired_from_the_forward_twins(tmp_path: Path) -> None:
    graph = _graph(tmp_path, _inplace_stem())
    backward = graph.nodes["Module.stem.Sequential.backward.0"]
    assert backward.parent is graph.root
    # ReLU (null parent) and Conv2d (parent: a sibling's backward) both go under the stem
    assert child_names(backward) == [
        "Module.stem.2.ReLU.backward.0",
        "Module.stem.0.Conv2d.backward.0",
        "Module.stem.1.BatchNorm2d.parameters_grad.0",  # rescued: BatchNorm2d has no backward
    ]
    # APIs are not repaired: they stay where the hooks put them, as in msprobe
    assert child_names(graph.nodes["Module.stem.2.ReLU.backward.0"]) == [
        "Functional.relu.0.backward",
        "Functional.batch_norm.0.backward",
        "Functional.conv2d.0.backward",
    ]
    assert child_names(graph.nodes["Module.stem.0.Conv2d.backward.0"]) == [
        "Module.stem.0.Conv2d.parameters_grad.0"
    ]
    assert graph.rescued_grads == ["Module.stem.1.BatchNorm2d.parameters_grad.0"]
    assert any("1 parameters_grad record(s)" in warning for warning in graph.warnings)


def test_inplace_repair_sends_a_backward_to_the_root_when_its_forward_is_top_level(
    tmp_path: Path,
) -> None:
    dump = RankDump()
    dump.add("Module.head.Linear.forward.0", None)
    dump.add("Module.act.ReLU.forward.0", None)
    dump.add("Module.act.ReLU.backward.0", None)
    dump.add("Module.head.Linear.backward.0", "Module.act.ReLU.backward.0")
    graph = _graph(tmp_path, dump)
    assert parent_name(graph, "Module.head.Linear.backward.0") == ROOT_NAME


def test_a_backward_under_its_own_module_path_is_left_alone(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Module.a.A.forward.0", None)
    dump.add("Module.a.b.B.forward.0", "Module.x.X.forward.0")
    dump.add("Module.a.A.backward.0", None)
    dump.add("Module.a.b.B.backward.0", "Module.a.A.backward.0")  # same path: kept
    graph = _graph(tmp_path, dump)
    assert parent_name(graph, "Module.a.b.B.backward.0") == "Module.a.A.backward.0"


def test_the_convnet_fixture_stem_is_repaired_as_msprobe_does() -> None:
    graph = build_graph(discover(fixture_path("convnet-stats", "target")).ranks[0])
    assert child_names(graph.nodes["Module.stem.Sequential.backward.0"]) == [
        "Module.stem.2.ReLU.backward.0",
        "Module.stem.0.Conv2d.backward.0",
        "Module.stem.1.BatchNorm2d.parameters_grad.0",
    ]
    assert graph.rescued_grads == ["Module.stem.1.BatchNorm2d.parameters_grad.0"]
    assert "Module.stem.1.BatchNorm2d.backward.0" not in graph.nodes


# --- stacks -----------------------------------------------------------------------------------


def test_backward_nodes_take_the_stack_of_their_forward_twin(tmp_path: Path) -> None:
    call_0, call_1, own = (
        [frame("model.py", 5, "forward")],
        [frame("model.py", 6, "forward")],
        [frame("train.py", 9, "backward")],
    )
    dump = RankDump()
    dump.add("Module.act.ReLU.forward.0", None, stack=call_0)
    dump.add("Module.act.ReLU.forward.1", None, stack=call_1)
    dump.add("Torch.mm.0.forward", None, stack=call_0)
    dump.add("Torch.add.0.forward", None)  # a forward node with no stack
    dump.add("Module.act.ReLU.backward.1", None)
    dump.add("Module.act.ReLU.backward.0", None)
    dump.add("Torch.mm.0.backward", None)
    dump.add("Torch.add.0.backward", None)
    dump.add("Torch.mul.0.backward", None)  # its forward is nowhere in the dump
    dump.add("Torch.sub.0.backward", None, stack=own)  # its own stack wins
    graph = _graph(tmp_path, dump)
    stacks = {name: node.stack for name, node in graph.nodes.items()}
    assert stacks["Module.act.ReLU.backward.0"] == tuple(call_0)
    assert stacks["Module.act.ReLU.backward.1"] == tuple(call_1)  # msprobe would take call 0's
    assert stacks["Torch.mm.0.backward"] == tuple(call_0)
    assert stacks["Torch.add.0.backward"] is None  # the forward exists: empty, as in msprobe
    assert stacks["Torch.mul.0.backward"] == NO_FORWARD_STACK
    assert stacks["Torch.sub.0.backward"] == tuple(own)
    assert stacks["Torch.add.0.forward"] is None


# --- recompute --------------------------------------------------------------------------------


def _checkpointed(stack: list[str]) -> RankDump:
    """An MLP inside a checkpointed layer: its forward runs again (call 1) during backward,
    outside the layer's hooks, so construct.json puts the re-run at the root."""
    dump = RankDump()
    dump.add("Module.layers.0.Layer.forward.0", None)
    dump.add("Module.layers.0.mlp.MLP.forward.0", "Module.layers.0.Layer.forward.0", stack=[CALL])
    dump.add("Torch.mm.0.forward", "Module.layers.0.mlp.MLP.forward.0")
    dump.add("Module.layers.0.Layer.backward.0", None)
    dump.add("Module.layers.0.mlp.MLP.forward.1", None, stack=stack)
    dump.add("Torch.mm.1.forward", "Module.layers.0.mlp.MLP.forward.1")
    dump.add("Module.layers.0.mlp.MLP.backward.1", None)
    dump.add("Torch.mm.1.backward", "Module.layers.0.mlp.MLP.backward.1")
    return dump


@pytest.mark.parametrize(
    "stack",
    [
        [CHECKPOINT, CALL],
        # Megatron-style: a backward frame followed by torch/autograd/function.py
        [
            frame("megatron/core/tensor_parallel/random.py", 250, "backward"),
            frame("site-packages/torch/autograd/function.py", 307, "apply"),
            CALL,
        ],
    ],
    ids=["torch-checkpoint", "autograd-function"],
)
def test_recomputed_modules_go_back_under_their_owners_backward(
    tmp_path: Path, stack: list[str]
) -> None:
    graph = _graph(tmp_path, _checkpointed(stack))
    assert child_names(graph.root) == [
        "Module.layers.0.Layer.forward.0",
        "Module.layers.0.Layer.backward.0",
    ]
    assert child_names(graph.nodes["Module.layers.0.Layer.backward.0"]) == [
        "Module.layers.0.mlp.MLP.forward.1",
        "Module.layers.0.mlp.MLP.backward.1",
    ]
    assert child_names(graph.nodes["Module.layers.0.mlp.MLP.forward.1"]) == ["Torch.mm.1.forward"]


def test_root_modules_without_checkpoint_frames_stay_at_the_root(tmp_path: Path) -> None:
    graph = _graph(tmp_path, _checkpointed([CALL]))
    assert "Module.layers.0.mlp.MLP.forward.1" in child_names(graph.root)
    assert "Module.layers.0.mlp.MLP.backward.1" in child_names(graph.root)


def test_a_real_top_level_module_is_not_taken_for_a_recompute(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Module.mlp.MLP.forward.0", None, stack=[CHECKPOINT, CALL])  # Module.name.Class...
    dump.add("Module.mlp.MLP.backward.0", None)
    dump.add("Module.wrap.Wrap.forward.0", None)
    dump.add("Module.mlp.MLP.forward.1", "Module.wrap.Wrap.forward.0")
    graph = _graph(tmp_path, dump)
    assert child_names(graph.root) == [
        "Module.mlp.MLP.forward.0",
        "Module.mlp.MLP.backward.0",
        "Module.wrap.Wrap.forward.0",
    ]


# --- API groups -------------------------------------------------------------------------------


def test_runs_of_root_level_apis_are_grouped_and_single_ones_stay(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Torch.randn.0.forward", None)
    dump.add("Torch.randn.1.forward", None)
    dump.add("Module.a.A.forward.0", None)
    dump.add("Torch.mm.0.forward", "Module.a.A.forward.0")  # not at the root: never grouped
    dump.add("Torch.mm.1.forward", "Module.a.A.forward.0")
    dump.add("Tensor.view.0.forward", None)  # alone between two modules
    dump.add("Module.b.B.forward.0", None)
    dump.add("Functional.cross_entropy.0.forward", None)
    dump.add("Distributed.all_reduce.0.forward", None)
    dump.add("Triton.fused.0.forward", None)
    graph = _graph(tmp_path, dump)
    assert child_names(graph.root) == [
        "Apis_Between_Modules.0",
        "Module.a.A.forward.0",
        "Tensor.view.0.forward",
        "Module.b.B.forward.0",
        "Apis_Between_Modules.1",
    ]
    first, second = graph.nodes["Apis_Between_Modules.0"], graph.nodes["Apis_Between_Modules.1"]
    assert first.type is second.type is NodeType.API_COLLECTION
    assert child_names(first) == ["Torch.randn.0.forward", "Torch.randn.1.forward"]
    assert child_names(second) == [
        "Functional.cross_entropy.0.forward",
        "Distributed.all_reduce.0.forward",
        "Triton.fused.0.forward",
    ]
    assert all(node.parent is second for node in second.children)
    assert first.params is None


# --- parameters_grad --------------------------------------------------------------------------


def test_parameter_gradients_go_under_the_modules_last_backward_call(tmp_path: Path) -> None:
    dump = RankDump()
    for call in range(3):
        dump.add(f"Module.fc.Linear.forward.{call}", None)
    for call in (2, 0, 1):  # backward calls in any order: the highest number wins
        dump.add(f"Module.fc.Linear.backward.{call}", None)
    dump.grad("Module.fc.Linear.parameters_grad.0", {"weight": [tensor()]})
    dump.grad("Module.fc.Linear.parameters_grad")  # the old, unnumbered form
    graph = _graph(tmp_path, dump)
    assert child_names(graph.nodes["Module.fc.Linear.backward.2"]) == [
        "Module.fc.Linear.parameters_grad.0",
        "Module.fc.Linear.parameters_grad",
    ]
    grad = graph.nodes["Module.fc.Linear.parameters_grad.0"]
    assert grad.type is NodeType.MODULE and grad.stack is None
    assert grad.params is not None and [param.key for param in grad.params] == ["weight"]
    assert graph.rescued_grads == []


def test_a_gradient_whose_module_has_no_backward_is_kept_and_reported(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Module.outer.Outer.forward.0", None)
    dump.add("Module.outer.bn.BatchNorm2d.forward.0", "Module.outer.Outer.forward.0")
    dump.add("Module.outer.Outer.backward.0", None)
    dump.grad("Module.outer.bn.BatchNorm2d.parameters_grad.0")  # no bn backward node
    dump.grad("Module.gone.Gone.parameters_grad.0")  # no node of that module at all
    graph = _graph(tmp_path, dump)
    assert parent_name(graph, "Module.outer.bn.BatchNorm2d.parameters_grad.0") == (
        "Module.outer.Outer.backward.0"
    )
    assert parent_name(graph, "Module.gone.Gone.parameters_grad.0") == ROOT_NAME
    assert graph.rescued_grads == [
        "Module.outer.bn.BatchNorm2d.parameters_grad.0",
        "Module.gone.Gone.parameters_grad.0",
    ]
    assert any("2 parameters_grad record(s)" in warning for warning in graph.warnings)


def test_a_gradient_already_in_construct_json_is_not_added_twice(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Module.fc.Linear.backward.0", None)
    dump.add("Module.fc.Linear.parameters_grad.0", "Module.fc.Linear.backward.0")
    graph = _graph(tmp_path, dump)
    assert child_names(graph.nodes["Module.fc.Linear.backward.0"]) == [
        "Module.fc.Linear.parameters_grad.0"
    ]


# --- micro steps ------------------------------------------------------------------------------


def _two_passes(megatron: bool) -> RankDump:
    dump = RankDump(megatron_micro_steps=3 if megatron else None)
    for call in range(2):
        micro = call * 3 if megatron else None
        dump.add(f"Module.m.M.forward.{call}", None, micro_step=micro)
        dump.add(f"Torch.mm.{call}.forward", f"Module.m.M.forward.{call}", micro_step=micro)
        dump.add(f"Torch.sum.{call}.forward", None, micro_step=micro)
        dump.add(f"Tensor.mean.{call}.forward", None, micro_step=micro)
        dump.add(f"Module.m.M.backward.{call}", None, micro_step=micro)
        dump.add(f"Torch.mm.{call}.backward", f"Module.m.M.backward.{call}", micro_step=micro)
        dump.add(f"Torch.ones.{call}.forward", None, micro_step=micro)
    dump.grad("Module.m.M.parameters_grad.0")
    return dump


def _micro_steps(graph: Graph) -> dict[str, int | None]:
    return {node.name: node.micro_step for node in graph.walk()}


def test_each_forward_and_backward_pass_is_a_micro_step(tmp_path: Path) -> None:
    graph = _graph(tmp_path, _two_passes(megatron=False))
    assert graph.micro_steps == 2
    assert _micro_steps(graph) == {
        "DefaultModel": 0,
        "Module.m.M.forward.0": 0,
        "Torch.mm.0.forward": 0,
        "Apis_Between_Modules.0": 0,
        "Torch.sum.0.forward": 0,
        "Tensor.mean.0.forward": 0,
        "Module.m.M.backward.0": 0,
        "Torch.mm.0.backward": 0,
        "Torch.ones.0.forward": 0,  # APIs join the current micro step...
        "Module.m.M.forward.1": 1,  # ...which ends at the next forward module
        "Torch.mm.1.forward": 1,
        "Apis_Between_Modules.1": 1,
        "Torch.sum.1.forward": 1,
        "Tensor.mean.1.forward": 1,
        "Module.m.M.backward.1": 1,
        "Torch.mm.1.backward": 1,
        "Module.m.M.parameters_grad.0": 1,  # inherited from its parent
        "Torch.ones.1.forward": 1,
    }


def test_megatron_micro_steps_come_from_construct_json(tmp_path: Path) -> None:
    graph = _graph(tmp_path, _two_passes(megatron=True))
    assert graph.micro_steps == 4  # megatron_micro_step_number + 1
    steps = _micro_steps(graph)
    assert {name: step for name, step in steps.items() if name.endswith(".0.forward")} == {
        "Torch.mm.0.forward": 0,
        "Torch.sum.0.forward": 0,
        "Tensor.mean.0.forward": 0,
        "Torch.ones.0.forward": 0,
    }
    assert steps["Module.m.M.forward.1"] == steps["Torch.mm.1.backward"] == 3
    assert steps["Apis_Between_Modules.1"] == 3  # the first grouped API's
    assert steps["Module.m.M.parameters_grad.0"] == 3  # not in the map: its parent's


def test_a_single_pass_is_one_micro_step(tmp_path: Path) -> None:
    graph = _graph(tmp_path, tiny_model())
    assert graph.micro_steps == 1
    assert {node.micro_step for node in graph.walk()} == {0}


# --- node types -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Module.conv.Conv2d.forward.0", NodeType.MODULE),
        ("Cell.dense.Dense.forward.0", NodeType.MODULE),
        ("optimizer", NodeType.MODULE),
        ("clip_grad", NodeType.MODULE),
        ("DefaultModel", NodeType.MODULE),
        ("Something.else.0.forward", NodeType.MODULE),  # unknown prefixes are modules
        ("Apis_Between_Modules.3", NodeType.API_COLLECTION),
        *(
            (f"{prefix}.op.0.forward", NodeType.API)
            for prefix in (
                "Tensor",
                "Torch",
                "Functional",
                "NPU",
                "VF",
                "Distributed",
                "Aten",
                "Mint",
                "Primitive",
                "Jit",
                "MintFunctional",
                "MindSpeed",
                "Triton",  # an API for graphboard (msprobe makes it a module)
            )
        ),
        ("TensorX.op.0.forward", NodeType.MODULE),  # msprobe's unescaped dot would say API
    ],
)
def test_node_types(name: str, expected: NodeType) -> None:
    assert node_type_of(name) is expected


def test_built_nodes_carry_their_types(tmp_path: Path) -> None:
    dump = tiny_model()
    dump.add("Torch.sum.1.forward", None)
    dump.add("Torch.sum.2.forward", None)
    dump.add("optimizer", None, data=None)
    dump.add("Tensor.add_.0.forward", "optimizer")
    graph = _graph(tmp_path, dump)
    types = {name: node.type for name, node in graph.nodes.items()}
    assert types["Module.net.Net.forward.0"] is NodeType.MODULE
    assert types["Torch.sum.0.forward"] is NodeType.API
    assert types["Apis_Between_Modules.0"] is NodeType.API_COLLECTION
    assert types["optimizer"] is NodeType.MODULE
    assert types["Module.net.fc.Linear.parameters_grad.0"] is NodeType.MODULE


# --- orphans and cycles -----------------------------------------------------------------------


def test_nodes_whose_parent_chain_never_reaches_the_root_are_attached_and_counted(
    tmp_path: Path,
) -> None:
    dump = RankDump()
    dump.add("Module.a.A.forward.0", None)
    dump.add("Torch.mm.0.forward", "Module.ghost.Ghost.forward.0")  # never a child itself
    dump.add("Torch.mm.1.forward", "Module.ghost.Ghost.forward.0")
    graph = _graph(tmp_path, dump)
    assert child_names(graph.root) == ["Module.a.A.forward.0", "Module.ghost.Ghost.forward.0"]
    assert child_names(graph.nodes["Module.ghost.Ghost.forward.0"]) == [
        "Torch.mm.0.forward",
        "Torch.mm.1.forward",
    ]
    assert graph.orphans == ["Module.ghost.Ghost.forward.0"]
    assert graph.warnings == [
        f"{tmp_path / 'rank0'}: 1 node(s) whose parent chain never reaches the root attached"
        " under DefaultModel (msprobe drops them): Module.ghost.Ghost.forward.0"
    ]
    assert {node.name for node in graph.walk()} == set(graph.nodes)


def _build_within(rank: Path, seconds: float) -> Graph:
    """Build in a thread and fail (instead of hanging the suite) if it does not finish."""
    result: list[Graph] = []
    worker = threading.Thread(target=lambda: result.append(build(rank)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"building {rank} did not finish in {seconds} s"
    assert result, "the build failed"
    return result[0]


def test_a_cycle_in_construct_json_does_not_hang_and_is_reported(tmp_path: Path) -> None:
    dump = RankDump()
    dump.add("Module.a.A.forward.0", "Module.b.B.forward.0")
    dump.add("Module.b.B.forward.0", "Module.a.A.forward.0")
    dump.add("Module.c.C.forward.0", "Module.c.C.forward.0")  # its own parent
    dump.add("Module.d.D.forward.0", None)
    graph = _build_within(dump.write(tmp_path / "rank0"), 30)
    assert len(graph.orphans) == 2 and "Module.c.C.forward.0" in graph.orphans
    walked = [node.name for node in graph.walk()]
    assert sorted(walked) == sorted(graph.nodes) and len(walked) == len(set(walked))
    assert [node.name for node in graph.post_order()][-1] == ROOT_NAME
    assert any("parent chain never reaches the root" in warning for warning in graph.warnings)


def test_node_order_is_post_order_with_the_root_last(tmp_path: Path) -> None:
    graph = _graph(tmp_path, tiny_model())
    ordered = [node.name for node in sorted(graph.nodes.values(), key=lambda node: node.order)]
    assert ordered == [
        "Functional.linear.0.forward",
        "Module.net.fc.Linear.forward.0",
        "Torch.relu.0.forward",
        "Module.net.Net.forward.0",
        "Torch.sum.0.forward",
        "Functional.linear.0.backward",
        "Module.net.fc.Linear.parameters_grad.0",
        "Module.net.fc.Linear.backward.0",
        "Module.net.Net.backward.0",
        "DefaultModel",
    ]
