"""msprobe's rules judge msprobe's pairs (compare/msprobe_pairing.py): where a kind of
parameters lists the same names in another order on the two sides, msprobe pairs them by
position, and its precision_index is what that pairing gives.

The case that made it matter (issue 29's localisation benchmark, qwen2 under autocast against
fp32): a Linear with a bias records its parameter gradients in the order their hooks fire,
bias first in fp32 and weight first under autocast, and msprobe's own file has a shape error
on every q/k/v projection's ``parameters_grad`` node, where graphboard's msprobe rules had
none.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from compare_factories import node, scalar, tensor

from dumpmaker import RankDump, record, tiny_model
from dumpmaker import tensor as leaf
from graphboard.compare.dtype_aware import Verdict, judge_node
from graphboard.compare.engine import compare_pair
from graphboard.compare.msprobe_pairing import MSG_POSITION
from graphboard.compare.result import DataMode, Level
from graphboard.dump.records import Param, Role
from graphboard.pipeline import BuildOptions, run_build
from msprobe_runner import graph_visualize

GRADS = "Module.model.layers.0.self_attn.q_proj.Linear.parameters_grad.0"
STATS = (0.5, -0.5, 0.0, 3.0)


def _grad(key: str, shape: tuple[int, ...]) -> Param:
    param = tensor(key, STATS, shape=shape)
    param.role = Role.PARAMETERS_GRAD
    return param


def test_reordered_gradients_are_judged_as_msprobe_pairs_them() -> None:
    """Bias first in the target, weight first in the golden (either way round happens), every
    number equal: by name every row passes; msprobe sets bias against weight, whose shapes
    differ."""
    target = [_grad("bias", (64,)), _grad("weight", (64, 64))]
    golden = [_grad("weight", (64, 64)), _grad("bias", (64,))]
    comparison = compare_pair(node(GRADS, target), node(GRADS, golden), DataMode.SUMMARY)
    assert comparison is not None
    assert comparison.level is Level.ERROR  # msprobe's precision_index 1
    # the rows keep the pairing by name (their metrics say the gradients agree) ...
    assert [(row.target.key, row.golden.key) for row in comparison.rows] == [  # type: ignore[union-attr]
        ("bias", "bias"),
        ("weight", "weight"),
    ]
    assert all(row.metrics["Max diff"] == 0 for row in comparison.rows)
    # ... and each says which golden msprobe's rules set it against
    assert comparison.rows[0].messages == [MSG_POSITION.format("weight", "error: shapes differ")]
    # the dtype-aware rules read the pairs by name: nothing differs
    verdict = judge_node(GRADS, comparison.rows, DataMode.SUMMARY)
    assert verdict is not None and verdict.verdict is Verdict.PASS


def test_the_same_order_or_other_names_keep_the_pairing_by_name() -> None:
    same = [_grad("weight", (64, 64)), _grad("bias", (64,))]
    comparison = compare_pair(node(GRADS, same), node(GRADS, list(same)), DataMode.SUMMARY)
    assert comparison is not None and comparison.level is Level.PASS
    # a name on one side only is no reordering: the pairing by name and its fall-back stand
    target = [_grad("bias", (64,)), _grad("weight", (64, 64))]
    golden = [_grad("weight", (64, 64)), _grad("scale", (64,))]
    comparison = compare_pair(node(GRADS, target), node(GRADS, golden), DataMode.SUMMARY)
    assert comparison is not None
    assert [(row.target.key, row.golden.key) for row in comparison.rows] == [  # type: ignore[union-attr]
        ("bias", "scale"),
        ("weight", "weight"),
    ]


def test_reordered_keyword_arguments_are_judged_as_msprobe_pairs_them() -> None:
    target = [tensor("input.0"), scalar("input.alpha", 2), scalar("input.beta", 1)]
    golden = [tensor("input.0"), scalar("input.beta", 1), scalar("input.alpha", 2)]
    target.append(tensor("output.0"))
    golden.append(tensor("output.0"))
    name = "Torch.add.0.forward"
    comparison = compare_pair(node(name, target), node(name, golden), DataMode.SUMMARY)
    assert comparison is not None and comparison.level is Level.ERROR  # 2 against 1
    verdict = judge_node(name, comparison.rows, DataMode.SUMMARY)
    assert verdict is not None and verdict.verdict is Verdict.PASS  # by name they agree


def _dumps(tmp_path: Path) -> tuple[Path, Path]:
    """tiny_model's two sides: the Linear's gradients weight first in the target, bias first
    in the golden (as autocast against fp32 records them), and an API whose keyword
    arguments come in another order."""
    sides = {}
    for side, grads, kwargs in (
        ("t", ("weight", "bias"), {"beta": 1, "alpha": 2}),
        ("g", ("bias", "weight"), {"alpha": 2, "beta": 1}),
    ):
        dump: RankDump = tiny_model()
        shapes = {"weight": (4, 3), "bias": (4,)}
        dump.grad(
            "Module.net.fc.Linear.parameters_grad.0",
            {key: [leaf(0.5, shape=shapes[key])] for key in grads},
        )
        dump.data["Torch.relu.0.forward"] = record(
            kwargs={key: {"type": "int", "value": value} for key, value in kwargs.items()}
        )
        sides[side] = dump.write(tmp_path / side / "step0" / "rank0")
    return sides["t"], sides["g"]


def _precision(path: Path) -> dict[str, object]:
    with sqlite3.connect(path) as conn:
        return dict(
            conn.execute(
                "SELECT node_name, precision_index FROM tb_nodes WHERE data_source = 'NPU'"
            ).fetchall()
        )


def test_precision_agrees_with_msprobes_own_file_on_reordered_parameters(tmp_path: Path) -> None:
    target, golden = _dumps(tmp_path)
    theirs = _precision(
        graph_visualize(tmp_path / "msprobe", "-tp", str(target), "-gp", str(golden))
    )
    built = run_build(
        BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out", workers=1)
    )
    ours = _precision(built.path)
    assert ours == theirs
    assert theirs["Module.net.fc.Linear.parameters_grad.0"] == 1
    assert theirs["Torch.relu.0.forward"] == 1
