"""``GET /api/graphs/{graph}/heatmap``: the Trends view's numbers (graphboard.trends)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import ConfigDict, Field

from graphboard.graph.sides import Side
from graphboard.server import schemas
from graphboard.server.deps import GraphDb
from graphboard.server.errors import InvalidParameters
from graphboard.server.schemas import SideName
from graphboard.trends.heatmap import DIFFERENCE, Axis, HeatmapQuery, HeatmapRefused, heatmap
from graphboard.trends.modules import Pass
from graphboard.trends.values import Statistic

router = APIRouter(prefix="/api/graphs", tags=["trends"], responses=schemas.ERRORS)

MAX_DEPTH = 256


class HeatmapOut(schemas.ApiModel):
    # A NaN or infinite statistic (an overflow, a relative error against 0) is the worst
    # there is: it goes out as "NaN" / "Infinity" rather than as an empty cell.
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    rows: list[str | int] = Field(description="module names (rows=module) or ranks")
    cols: list[str | int] = Field(description="steps, ranks or passes")
    values: list[list[float | None]] = Field(description="values[row][col]; null: no number")
    nodes: list[list[str | None]] = Field(
        description="the node behind each cell (on the target side for side=diff), or null"
    )
    depth: int | None = Field(description="the module rows' depth in the tree (root 0)")
    depths: list[int] = Field(description="depths that hold module rows")
    step: int | None = Field(description="the step shown, when steps are not an axis")
    rank: int | None = Field(description="the rank shown, when ranks are not an axis")


DESCRIPTION = """One statistic over two of module, step, rank and pass, computed from the stored
rows (no rebuild). Shapes: `rows=module&cols=step` (one rank), `rows=module&cols=rank` (one
step), `rows=rank&cols=step` (one `module`), `rows=module&cols=pass` (one step and rank: the
precision map, forward / backward / parameters_grad). `step` and `rank` fix the dimension that
is not shown (default: the file's first); giving one that is an axis is refused.

**A module row** is a module node's name without its pass and call count:
`Module.decoder.layers.3.TransformerLayer.forward.0` is row
`Module.decoder.layers.3.TransformerLayer` on every rank and step. Rows are the forward calls
(backward ones in a backward-only dump) at `depth` in the tree (the root is depth 0), in
execution order. Without `depth`, **the model's layers**: the depth where one parent holds the
most modules of one class (`layers.0…N` of a GPT's TransformerBlock, ResNet's Bottlenecks),
the shallowest on a tie, judged on the first graph shown.

**A cell** is one node, named in `nodes`: for `excess`, `error` and `level` the module's worst call in
the pass (first on a tie), for a raw value its first call. `pass` (default forward) picks the
call a cell reads: a forward or backward call's outputs (a backward call's outputs are the
gradients of the module's inputs), or the parameter gradients (`parameters_grad`).

**Statistics**: `excess` (the Trends page's default for a compare that holds dtype-aware
verdicts), how many times its noise band graphboard's dtype-aware verdict found a node's own
difference, the largest in the node's subtree: at most 1 where every node is explained by its
dtypes and inputs, above 1 in the block where an error starts (where the viewer's first error
points), infinite where an error no number measures starts (an argument, a dtype); refused for
a file that holds none (msprobe's, or built before it). `error`, the worst relative error (MaxRelativeErr, MinRelativeErr,
MeanRelativeErr, NormRelativeErr) stored on the target's result rows, as a fraction; `level`,
the worst precision level in the node's subtree (0 pass, 1 warning, 2 error), with manual
matches applied; `norm`, `max`, `min`, `mean` of the node's result tensors, read from the
stored statistics (several tensors: the norm of all, the largest max, the smallest min, the
element-weighted mean) on `side` target or golden (or msprobe's words for them, NPU and Bench), or `diff`: target minus
golden, node by node by name. `excess`, `error` and `level` need a compare and side=target."""


@router.get(
    "/{graph:path}/heatmap",
    response_model=HeatmapOut,
    summary="One statistic over modules, steps, ranks or passes",
    description=DESCRIPTION,
)
def get_heatmap(
    db: GraphDb,
    rows: Annotated[Axis, Query(description="module | rank")],
    cols: Annotated[Axis, Query(description="step | rank | pass")],
    statistic: Annotated[
        Statistic, Query(description="excess | error | level | norm | max | min | mean")
    ],
    side: Annotated[
        SideName | Literal["diff"],
        Query(description="target, golden (NPU, Bench: msprobe's words) or diff (target - golden)"),
    ] = "target",
    depth: Annotated[
        int | None, Query(ge=0, le=MAX_DEPTH, description="module rows' depth; omit: layers")
    ] = None,
    pass_: Annotated[
        Pass | None, Query(alias="pass", description="forward | backward | parameters_grad")
    ] = None,
    step: Annotated[int | None, Query(ge=0)] = None,
    rank: Annotated[int | None, Query(ge=0)] = None,
    module: Annotated[
        str | None, Query(min_length=1, max_length=4096, description="rows=rank: the module")
    ] = None,
) -> HeatmapOut:
    data_source = side if side == DIFFERENCE else Side.parse(side).data_source
    query = HeatmapQuery(rows, cols, statistic, data_source, depth, pass_, step, rank, module)
    try:
        found = heatmap(db, query)
    except HeatmapRefused as refused:
        raise InvalidParameters(str(refused), code="invalid_heatmap") from None
    return HeatmapOut.model_validate(found, from_attributes=True)
