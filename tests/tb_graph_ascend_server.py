"""TensorBoard with tb_graph_ascend's plugin, run as a program with msprobe's Python.

``python tb_graph_ascend_server.py LOGDIR PORT [DISTRIBUTION]``. Why not ``tensorboard --logdir``: msprobe
(mindstudio-probe 26.2.0) registers its own bundled copy of the plugin under the same
``graph_ascend`` name, so with the PyPI package installed beside it ``tensorboard`` refuses to
start ("Duplicate plugins for name graph_ascend"). This starts TensorBoard's own plugins plus
the ``graph_ascend`` plugin of one distribution (``tb-graph-ascend`` unless named), no other.
"""

from __future__ import annotations

import sys
from importlib import metadata

from tensorboard import default, program


def _graph_ascend_plugin(distribution: str) -> object:
    entry_points = metadata.distribution(distribution).entry_points
    (plugin,) = [
        point
        for point in entry_points
        if point.group == "tensorboard_plugins" and point.name == "graph_ascend"
    ]
    return plugin.load()


def main() -> int:
    logdir, port, *named = sys.argv[1:]
    plugin = _graph_ascend_plugin(named[0] if named else "tb-graph-ascend")
    board = program.TensorBoard(plugins=[*default.get_static_plugins(), plugin])
    board.configure(argv=[None, "--logdir", logdir, "--port", port, "--host", "127.0.0.1"])
    return int(board.main())


if __name__ == "__main__":
    sys.exit(main())
