"""The parallel-merge flags: msprobe's rules, each broken one a named error, and the layouts
they describe (strategy, Megatron's rank groups, data-parallel replicas)."""

from __future__ import annotations

import pytest

from graphboard.merge.flags import ParallelFlags, ParallelFlagsError, parallel_options
from graphboard.merge.layout import (
    Strategy,
    generated_replicas,
    megatron_groups,
    pipeline_chains,
    resolve_groups,
    strategy_of,
)


def _build(**given: list[int] | list[str] | None) -> ParallelFlags:
    options = parallel_options(compare=False, **given)  # type: ignore[arg-type]
    assert options is not None and options.golden is None
    return options.target


def test_no_flag_is_no_merge() -> None:
    assert parallel_options(rank_size=None, tp=None, pp=None, compare=False) is None


def test_a_build_takes_one_value_each_and_a_compare_two() -> None:
    assert _build(rank_size=[8], tp=[2], pp=[2]) == ParallelFlags(8, 2, 2)
    options = parallel_options(rank_size=[2, 1], tp=[2, 1], pp=[1, 1], compare=True)
    assert options is not None
    assert (options.target, options.golden) == (ParallelFlags(2, 2, 1), ParallelFlags(1, 1, 1))
    with pytest.raises(
        ParallelFlagsError, match=r"^--tp takes 2 values for a compare \(target golden\), got 1: 2$"
    ):
        parallel_options(rank_size=[2, 2], tp=[2], pp=[1, 1], compare=True)
    with pytest.raises(
        ParallelFlagsError, match=r"^--rank_size takes 1 value for a build, got 2: 2 2$"
    ):
        _build(rank_size=[2, 2], tp=[2], pp=[1])


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"rank_size": [4], "tp": [2]},
            "parallel merge needs --rank_size, --tp and --pp together; --pp missing",
        ),
        (
            {"tp": [2], "pp": [1]},
            "parallel merge needs --rank_size, --tp and --pp together; --rank_size missing",
        ),
        (
            {"rank_size": [4], "tp": [8], "pp": [1]},
            "--tp 8 and --pp 1 must each be at most --rank_size 4",
        ),
        (
            {"rank_size": [12], "tp": [2], "pp": [4]},
            "--tp 2 x --pp 4 = 8 does not divide --rank_size 12: rank_size must be tp x pp x the data-parallel count",
        ),
        (
            {"rank_size": [6], "tp": [4], "pp": [1]},
            "--tp 4 x --pp 1 = 4 does not divide --rank_size 6",
        ),
        ({"rank_size": [4], "tp": [0], "pp": [1]}, "--tp must be whole numbers above 0, got 0"),
        (
            {"rank_size": [4], "tp": [4], "pp": [1], "vpp": [2]},
            "--vpp 2 needs a pipeline (--pp above 1)",
        ),
        (
            {"rank_size": [4], "tp": [4], "pp": [1], "order": ["tp-dp-pp"]},
            "--order 'tp-dp-pp' must name each of tp, cp, ep, dp and pp once",
        ),
        (
            {"rank_size": [4], "tp": [4], "pp": [1], "order": ["TP-cp-ep-dp-pp"]},
            "--order 'TP-cp-ep-dp-pp' must be lower-case names joined by '-'",
        ),
        (
            {"rank_size": [4], "tp": [4], "pp": [1], "order": ["tp-ep-cp-dp-pp"]},
            "--order 'tp-ep-cp-dp-pp': ep and dp must be next to each other",
        ),
        (
            {"rank_size": [4], "tp": [2], "pp": [1], "cp": [2]},
            "--cp 2: context-parallel (CP) layouts cannot be merged yet; graphboard merges tensor (--tp), pipeline (--pp, --vpp) and data parallel layouts (--cp must be 1)",
        ),
        (
            {"rank_size": [8], "tp": [2], "pp": [1], "ep": [4]},
            "--ep 4: expert-parallel (EP) layouts cannot be merged yet",
        ),
    ],
)
def test_a_layout_the_flags_cannot_describe_is_a_named_error(
    given: dict[str, list[int] | list[str]], message: str
) -> None:
    with pytest.raises(ParallelFlagsError) as raised:
        _build(**given)
    assert str(raised.value).startswith(message)


def test_a_compare_names_the_side_whose_flags_are_wrong() -> None:
    with pytest.raises(
        ParallelFlagsError, match=r"^golden: --tp 2 x --pp 2 = 4 does not divide --rank_size 2"
    ):
        parallel_options(rank_size=[2, 2], tp=[2, 2], pp=[1, 2], compare=True)
    with pytest.raises(ParallelFlagsError, match=r"^--vpp takes 2 values for a compare"):
        parallel_options(rank_size=[4, 4], tp=[1, 1], pp=[4, 4], vpp=[2], compare=True)


@pytest.mark.parametrize(
    ("flags", "strategy"),
    [
        (ParallelFlags(1, 1, 1), Strategy.NO_PARALLEL),
        (ParallelFlags(4, 4, 1), Strategy.TP),
        (ParallelFlags(4, 1, 4), Strategy.PP),
        (ParallelFlags(4, 1, 4, vpp=2), Strategy.VPP),
        (ParallelFlags(8, 2, 1), Strategy.TP),
        (ParallelFlags(8, 1, 2), Strategy.PP),
        (ParallelFlags(4, 2, 2), Strategy.TPPP),
        (ParallelFlags(8, 2, 2), Strategy.FULL),
    ],
)
def test_strategies_follow_msprobes_table(flags: ParallelFlags, strategy: Strategy) -> None:
    assert strategy_of(flags) is strategy


def test_megatron_groups_in_the_default_order_and_another() -> None:
    flags = ParallelFlags(8, 2, 2)  # dp 2
    assert megatron_groups(flags, "tp") == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert megatron_groups(flags, "pp") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert megatron_groups(flags, "dp") == [(0, 2), (1, 3), (4, 6), (5, 7)]
    pp_first = ParallelFlags(8, 2, 2, order="pp-tp-cp-ep-dp")
    assert megatron_groups(pp_first, "pp") == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert megatron_groups(pp_first, "tp") == [(0, 2), (1, 3), (4, 6), (5, 7)]


def test_replicas_have_their_main_rank_first_and_cover_every_rank() -> None:
    full = generated_replicas(ParallelFlags(8, 2, 2))
    assert [(replica.main_rank, replica.stages) for replica in full] == [
        (0, ((0, 4), (1, 5))),
        (2, ((2, 6), (3, 7))),
    ]
    assert full[1].tp_group == (2, 3) and full[1].ranks == (2, 6, 3, 7)
    assert [r.ranks for r in generated_replicas(ParallelFlags(4, 2, 1))] == [(0, 1), (2, 3)]
    assert [r.ranks for r in generated_replicas(ParallelFlags(4, 1, 2))] == [(0, 2), (1, 3)]
    assert [r.ranks for r in generated_replicas(ParallelFlags(1, 1, 1))] == [(0,)]


def test_pipeline_chains_follow_the_first_sends() -> None:
    assert pipeline_chains({0: 2, 2: 4, 4: 6, 1: 3, 3: 5, 5: 7}) == [(0, 2, 4, 6), (1, 3, 5, 7)]
    assert pipeline_chains({0: 1, 1: 2, 2: 3, 3: 2}) == [(0, 1, 2, 3)]  # last stage sends back
    assert pipeline_chains({0: 1, 1: 0}) == []  # two stages, each first sending to the other


def test_groups_that_do_not_fit_the_flags_fall_back_with_a_warning() -> None:
    flags = ParallelFlags(4, 2, 1)
    warnings: list[str] = []
    assert resolve_groups(flags, "tp", [(0, 1), (0, 1), (2, 3), (2, 3)], "target", warnings) == [
        (0, 1),
        (2, 3),
    ]
    assert warnings == []
    found = [(0, 1, 2, 3)] * 4  # a data-parallel all_reduce first, say
    assert resolve_groups(flags, "tp", found, "target", warnings) == [(0, 1), (2, 3)]
    assert warnings == [
        "target: the TP groups in the dumps (first all_reduce / reduce_scatter: [0, 1, 2, 3]) do"
        " not split 4 ranks into groups of --tp 2; using Megatron's tp-cp-ep-dp-pp order instead"
    ]
    warnings.clear()
    assert resolve_groups(flags, "tp", [None] * 4, "target", warnings) == [(0, 1), (2, 3)]
    assert warnings == []  # nothing found (an L0 dump): Megatron's, as msprobe, silently
