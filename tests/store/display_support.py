"""The two renderers of msprobe's display strings, side by side, for tests that hold them equal.

The compiled one is imported directly, so that GRAPHBOARD_PURE=1 (which only chooses what
graphboard uses) does not hide it from the comparison.
"""

from __future__ import annotations

import importlib

import pytest

from graphboard.store import display, display_render
from graphboard.store.display import Renderer

PYTHON: Renderer = display_render.render_node


def compiled() -> Renderer | None:
    """The compiled renderer, configured as display.py configures it; None when not built."""
    try:
        module = importlib.import_module("graphboard.accel._render")
    except ImportError:
        return None
    return display.configured(module)


def compiled_or_skip() -> Renderer:
    renderer = compiled()
    if renderer is None:
        pytest.skip("graphboard.accel._render is not built (an install without a compiler)")
    return renderer


def renderer_named(name: str) -> Renderer:
    return PYTHON if name == "python" else compiled_or_skip()


RENDERERS = ["python", "compiled"]
