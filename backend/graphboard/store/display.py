"""msprobe's display form of parameter dicts: every value a string (reference-builder.md §7.5).

These strings fill the compatibility columns ``tb_nodes.input_data`` / ``output_data`` that
tb_graph_ascend shows; graphboard's own logic never reads numbers back from them.
"""

from __future__ import annotations

import json
import re

import orjson

from graphboard.compare.metrics import (
    RELATIVE_METRIC_NAMES,
    SUMMARY_METRIC_NAMES,
    TENSOR_METRIC_NAMES,
    md5_of,
)
from graphboard.compare.result import DataMode, NodeComparison
from graphboard.dump.records import Param, Role
from graphboard.accel import _render

_DECIMAL = re.compile(r"^\d{1,20}\.(\d{1,20})(%?)$")


def _round_decimal(text: str) -> str:
    match = _DECIMAL.match(text)
    if match is None or len(match.group(1)) <= 6:
        return text
    return f"{float(text.rstrip('%')):.6f}{match.group(2)}"


def clean_string(value: str) -> str:
    """msprobe's text for a string value: quotes dropped, None as null, long decimals rounded.
    (The renderer caches the result of each short string: dtype and type strings repeat.)"""
    if value == " ":
        return "null"
    return _round_decimal(value.replace("'", "").replace("None", "null"))


_MODE_CODES = {
    None: 0,
    DataMode.STRUCTURE: 0,
    DataMode.SUMMARY: 1,
    DataMode.MD5: 2,
    DataMode.TENSOR: 3,
}

# The renderer (C) applies these rules; it calls back the Python helpers above for what is
# not a hot path: cleaning a string (clean_string), a scalar's checksum, the JSON of a
# message list.
#
# One parameter's fields, by the kind of leaf (in this order):
#   masked leaf:      value "null", and nothing else (no comparison either)
#   tensor:           type, dtype, shape, Max, Min, Mean, Norm, requires_grad, md5 (md5 mode,
#                     when dumped), data_name ("-1" when none)
#   process group:    type, group_ranks, group_id, data_name
#   anything else:    type, value, data_name, requires_grad, Max, Min, Mean, Norm, dtype, shape,
#                     md5 (md5 mode: the CRC-32 of the value, as md5_of gives it)
# then the leaf's other fields (not over the ones above), then, for a scored target
# parameter, its row's fields (over any of the same name):
#   statistics mode:  the four differences (repr) and four relative errors (percentages)
#   tensor mode:      Cosine ... Five Thousandths Err Ratio
#   every mode:       Requires_grad Consistent, Result (md5 mode: Result first), Err_message
# Every value is shown as msprobe shows it: floats as repr, None as "null", strings through
# clean_string, the rest str(); a shape as "[1, 2048, 4096]"; a relative error is a
# percentage, rounded to 6 decimals when it has more (never an exponent, inf/nan or a
# negative one).
_render.configure(
    Role.OUTPUT,
    clean_string,
    md5_of,
    json.dumps,
    SUMMARY_METRIC_NAMES,
    frozenset(RELATIVE_METRIC_NAMES),
    TENSOR_METRIC_NAMES,
)


def node_display_json(
    params: list[Param] | None,
    node_name: str,
    mode: DataMode | None,
    comparison: NodeComparison | None = None,
) -> tuple[str, str]:
    """(input_data, output_data) of one node as JSON text, keyed by the full parameter name."""
    rows = comparison.rows if comparison is not None else None
    return _render.render_node(params, node_name, _MODE_CODES[mode], rows)


def node_display(
    params: list[Param] | None,
    node_name: str,
    mode: DataMode | None,
    comparison: NodeComparison | None = None,
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """The same as dictionaries."""
    inputs, outputs = node_display_json(params, node_name, mode, comparison)
    return orjson.loads(inputs), orjson.loads(outputs)
