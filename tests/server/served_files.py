"""The .vis.db files the server tests serve: graphboard's builds of the shared fixtures and
msprobe's own files, copied (never the read-only originals) into a data dir."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from fixture_cases import fixture_path as fixture_path  # re-exported for the server tests
from fixture_cases import reference_db as reference_db

BuildFn = Callable[..., Path]

# graph id -> (fixture case, build flags) for graphboard's own builds
OUR_BUILDS: dict[str, tuple[str, dict[str, object]]] = {
    "ours/convnet-stats": ("convnet-stats", {"compare": True, "overflow_check": True}),
    "ours/convnet-ddp2": ("convnet-ddp2", {"compare": True}),
    "ours/layer-mapping": ("layer-mapping", {"compare": True}),
    "ours/convnet-tensor": ("convnet-tensor", {"compare": True}),
    "ours/convnet-overflow": ("convnet-overflow", {"compare": False, "overflow_check": True}),
}
# graph id -> (fixture case, reference folder) for msprobe's files
MSPROBE_FILES: dict[str, tuple[str, str]] = {
    "msprobe/convnet-stats": ("convnet-stats", "reference-oc"),
    "msprobe/convnet-ddp2": ("convnet-ddp2", "reference"),
    "msprobe/layer-mapping": ("layer-mapping", "reference"),
    "msprobe/convnet-overflow": ("convnet-overflow", "reference"),
    "msprobe/deep/resnet50-build": ("msprobe-resnet50-gpu", "reference-build"),
}
Q = {"side": "target", "step": 0, "rank": 0}
# The per-graph routes that read the nodes of one (side, step, rank): /api/graphs/{graph}/...
NODE_ROUTES = (
    "children",
    "node",
    "path",
    "search",
    "filter",
    "peers",
    "first-error",
    "worst",
    "matches",
)


def populate(root: Path, built: BuildFn, ids: list[str] | None = None) -> Path:
    """Copy the builds and msprobe's files (never the read-only originals) into ``root``."""
    for graph_id, (case, flags) in OUR_BUILDS.items():
        if ids is None or graph_id in ids:
            target = root / f"{graph_id}.vis.db"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built(case, **flags), target)
    for graph_id, (case, folder) in MSPROBE_FILES.items():
        if ids is None or graph_id in ids:
            target = root / f"{graph_id}.vis.db"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(reference_db(case, folder), target)
    return root
