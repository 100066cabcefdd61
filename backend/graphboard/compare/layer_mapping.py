"""Layer mapping (-lm): rename target module paths into golden ones, per owning class.

The YAML is msprobe's format: ``{ClassName: {target attr path: golden attr path}}``, where
``TopLayer`` (or ``Cell``) stands for the model itself. A module's path is mapped one owner at
a time, from the top: the owner's class picks the table, and the longest dotted key that
prefixes the remaining path is replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphboard.errors import CompareError

TOP_LAYER = "TopLayer"


class LayerMapping:
    def __init__(self, table: dict[str, dict[str, str]] | None = None) -> None:
        self.table = table or {}

    @classmethod
    def load(cls, path: Path) -> LayerMapping:
        import yaml  # here: only a mapping file needs it, not every graph_build's start-up

        try:
            raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise CompareError(
                f"{path}: cannot read the layer mapping: {error.strerror or error}"
            ) from None
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = (
                f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            )
            raise CompareError(
                f"{path}: invalid YAML{where}: {getattr(error, 'problem', error)}"
            ) from None
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise CompareError(
                f"{path}: top level is a {type(raw).__name__}; expected {{ClassName: {{target attr: golden attr}}}}"
            )
        table: dict[str, dict[str, str]] = {}
        for class_name, renames in raw.items():
            if renames is None:
                continue
            if not isinstance(renames, dict):
                raise CompareError(
                    f"{path}: entry {class_name!r} is a {type(renames).__name__}; expected {{target attr: golden attr}}"
                )
            key = TOP_LAYER if class_name == "Cell" else str(class_name)
            table[key] = {
                str(source): str(target).split("(", 1)[0].strip()
                for source, target in renames.items()
            }
        return cls(table)

    def rename(self, owner_class: str, relative_path: str) -> str:
        """Map a path relative to an owner of class ``owner_class``."""
        renames = self.table.get(owner_class)
        if not renames or not relative_path:
            return relative_path
        parts = relative_path.split(".")
        for length in range(len(parts), 0, -1):
            key = ".".join(parts[:length])
            if key in renames:
                return (
                    ".".join([renames[key], *parts[length:]])
                    if renames[key]
                    else ".".join(parts[length:])
                )
        return relative_path
