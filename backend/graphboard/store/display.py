"""msprobe's display form of parameter dicts: every value a string (reference-builder.md §7.5).

These strings fill the compatibility columns ``tb_nodes.input_data`` / ``output_data`` that
tb_graph_ascend shows; graphboard's own logic never reads numbers back from them. The rules
are display_render.py's; the compiled renderer (accel/_render.c), when built, gives the same
text faster and calls back the Python for what is not a hot path: cleaning a string, a
scalar's checksum, the JSON of a message list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from types import ModuleType

import orjson

from graphboard import accel
from graphboard.compare.metrics import (
    RELATIVE_METRIC_NAMES,
    SUMMARY_METRIC_NAMES,
    TENSOR_METRIC_NAMES,
    md5_of,
)
from graphboard.compare.result import DataMode, NodeComparison, ParamRow
from graphboard.dump.records import Param, Role
from graphboard.store import display_render
from graphboard.store.display_render import clean_string

__all__ = ["clean_string", "node_display", "node_display_json"]

_MODE_CODES = {
    None: display_render.MODE_NONE,
    DataMode.STRUCTURE: display_render.MODE_NONE,
    DataMode.SUMMARY: display_render.MODE_SUMMARY,
    DataMode.MD5: display_render.MODE_MD5,
    DataMode.TENSOR: display_render.MODE_TENSOR,
}

Renderer = Callable[[Sequence[Param] | None, str, int, Sequence[ParamRow] | None], tuple[str, str]]


def configured(compiled: ModuleType) -> Renderer:
    """The compiled renderer's render_node, given the Python helpers and names it calls back."""
    compiled.configure(
        Role.OUTPUT,
        clean_string,
        md5_of,
        json.dumps,
        SUMMARY_METRIC_NAMES,
        frozenset(RELATIVE_METRIC_NAMES),
        TENSOR_METRIC_NAMES,
    )
    render: Renderer = compiled.render_node
    return render


_compiled = accel.compiled("render")
_render_node = display_render.render_node if _compiled is None else configured(_compiled)


def node_display_json(
    params: list[Param] | None,
    node_name: str,
    mode: DataMode | None,
    comparison: NodeComparison | None = None,
) -> tuple[str, str]:
    """(input_data, output_data) of one node as JSON text, keyed by the full parameter name."""
    rows = comparison.rows if comparison is not None else None
    return _render_node(params, node_name, _MODE_CODES[mode], rows)


def node_display(
    params: list[Param] | None,
    node_name: str,
    mode: DataMode | None,
    comparison: NodeComparison | None = None,
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """The same as dictionaries."""
    inputs, outputs = node_display_json(params, node_name, mode, comparison)
    return orjson.loads(inputs), orjson.loads(outputs)
