"""Manual matching: pair and unpair nodes, history and undo, msprobe's .vis.config files."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Body
from fastapi.responses import JSONResponse

from graphboard import matching
from graphboard.compare.result import label_of_code
from graphboard.graph.model import TARGET_SIDE
from graphboard.server import schemas
from graphboard.server.deps import GraphDb, GraphFilePath, NodeName, Rank, SettingsDep, Step
from graphboard.server.downloads import attachment
from graphboard.server.errors import InvalidParameters
from graphboard.store.reader import FileConfig, overlay

router = APIRouter(prefix="/api/graphs", tags=["matches"], responses=schemas.MATCH_ERRORS)

MAX_CONFIG_ENTRIES = 200_000


def _outcome(outcome: matching.Outcome, config: FileConfig) -> schemas.MatchOut:
    return schemas.MatchOut(
        action_id=outcome.action_id or 0,
        pairs=[_pair(pair, config) for pair in outcome.pairs],
        skipped=[_skipped(item) for item in outcome.skipped],
    )


def _pair(pair: matching.ScoredPair, config: FileConfig) -> schemas.PairOut:
    level = label_of_code(pair.level)
    return schemas.PairOut(
        target=pair.target,
        golden=pair.golden,
        precision_index=pair.precision_index,
        level=cast(schemas.LevelName | None, level),
        color=config.color_of(TARGET_SIDE, pair.precision_index, True),
    )


def _skipped(item: matching.Skipped) -> schemas.SkippedOut:
    return schemas.SkippedOut(
        target=item.target, golden=item.golden, code=item.code, reason=item.reason
    )


@router.post("/{graph:path}/matches", response_model=schemas.MatchOut, summary="Match two nodes")
def add_match(
    request: schemas.MatchRequest, path: GraphFilePath, settings: SettingsDep, db: GraphDb
) -> schemas.MatchOut:
    """Pair a target node with a golden node, with their forward/backward twins
    and optionally their descendants (by short name and call order), scored by the builder's
    engine. Saved in graphboard's own tables inside the file; undo with ``/matches/undo``."""
    outcome = matching.pair(
        "match",
        path,
        settings,
        request.step,
        request.rank,
        request.target,
        request.golden,
        descendants=request.descendants,
        twins=request.twins,
    )
    return _outcome(outcome, db.config())


@router.delete(
    "/{graph:path}/matches", response_model=schemas.MatchOut, summary="Unmatch two nodes"
)
def remove_match(
    path: GraphFilePath,
    settings: SettingsDep,
    db: GraphDb,
    step: Step,
    rank: Rank,
    target: NodeName,
    golden: NodeName,
    descendants: bool = False,
    twins: bool = True,
) -> schemas.MatchOut:
    """Unpair a target node from its golden counterpart (and their twins, and optionally every
    matched descendant); their precision returns to unscored."""
    outcome = matching.pair(
        "unmatch", path, settings, step, rank, target, golden, descendants=descendants, twins=twins
    )
    return _outcome(outcome, db.config())


@router.get("/{graph:path}/matches", response_model=schemas.ManualPairsOut, summary="Manual pairs")
def manual_pairs(db: GraphDb, step: Step, rank: Rank) -> schemas.ManualPairsOut:
    return schemas.ManualPairsOut(
        pairs=[
            schemas.ManualPairOut(
                target=pair.target,
                golden=pair.golden,
                precision_index=pair.precision_index,
                level=pair.level,  # type: ignore[arg-type]
            )
            for pair in overlay.manual_pairs(db, step, rank)
        ]
    )


@router.get(
    "/{graph:path}/matches/history", response_model=schemas.HistoryOut, summary="Match history"
)
def history(db: GraphDb, step: Step, rank: Rank) -> schemas.HistoryOut:
    return schemas.HistoryOut(
        actions=[
            schemas.ActionOut.model_validate(action, from_attributes=True)
            for action in overlay.match_history(db, step, rank)
        ]
    )


@router.post("/{graph:path}/matches/undo", response_model=schemas.UndoOut, summary="Undo")
def undo(path: GraphFilePath, settings: SettingsDep, step: Step, rank: Rank) -> schemas.UndoOut:
    """Undo the latest match, unmatch or import of this step and rank."""
    undone, restored = matching.undo(path, settings, step, rank)
    return schemas.UndoOut(
        undone=schemas.ActionOut.model_validate(undone, from_attributes=True),
        restored_nodes=restored,
    )


@router.get(
    "/{graph:path}/matches/vis-config",
    summary="Export manual pairs as msprobe's .vis.config",
    response_class=JSONResponse,
    responses={
        200: {
            "content": {
                "application/json": {"example": {"Module.a.forward.0": "Module.b.forward.0"}}
            }
        }
    },
)
def export_config(db: GraphDb, path: GraphFilePath, step: Step, rank: Rank) -> JSONResponse:
    """``{target name: golden name}`` of the pairs users made, as tb_graph_ascend saves them."""
    pairs = {pair.target: pair.golden for pair in overlay.manual_pairs(db, step, rank)}
    stem = path.name.removesuffix(".vis.db")
    return JSONResponse(
        pairs,
        headers={"Content-Disposition": attachment(f"{stem}_{step}_{rank}.vis.config")},
    )


@router.post(
    "/{graph:path}/matches/vis-config",
    response_model=schemas.ConfigImportOut,
    summary="Apply an msprobe .vis.config",
)
def import_config(
    path: GraphFilePath,
    settings: SettingsDep,
    db: GraphDb,
    step: Step,
    rank: Rank,
    config: Annotated[dict[str, str], Body(description="{target name: golden name}")],
    descendants: bool = False,
    twins: bool = False,
) -> schemas.ConfigImportOut:
    """Match every entry (as msprobe does: without twins or descendants unless asked); the
    entries that cannot be matched are listed with the reason."""
    if len(config) > MAX_CONFIG_ENTRIES:
        raise InvalidParameters(
            f"a .vis.config of at most {MAX_CONFIG_ENTRIES} entries", code="too_large"
        )
    outcome = matching.import_config(
        path, settings, step, rank, config, descendants=descendants, twins=twins
    )
    config_of_file = db.config()
    return schemas.ConfigImportOut(
        action_id=outcome.action_id,
        total=len(config),
        matched=sum(1 for pair in outcome.pairs if pair.target in config),
        pairs=[_pair(pair, config_of_file) for pair in outcome.pairs],
        failed=[_skipped(item) for item in outcome.skipped],
    )
