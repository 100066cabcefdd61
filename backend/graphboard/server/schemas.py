"""Request and response models of the HTTP API (what ``/docs`` shows)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import BaseModel, ConfigDict, Field

from graphboard.verdict.models import LevelName, SideWord

# Steps, ranks, cursors and micro steps are SQLite integers (64-bit): a larger number names
# nothing and overflows on its way into a query (a 500 and a dropped connection), so
# validation refuses it with a 422. One definition, for query parameters and bodies alike.
MAX_INDEX = 2**63 - 1
Index = Annotated[int, Ge(0), Le(MAX_INDEX)]

# A side as requests name it: target/golden, or msprobe's NPU/Bench as aliases (graph.sides).
SideName = Literal["target", "golden", "NPU", "Bench"]
SIDE_DESCRIPTION = "target (-tp) or golden (-gp); NPU and Bench, msprobe's words, also name them"
OverflowName = Literal["medium", "high", "critical"]
NodeTypeName = Literal["module", "api", "api_collection", "other"]


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- errors ----------------------------------------------------------------------------------


class ErrorBody(ApiModel):
    code: str = Field(description="machine-readable reason, e.g. not_found, already_matched")
    message: str = Field(description="what went wrong, for a person")
    details: Any = None


class ErrorResponse(ApiModel):
    error: ErrorBody


ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorResponse, "description": "unknown file, graph or node"},
    422: {"model": ErrorResponse, "description": "bad parameters, or a file that is not a .vis.db"},
}
MATCH_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    403: {"model": ErrorResponse, "description": "the file is read-only, or matching is off"},
    409: {
        "model": ErrorResponse,
        "description": "cannot (un)match: already matched, types differ, missing tensor file...",
    },
}


# --- files -----------------------------------------------------------------------------------


class GraphConfigOut(ApiModel):
    graph_type: Literal["build", "compare"] | str
    data_mode: str | None = Field(description="summary (statistics), md5, all (tensors), structure")
    micro_steps: int
    overflow_check: bool
    node_colors: dict[str, dict[str, Any]] | None = Field(
        description="msprobe's colour table: {hex: {value: [lo, hi] or [], description}}"
    )
    tool_tip: dict[str, Any] | None
    ranks: list[int]
    steps: list[int]


class GraphStatsOut(ApiModel):
    side: SideWord
    step: int
    rank: int
    node_count: int
    micro_steps: int
    matched: int | None
    unmatched: int | None
    pass_count: int | None
    warning_count: int | None
    error_count: int | None
    first_error: str | None = Field(description="first node where an error starts")


class GraphFileOut(ApiModel):
    id: str = Field(description="path under the data dir without .vis.db; use it in URLs")
    path: str
    source: Literal["graphboard", "msprobe"] | None
    size_bytes: int
    modified_at: datetime
    writable: bool = Field(description="manual matching can be saved into it")
    default_rules: Literal["msprobe", "dtype-aware"] | None = Field(
        default=None,
        description="the rule set a read that names none answers under: dtype-aware where "
        "the file holds those verdicts, msprobe's otherwise (msprobe's files, a build, md5 mode)",
    )
    config: GraphConfigOut | None
    graphs: list[GraphStatsOut]
    matched: int | None
    unmatched: int | None
    error: str | None = Field(default=None, description="why the file could not be read")


class GraphListOut(ApiModel):
    files: list[GraphFileOut]


# --- nodes -----------------------------------------------------------------------------------


class RollupOut(ApiModel):
    worst_level: LevelName | None
    worst_node: str | None = Field(description="first node at worst_level in the subtree")
    error_leaves: int
    warning_leaves: int
    unmatched_leaves: int
    overflow_leaves: int
    worst_overflow: OverflowName | None


class NodeOut(ApiModel):
    name: str
    parent: str | None
    type: int = Field(description="msprobe node_type: 0 module, 1 API, 9 API collection")
    type_name: NodeTypeName
    node_order: int = Field(description="msprobe's post-order position; the children cursor")
    exec_order: int = Field(description="pre-order position: a module before what runs in it")
    depth: int
    child_count: int
    micro_step: int
    precision_index: float | None
    level: LevelName | None
    color: str | None = Field(description="fill from the file's colour table; null: plain")
    overflow: OverflowName | str | None
    matched: bool | None = Field(description="null in a build")
    counterpart: str | None
    introduced: LevelName | None = Field(description="a divergence starts at this node")
    manual: bool = Field(description="(un)paired by a user")
    modified: bool = Field(description="re-matched in place by msprobe's viewer")
    rollup: RollupOut


class ChildrenPage(ApiModel):
    parent: NodeOut
    items: list[NodeOut]
    next_cursor: int | None = Field(description="pass as cursor for the next page")


# A statistic as a number; JSON has no NaN or infinities, so those are "nan", "inf", "-inf";
# null: no number (none recorded, text, or a boolean).
StatNumber = float | int | Literal["nan", "inf", "-inf"] | None


class ParamStats(ApiModel):
    """A parameter's statistics as numbers (server/param_stats.py), for charts and formatting."""

    max: StatNumber
    min: StatNumber
    mean: StatNumber
    norm: StatNumber


class RankStatsOut(ParamStats):
    """One rank's own statistics of a parameter a parallel merge merged."""

    rank: int


class ParamFields(ApiModel):
    name: str = Field(description="full parameter name as stored")
    fields: dict[str, Any] = Field(
        description="the parameter's own fields as stored: msprobe's display text, shown as text"
    )
    stats: ParamStats | None = Field(
        default=None,
        description='its Max, Min, Mean and Norm as numbers ("nan", "inf", "-inf" for those '
        "JSON cannot hold); null when the node's parameters do not include it",
    )
    ranks: list[RankStatsOut] | None = Field(
        default=None,
        description="a parallel merge's parameter: each rank's own statistics, in the order "
        "merged (the main rank first), beside the merged ``stats``; null when not merged",
    )


class ReferenceParamOut(ApiModel):
    """A noise reference's (-nr) parameter beside the target's and golden's
    (server/reference_rows.py)."""

    dtype: str | None
    shape: list[Any] | None
    stats: ParamStats
    d_target: StatNumber = Field(description="d of the target against the golden, as judged")
    d_reference: StatNumber = Field(description="d of the reference against the golden")
    band: StatNumber = Field(description="the largest d_target the measured noise explains")
    verdict: str | None = Field(description="the parameter's dtype-aware verdict")


class ParamRowOut(ApiModel):
    role: Literal["input", "output", "parameters", "parameters_grad"]
    key: str = Field(description="name under the node: input.0, output.0, parameters.weight")
    paired_by: Literal["name", "position"] | None = Field(
        description="how target and golden were paired; null when one side is missing"
    )
    target: ParamFields | None
    golden: ParamFields | None
    comparison: dict[str, Any] = Field(description="metrics the compare stored on the target")
    reference: ReferenceParamOut | None = Field(
        default=None, description="the noise reference's (-nr) parameter; null without one"
    )
    result: str | None
    messages: list[str]


class NodeSideOut(ApiModel):
    side: SideWord
    node: NodeOut
    stack: list[str]
    parallel_merge_info: list[str]
    matched_distributed: Any
    dump_data_dir: str | None


class NodeDetailOut(ApiModel):
    target: NodeSideOut | None = Field(description="the target (-tp) side of the pair")
    golden: NodeSideOut | None = Field(description="the golden (-gp) side of the pair")
    rows: list[ParamRowOut]
    reference_golden: str | None = Field(
        default=None,
        description="the golden node the noise reference's (-nr) node was matched to; null "
        "when the file or the node has no reference",
    )


class PathOut(ApiModel):
    node: NodeOut
    ancestors: list[NodeOut] = Field(description="root first, down to the parent")


class LocatedOut(ApiModel):
    node: NodeOut | None
    ancestors: list[NodeOut]


class SearchPage(ApiModel):
    items: list[NodeOut]
    next_cursor: int | None
    total: int


class FilterPage(ApiModel):
    items: list[NodeOut]
    next_cursor: int | None
    total: int
    counts: dict[str, int] = Field(description="matches per criterion")


class PeerOut(ApiModel):
    rank: int
    name: str | None
    kind: str | None
    stored_precision: str | None = Field(description="as msprobe recorded it in the link")
    verdict: str | None = Field(description="graphboard's check of the exchanged data")
    reason: str | None
    node: NodeOut | None = Field(description="the peer now; null when absent from the file")


class PeersOut(ApiModel):
    node: str
    communication: str | None
    peers: list[PeerOut]


# --- matching --------------------------------------------------------------------------------


class MatchRequest(ApiModel):
    step: Index
    rank: Index
    target: Annotated[str, Field(min_length=1, max_length=4096, description="the target's node")]
    golden: Annotated[str, Field(min_length=1, max_length=4096, description="the golden's node")]
    descendants: bool = Field(
        default=False, description="also pair children, by short name and call order, recursively"
    )
    twins: bool = Field(default=True, description="also pair the forward/backward twins")


class PairOut(ApiModel):
    target: str
    golden: str
    precision_index: float | None
    level: LevelName | None
    color: str | None


class SkippedOut(ApiModel):
    target: str
    golden: str | None
    code: str
    reason: str


class MatchOut(ApiModel):
    action_id: int
    pairs: list[PairOut]
    skipped: list[SkippedOut]


class ConfigImportOut(ApiModel):
    action_id: int | None
    total: int
    matched: int
    pairs: list[PairOut]
    failed: list[SkippedOut]


class ActionOut(ApiModel):
    id: int
    created_at: str
    kind: str
    step: int
    rank: int
    target: str | None
    golden: str | None
    options: dict[str, Any]
    pairs: list[list[str]]
    undone_at: str | None


class HistoryOut(ApiModel):
    actions: list[ActionOut]


class UndoOut(ApiModel):
    undone: ActionOut
    restored_nodes: int


class ManualPairOut(ApiModel):
    target: str
    golden: str
    precision_index: float | None
    level: LevelName | None


class ManualPairsOut(ApiModel):
    pairs: list[ManualPairOut]
