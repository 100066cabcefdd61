"""Finishing a build: the tasks' parts merged into one file, communication ops linked across
ranks, config and meta written, msprobe's indexes built, the file renamed into place."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from graphboard import __version__
from graphboard.compare.colors import node_colors, tool_tips
from graphboard.compare.result import DataMode
from graphboard.distributed import link_ranks
from graphboard.distributed.peer_verdicts import META_KEY, judge_with_peers
from graphboard.errors import CompareError
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.pipeline import output
from graphboard.pipeline.options import BuildResult, TaskResult
from graphboard.pipeline.plan import BuildPlan
from graphboard.progress import ProgressCallback, Stopwatch, silent
from graphboard.store import schema, writer

SCHEMA_NAME = "graphboard.vis.db"


def finish_build(
    plan: BuildPlan,
    results: list[TaskResult],
    parts: list[Path],
    progress: ProgressCallback = silent,
) -> BuildResult:
    """Merge the tasks' part files (in task order) into one .vis.db, link communication ops
    across ranks, index it and rename it into place. The parts are consumed; on failure they
    and the temporary file are removed, so there is a complete file or none."""
    options = plan.options
    name = plan.name
    conn = None
    temp: Path | None = None
    try:
        output.ensure_output_dir(options)
        temp = output.temp_path_for(options.output_dir / name)
        mode = _common_mode(results)
        clock = Stopwatch()
        conn = _merged(parts, temp)
        clock.lap("merge parts")
        sides = (TARGET_SIDE, GOLDEN_SIDE) if options.compare else (TARGET_SIDE,)
        # merged graphs are replicas, not ranks: no cross-rank links, as msprobe
        comm_nodes = (
            [node for result in results for node in result.comm_nodes]
            if options.parallel is None
            else []
        )
        link_summary = link_ranks(
            conn,
            comm_nodes,
            options.overflow_check,
            dumped=[(side, result.step, result.rank) for result in results for side in sides],
        )
        clock.lap("link ranks")
        peers: dict[str, Any] = {}
        if options.compare and mode is not None and options.noise_reference is None:
            # collectives judged from their group's inputs on every rank, now linked
            peers = judge_with_peers(conn, comm_nodes, link_summary.peer_sources, mode)
            clock.lap("collectives from their peers")
        warnings = [*plan.warnings, *link_summary.warnings]
        for result in results:
            warnings.extend(result.warnings)
        steps = sorted({task.step for task in plan.tasks})
        ranks = sorted({task.rank for task in plan.tasks})
        config = writer.ConfigRow(
            graph_type="compare" if options.compare else "build",
            task=str(mode) if mode is not None else "",
            tool_tip=tool_tips(mode) if mode is not None else None,
            micro_steps=max(result.micro_steps for result in results),
            overflow_check=options.overflow_check,
            node_colors=node_colors(mode) if mode is not None else None,
            rank_list=ranks,
            step_list=steps,
        )
        writer.write_config(conn, config)
        match = {
            f"{result.step}/{result.rank}": result.match
            for result in results
            if result.match is not None
        }
        meta = _meta(plan, config, mode, steps, ranks, match, link_summary.counts, warnings)
        if peers:
            meta[META_KEY] = peers
        meta["timings"] = {
            "tasks": {f"{result.step}/{result.rank}": result.timings for result in results},
            "finish": clock.stages,
        }
        writer.write_meta(conn, meta)
        progress(0.97, "indexing")
        writer.finalize(conn)
        conn = None
        final = output.claim_final_path(temp, options.output_dir, name)
    except BaseException as error:
        if conn is not None:
            with suppress(sqlite3.Error):
                conn.close()
        output.remove([*([temp] if temp is not None else []), *parts])
        if isinstance(error, (sqlite3.Error, OSError)):
            raise output.output_error(error, options.output_dir / name) from None
        raise
    progress(1.0, f"wrote {final}")
    return BuildResult(
        path=final,
        graph_type=config.graph_type,
        mode=mode,
        steps=steps,
        ranks=ranks,
        warnings=warnings,
        match=match,
        seconds=time.perf_counter() - plan.started,
    )


def _common_mode(results: list[TaskResult]) -> DataMode | None:
    modes = {result.mode for result in results}
    if len(modes) > 1:
        raise CompareError(
            f"ranks and steps hold different data modes: {sorted(str(mode) for mode in modes)}"
        )
    return modes.pop() if modes else None


def _merged(parts: list[Path], temp: Path) -> sqlite3.Connection:
    """The file at ``temp`` holding every part's rows, in part order."""
    if len(parts) == 1:  # a lone part already is the whole file: no copy
        os.replace(parts[0], temp)
        return writer.open_db(temp)
    conn = writer.open_new_db(temp)
    for part in parts:
        writer.merge_part(conn, part)
    return conn


def _meta(
    plan: BuildPlan,
    config: writer.ConfigRow,
    mode: DataMode | None,
    steps: list[int],
    ranks: list[int],
    match: dict[str, dict[str, int]],
    links: dict[str, Any],
    warnings: list[str],
) -> dict[str, Any]:
    """gb_meta: what was built, from what, how, and what was noticed."""
    options = plan.options
    return {
        "schema": SCHEMA_NAME,
        "schema_version": schema.SCHEMA_VERSION,
        "graphboard_version": __version__,
        "created_at": plan.started_at.isoformat(timespec="seconds"),
        "command": options.command or sys.argv,
        "inputs": {
            "target": str(Path(options.target).resolve()),
            "golden": str(Path(options.golden).resolve()) if options.golden is not None else None,
            "layer_mapping": str(options.layer_mapping)
            if isinstance(options.layer_mapping, Path)
            else options.layer_mapping,
            # a three-way compare's reference (-nr); absent from other files' gb_meta
            **(
                {"noise_reference": str(Path(options.noise_reference).resolve())}
                if options.noise_reference is not None
                else {}
            ),
        },
        "flags": {
            "overflow_check": options.overflow_check,
            "fuzzy_match": options.fuzzy_match,
            "layer_mapping": bool(options.layer_mapping),
            "match_mode": options.match_mode.value,
        },
        "graph_type": config.graph_type,
        "data_mode": str(mode) if mode is not None else None,
        "steps": steps,
        "ranks": ranks,
        "missing": plan.missing,
        "match": match,
        "links": links,
        "warnings": warnings,
    }
