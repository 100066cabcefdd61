"""Replace attributes of modules and classes, and put back exactly what was there.

An attribute a class only inherits (``torch.Tensor.__add__`` comes from ``TensorBase``) is
deleted again on restore rather than set, so the class ends up as it started.
"""

from __future__ import annotations

from typing import Any


class Patches:
    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any, bool]] = []

    def replace(self, owner: Any, name: str, replacement: Any) -> None:
        own = vars(owner)
        had_own = name in own
        original = own[name] if had_own else getattr(owner, name)
        setattr(owner, name, replacement)
        self._undo.append((owner, name, original, had_own))

    def restore(self) -> None:
        while self._undo:
            owner, name, original, had_own = self._undo.pop()
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
