"""The two rule sets a compare's verdicts are read under, and which one answers by default.

``msprobe``: msprobe's verdicts, as ``tb_nodes.precision_index`` holds them and
tb_graph_ascend shows them. ``dtype-aware``: graphboard's (compare/dtype_aware.py,
docs/dtype-aware.md), stored beside them at build time. graphboard's are the default since
issue 29's localisation benchmark showed them at least as right as msprobe's in every
precision group (bench/results/localisation-wave3-merged.md); a file that holds no
dtype-aware verdicts (msprobe's, a build, md5 mode) is read under msprobe's
(store/rule_columns.py ``file_default``).
"""

from __future__ import annotations

MSPROBE, DTYPE_AWARE = RULES = ("msprobe", "dtype-aware")
DEFAULT_RULES = DTYPE_AWARE
