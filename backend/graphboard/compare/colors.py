"""The colour table and metric tool tips stored in ``tb_config`` (msprobe's schema)."""

from __future__ import annotations

import json
from typing import Any

from graphboard.compare.result import ERROR_FROM, WARNING_FROM, DataMode, Level

PASS_COLOR = "#FFFCF3"
WARNING_COLOR = "#FFDC7F"
ERROR_COLOR = "#FF704D"
UNMATCHED_COLOR = "#C7C7C7"

_STATISTICS_TEXT = "Statistics of every input and output compared; darker means the target strays further from the golden"
_TENSOR_TEXT = "Every input and output tensor compared element-wise; darker means the target strays further from the golden"


def node_colors(mode: DataMode) -> dict[str, dict[str, Any]]:
    """``{hex: {"value": [lo, hi], "description", "accuracy_level"}}``; bands are [lo, hi)."""
    unmatched = {
        UNMATCHED_COLOR: {
            "value": [],
            "description": "No counterpart was found for this node during the compare",
            "accuracy_level": "unmatched node",
        }
    }
    if mode is DataMode.STRUCTURE:
        return unmatched
    if mode is DataMode.MD5:
        texts = ("All checksums equal", "Some checksum differs", "Some checksum differs")
    elif mode is DataMode.TENSOR:
        texts = (_TENSOR_TEXT,) * 3
    else:
        texts = (_STATISTICS_TEXT,) * 3
    return {
        PASS_COLOR: {
            "value": [0, WARNING_FROM],
            "description": texts[0],
            "accuracy_level": Level.PASS.label,
        },
        WARNING_COLOR: {
            "value": [WARNING_FROM, ERROR_FROM],
            "description": texts[1],
            "accuracy_level": Level.WARNING.label,
        },
        ERROR_COLOR: {
            "value": [ERROR_FROM, 1],
            "description": texts[2],
            "accuracy_level": Level.ERROR.label,
        },
        **unmatched,
    }


def tool_tips(mode: DataMode) -> str:
    if mode is DataMode.SUMMARY:
        tips = {
            "Max diff": "target max minus golden max",
            "Min diff": "target min minus golden min",
            "Mean diff": "target mean minus golden mean",
            "L2norm diff": "target L2 norm minus golden L2 norm",
        }
    elif mode is DataMode.MD5:
        tips = {"md5": "CRC-32 checksum of the tensor's bytes"}
    else:
        tips = {
            "One Thousandth Err Ratio": "share of elements whose relative error is below 1/1000",
            "Five Thousandths Err Ratio": "share of elements whose relative error is below 5/1000",
            "Cosine": "cosine similarity of target and golden; acceptable above 0.99",
            "MaxAbsErr": "largest absolute error; acceptable below 0.001",
            "MaxRelativeErr": "largest relative error",
        }
    return json.dumps(tips, ensure_ascii=False)
