"""A verdict as lines for a CI log."""

from __future__ import annotations

from typing import Any


def verdict_lines(verdict: dict[str, Any], server: str, max_errors: int, passed: bool) -> list[str]:
    errors = verdict["counts"]["error"]
    head = (
        f"PASS ({errors} error(s), at most {max_errors} allowed)"
        if passed
        else f"FAIL ({errors} error(s), more than the {max_errors} allowed)"
    )
    return [f"graphboard verdict: {head}", *findings_lines(verdict, server)]


def findings_lines(verdict: dict[str, Any], server: str) -> list[str]:
    """What a compare found (counts, overflow, where the first error starts) and the URL that
    opens it on ``server``; indented under a heading line."""
    counts, overflow = verdict["counts"], verdict["overflow"]
    errors = counts["error"]
    lines = [
        f"  graph     {verdict['graph']} ({verdict['graph_type']}, "
        f"{verdict.get('data_mode') or 'no'} mode, steps {verdict['steps']}, ranks {verdict['ranks']})",
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
    lines.append(f"  open      {server.rstrip('/')}{verdict['url']}")
    return lines
