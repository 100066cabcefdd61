"""What a finished build's verdict says: the models of ``GET /api/jobs/{id}/verdict`` and of
``graphboard verdict --json``, one JSON for both (the server's API shows them as they are)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from graphboard.graph.sides import spoken

LevelName = Literal["pass", "warning", "error"]
# A side as answers spell it. Code holds a graph's side as its key into msprobe's tables
# (tb_nodes.data_source: NPU/Bench); the model turns that into our word, so no route spells the
# mapping again. Any other value (a file whose data_source is neither) is shown as it is.
SideWord = Annotated[Literal["target", "golden"] | str, BeforeValidator(spoken)]


class VerdictModel(BaseModel):
    """As the server's API models: an unknown field is refused."""

    model_config = ConfigDict(extra="forbid")


class CountsOut(VerdictModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pass_: int = Field(alias="pass", serialization_alias="pass")
    warning: int
    error: int
    unmatched: int


class OverflowOut(VerdictModel):
    medium: int
    high: int
    critical: int


class WorstMetricOut(VerdictModel):
    """The worst parameter row of a node: the most severe result, then the largest
    error-like metric."""

    parameter: str = Field(description="input.0, output.0 ...")
    result: str | None = Field(description="the row's verdict: pass, warning, error")
    metric: str | None = Field(description="e.g. MaxRelativeErr; null when no metric is numeric")
    value: float | None
    shown: str | None = Field(description="the metric as the file stores it (e.g. '53.2%')")
    message: str | None = Field(description="the row's first message, e.g. why it is an error")


class FirstErrorOut(VerdictModel):
    name: str
    side: SideWord
    step: int
    rank: int
    level: LevelName = Field(description="error, or warning when no node introduces an error")
    precision_index: float | None
    worst_metric: WorstMetricOut | None = Field(
        description="the node's largest error-like metric (relative errors first)"
    )


class DiagnosisSummaryOut(VerdictModel):
    """Where inf/NaN was born, the first non-deterministic op, or the first error."""

    kind: str = Field(description="overflow, nondeterminism, first_error or none")
    found: bool
    summary: str
    step: int | None
    rank: int | None
    node: str | None
    node_class: str | None = Field(description="weight, input, output, nondeterministic ...")
    advice: str | None


class VerdictOut(VerdictModel):
    job_id: str | None = Field(description="the job's id; null for a file judged on its own")
    graph: str
    graph_type: str
    data_mode: str | None
    steps: list[int]
    ranks: list[int]
    counts: CountsOut = Field(description="nodes per verdict, summed over the target's graphs")
    overflow: OverflowOut = Field(description="nodes per overflow level, target side")
    first_error: FirstErrorOut | None
    url: str = Field(description="viewer URL (relative to the server) opening the first error")
    diagnosis: DiagnosisSummaryOut | None = Field(
        default=None,
        description="graphboard diagnose's answer (GET /api/graphs/{graph}/diagnosis in full)",
    )


class RuledVerdictOut(VerdictOut):
    """A verdict under a rule set other than msprobe's (``rules=dtype-aware``); msprobe's
    verdict keeps its fields exactly."""

    rules: str = Field(description="the rule set of the counts and the first error")
    not_judged: int = Field(
        description="nodes the rule set cannot judge (dtype-aware in md5 mode: no numbers)"
    )
