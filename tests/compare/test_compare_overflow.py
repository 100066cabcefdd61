"""Overflow levels: critical, high, medium, the norm jump, and the ignore rules."""

from __future__ import annotations

import math

from compare_factories import tensor

from graphboard.overflow import CRITICAL, HIGH, MEDIUM, overflow_level

OK = (1.0, -1.0, 0.0, 2.0)
INF = (math.inf, -1.0, 0.0, math.inf)
NAN = (math.nan, math.nan, math.nan, math.nan)


def test_levels() -> None:
    assert (
        overflow_level("Torch.mul.0.forward", [tensor("input.0", OK), tensor("output.0", INF)])
        == CRITICAL
    )
    assert (
        overflow_level("Torch.mul.0.forward", [tensor("input.0", INF), tensor("output.0", NAN)])
        == HIGH
    )
    assert (
        overflow_level("Torch.mul.0.forward", [tensor("input.0", NAN), tensor("output.0", OK)])
        == MEDIUM
    )
    assert (
        overflow_level("Torch.mul.0.forward", [tensor("input.0", OK), tensor("output.0", OK)])
        is None
    )


def test_norm_is_not_an_anomaly_but_a_hundredfold_jump_is_high() -> None:
    only_norm = (1.0, -1.0, 0.0, math.inf)
    assert (
        overflow_level(
            "Torch.mul.0.forward", [tensor("input.0", OK), tensor("output.0", only_norm)]
        )
        == HIGH
    )
    jump = (1.0, -1.0, 0.0, 201.0)
    assert (
        overflow_level("Torch.mul.0.forward", [tensor("input.0", OK), tensor("output.0", jump)])
        == HIGH
    )
    small = (1.0, -1.0, 0.0, 199.0)
    assert (
        overflow_level("Torch.mul.0.forward", [tensor("input.0", OK), tensor("output.0", small)])
        is None
    )
    from_zero = (0.0, 0.0, 0.0, 0.0)
    assert (
        overflow_level(
            "Torch.mul.0.forward",
            [tensor("input.0", from_zero), tensor("output.0", (1.0, 0.0, 0.0, 101.0))],
        )
        == HIGH
    )


def test_parameters_are_not_inputs() -> None:
    assert (
        overflow_level(
            "Module.fc.Linear.forward.0",
            [tensor("input.0", OK), tensor("parameters.weight", INF), tensor("output.0", OK)],
        )
        is None
    )


def test_ignore_rules_for_buffers_that_hold_garbage() -> None:
    assert overflow_level("Torch.empty.0.forward", [tensor("output.0", NAN)]) is None
    assert (
        overflow_level("Torch.empty.0.forward", [tensor("output.1", NAN)]) == CRITICAL
    )  # only output[0] is expected
    assert (
        overflow_level(
            "Distributed.recv.0.forward", [tensor("input.0", NAN), tensor("output.0", OK)]
        )
        is None
    )
    assert (
        overflow_level(
            "Distributed.recv.0.forward", [tensor("input.tensor", NAN), tensor("output.0", OK)]
        )
        is None
    )
    assert (
        overflow_level(
            "Distributed.all_gather.0.forward", [tensor("input.0", NAN), tensor("output.0", OK)]
        )
        is None
    )
    assert (
        overflow_level(
            "Tensor.masked_fill_.0.forward", [tensor("input.0", INF), tensor("output.0", OK)]
        )
        is None
    )
    # the ignore covers that position only
    assert (
        overflow_level(
            "Distributed.recv.0.forward", [tensor("input.0", OK), tensor("output.0", NAN)]
        )
        == CRITICAL
    )
