"""A verdict (the JSON of ``GET /api/jobs/{id}/verdict``) as lines for a terminal or a CI log,
and the exit code it gives: what ci-check, ``graphboard verdict``, the demo and graph_build's
compare summary print."""

from __future__ import annotations

import argparse
from typing import Any

from graphboard.compare.rule_sets import RULES

# Exit codes of ci-check and ``graphboard verdict``.
PASSED, TOO_MANY_ERRORS, NO_VERDICT = 0, 1, 2


def add_max_errors(parser: argparse.ArgumentParser) -> None:
    """The threshold option of the commands that exit on a verdict."""
    parser.add_argument(
        "--max-errors",
        type=int,
        default=0,
        help="fail (exit 1) when the target has more error nodes than this (default 0)",
    )


def add_rules(parser: argparse.ArgumentParser) -> None:
    """The rule-set option of the commands that judge a verdict."""
    parser.add_argument(
        "--rules",
        choices=RULES,
        default=None,
        help="whose verdicts to count: graphboard's dtype-aware rules (the default where the "
        "file holds them), which expect a bf16/fp16 target's rounding against an fp32 golden, "
        "or msprobe's (the default for msprobe's files, builds and md5 mode)",
    )


def passes(verdict: dict[str, Any], max_errors: int) -> bool:
    """The target has at most ``max_errors`` error nodes."""
    return int(verdict["counts"]["error"]) <= max_errors


def exit_code(verdict: dict[str, Any], max_errors: int) -> int:
    return PASSED if passes(verdict, max_errors) else TOO_MANY_ERRORS


def verdict_lines(
    verdict: dict[str, Any], server: str, max_errors: int, view: str | None = None
) -> list[str]:
    """PASS or FAIL against ``max_errors``, then the findings (``view`` as in findings_lines)."""
    errors = verdict["counts"]["error"]
    head = (
        f"PASS ({errors} error(s), at most {max_errors} allowed)"
        if passes(verdict, max_errors)
        else f"FAIL ({errors} error(s), more than the {max_errors} allowed)"
    )
    return [f"graphboard verdict: {head}", *findings_lines(verdict, server, view)]


def findings_lines(verdict: dict[str, Any], server: str, view: str | None = None) -> list[str]:
    """What a compare found (counts, overflow, where the first error starts) and the URL that
    opens it on ``server``; indented under a heading line. ``view`` replaces the URL's line
    when the caller does not know that ``server`` serves the file (``viewer_link.view_line``)."""
    counts, overflow = verdict["counts"], verdict["overflow"]
    errors = counts["error"]
    lines = [
        f"  graph     {verdict['graph']} ({verdict['graph_type']}, "
        f"{verdict.get('data_mode') or 'no'} mode, steps {verdict['steps']}, ranks {verdict['ranks']})",
        # which rule set counted: a verdict without "rules" is msprobe's (the endpoint names
        # only graphboard's), and the two count very differently on a bf16 target
        f"  rules     {verdict.get('rules') or 'msprobe'}",
        f"  nodes     {counts['pass']} pass, {counts['warning']} warning, {errors} error, "
        f"{counts['unmatched']} unmatched",
        f"  overflow  {overflow['medium']} medium, {overflow['high']} high, "
        f"{overflow['critical']} critical",
    ]
    first = verdict.get("first_error")
    if first:
        where = f"{first['side']} step {first['step']} rank {first['rank']}"
        line = f"  first {first['level']}: {first['name']} ({where})"
        worst = first.get("worst_metric")
        if worst:
            detail = f"{worst['parameter']}"
            if worst.get("metric"):
                detail += f" {worst['metric']} = {worst['shown']}"
            if worst.get("message"):
                detail += f": {worst['message']}"
            line += f"; worst {detail}"
        lines.append(line)
    else:
        lines.append("  first error: none")
    found = verdict.get("diagnosis")
    if found and found.get("found") and found.get("kind") != "first_error":  # not said twice
        lines.append(f"  diagnosis {found['summary']}")
    lines.append(f"  {view}" if view else f"  open      {server.rstrip('/')}{verdict['url']}")
    return lines


def monitor_lines(verdict: dict[str, Any], server: str) -> list[str]:
    """A monitor job's verdict (``kind`` monitor): PASS when the runs do not part beyond the
    noise, FAIL with the first departure otherwise, and the page that shows it."""
    first = verdict.get("first_departure")
    head = "FAIL (the runs part)" if first else "PASS (no departure)"
    lines = [f"graphboard verdict: {head}", f"  summary   {verdict['summary']}"]
    if first:
        lines.append(
            f"  first departure: step {first['step']}, {first['module']} ({first['kind']}, "
            f"{first['metric']} {first['target']}, rank {first['rank']})"
        )
        base = server.rstrip("/")
        lines.append(f"  dump config  {base}{verdict['dump_config_url']}")
        lines += [f"  step graph   {base}{graph['url']}" for graph in verdict.get("graphs", [])]
    lines.append(f"  open      {server.rstrip('/')}{verdict['url']}")
    return lines
