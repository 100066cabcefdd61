"""The origin rules on hand-made records (docs/diagnose.md): what is made on purpose and what
is an origin."""

from __future__ import annotations

import math

from graphboard.diagnose.origin import Op, find_origin
from graphboard.dump.records import Param, Role

FP32_MIN = -((2 - 2**-23) * 2.0**127)


def tensor(key: str, role: Role, high: float, low: float, dtype: str = "torch.float32") -> Param:
    return Param(key, role, "torch.Tensor", dtype, (4,), high, low, 0.0, 1.0, is_tensor=True)


def scalar(key: str, value: float) -> Param:
    return Param(key, Role.INPUT, "float", value=value)


def op(name: str, *params: Param) -> Op:
    return Op(name, list(params))


def test_a_mask_filled_with_minus_inf_and_added_to_scores_is_no_origin() -> None:
    ops = [
        op(
            "Tensor.masked_fill.0.forward",
            tensor("input.0", Role.INPUT, 1, -1),
            scalar("input.2", -math.inf),
            tensor("output.0", Role.OUTPUT, 1, -math.inf),
        ),
        op(
            "Tensor.__add__.0.forward",
            tensor("input.0", Role.INPUT, 1, -1),
            tensor("input.1", Role.INPUT, 0, -math.inf),
            tensor("output.0", Role.OUTPUT, 1, -math.inf),
        ),
        op(
            "Functional.softmax.0.forward",
            tensor("input.0", Role.INPUT, 1, -math.inf),
            tensor("output.0", Role.OUTPUT, 1, 0),
        ),
    ]
    assert find_origin(ops) is None


def test_adding_to_the_dtype_min_may_round_to_minus_inf() -> None:
    mask_sum = op(
        "Tensor.__add__.0.forward",
        tensor("input.0", Role.INPUT, 1, -5),
        tensor("input.1", Role.INPUT, 0, FP32_MIN),
        tensor("output.0", Role.OUTPUT, 1, -math.inf),
    )
    assert find_origin([mask_sum]) is None
    plus = op(
        "Tensor.__add__.1.forward",
        tensor("input.0", Role.INPUT, 1, -5),
        tensor("input.1", Role.INPUT, 0, FP32_MIN),
        tensor("output.0", Role.OUTPUT, math.inf, 0),
    )
    found = find_origin([plus])  # +inf is not what a negative limit rounds to
    assert found is not None and found.kind == "output"


def test_nan_is_never_by_design() -> None:
    masked = op(
        "Tensor.masked_fill.0.forward",
        tensor("input.0", Role.INPUT, 1, -1),
        scalar("input.2", -math.inf),
        tensor("output.0", Role.OUTPUT, 1, -math.inf),
    )
    all_masked = op(
        "Functional.softmax.0.forward",
        tensor("input.0", Role.INPUT, -math.inf, -math.inf),
        tensor("output.0", Role.OUTPUT, math.nan, math.nan),
    )
    found = find_origin([masked, all_masked])
    assert found is not None and (found.node, found.kind) == (
        "Functional.softmax.0.forward",
        "output",
    )
    assert found.by_design == ["Tensor.masked_fill.0.forward"]


def test_a_large_scalar_is_no_dtype_limit() -> None:
    scaled = op(
        "Tensor.__mul__.0.forward",
        tensor("input.0", Role.INPUT, 0.9, 0.5, "torch.float16"),
        scalar("input.1", 1e5),
        tensor("output.0", Role.OUTPUT, math.inf, 57568.0, "torch.float16"),
    )
    found = find_origin([scaled])
    assert found is not None and found.kind == "output"


def test_an_input_from_outside_the_dump_and_a_weight() -> None:
    outside = op(
        "Functional.layer_norm.0.forward",
        tensor("input.0", Role.INPUT, math.inf, -1),
        tensor("output.0", Role.OUTPUT, math.nan, math.nan),
    )
    found = find_origin([outside])
    assert found is not None and found.kind == "input"
    weight = tensor("parameters.weight", Role.PARAMETERS, math.inf, -1)
    linear = Op(
        "Functional.linear.0.forward",
        [
            tensor("input.0", Role.INPUT, 1, -1),
            tensor("input.1", Role.INPUT, math.inf, -1),
            tensor("output.0", Role.OUTPUT, math.inf, -1),
        ],
        resolve=lambda: ("Module.fc.Linear.forward.0", [weight]),
    )
    found = find_origin([linear])
    assert found is not None and found.kind == "weight"
    assert found.evidence[0].note == "parameters.weight of Module.fc.Linear.forward.0"


def test_a_receive_buffer_is_passed_over() -> None:
    receive = op(
        "Distributed.recv.0.forward",
        tensor("input.0", Role.INPUT, math.nan, math.nan),
        tensor("output.0", Role.OUTPUT, 1, -1),
    )
    assert find_origin([receive]) is None


def test_an_additive_mask_from_an_uncaptured_op_is_handed_on_purpose() -> None:
    """Zeros and -inf (Max exactly 0): a causal mask made by ops msprobe does not capture."""
    add = op(
        "Tensor.__add__.0.forward",
        tensor("input.0", Role.INPUT, 1, -1),
        tensor("input.1", Role.INPUT, 0.0, -math.inf),
        tensor("output.0", Role.OUTPUT, 1, -math.inf),
    )
    assert find_origin([add]) is None
    shifted = op(
        "Tensor.__add__.0.forward",
        tensor("input.0", Role.INPUT, 1, -1),
        tensor("input.1", Role.INPUT, 0.5, -math.inf),
        tensor("output.0", Role.OUTPUT, 1, -math.inf),
    )
    found = find_origin([shifted])  # not zeros and -inf: an input from outside the dump
    assert found is not None and found.kind == "input"
