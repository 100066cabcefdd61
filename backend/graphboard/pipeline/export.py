"""``--file_type json``: a merged build written as a dump, as msprobe's JSON export does.

Each replica's merged graph becomes ``<out>/step<step>/rank<main rank>/`` with construct.json
(child -> parent, post-order, root children under ``DefaultModel``, collections included),
dump.json (the main rank's records with the merged statistics written over them, a renamed
node rebuilt from its parameters, ``parallel_merge_info`` per merged node, ``is_merged``) and
stack.json (msprobe's grouped format), reference-builder.md 6.9. The folders are written
under a temporary folder and renamed into place only when every one is complete, so a failed
export leaves nothing behind.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphboard.dump.jsonio import load_json_object
from graphboard.dump.records import STAT_FIELDS, Param, Role, is_parameters_grad
from graphboard.errors import GraphboardError, StoreError
from graphboard.graph.model import ROOT_NAME, Graph, Node
from graphboard.merge.plan import ReplicaTask
from graphboard.merge.stage import merged_sides
from graphboard.pipeline.output import make_output_dir

if TYPE_CHECKING:
    from graphboard.pipeline.options import BuildOptions

JsonObject = dict[str, Any]
_SECTION_PREFIX = {"input_args": "input", "input_kwargs": "input", "input": "input"}


def construct_of(graph: Graph) -> dict[str, str]:
    """child -> parent of every node under the root, in post-order (msprobe's node order)."""
    return {
        node.name: node.parent.name if node.parent is not None else ROOT_NAME
        for node in graph.post_order()
        if node is not graph.root
    }


def stacks_of(graph: Graph) -> dict[str, list[list[str]]]:
    """msprobe's grouped stack.json: ``{"0": [[names], [frames]], ...}``, one group per
    distinct stack, in the order the stacks first appear in post-order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for node in graph.post_order():
        if node is not graph.root and node.stack:
            groups.setdefault(node.stack, []).append(node.name)
    return {
        str(index): [names, list(frames)] for index, (frames, names) in enumerate(groups.items())
    }


def _leaves(value: Any, key: str, grad: bool) -> Iterator[tuple[str, JsonObject]]:
    """Each leaf of a raw record under ``key``, named as dump/records.py names its Param."""
    if isinstance(value, dict):
        if isinstance(value.get("type"), str) or isinstance(value.get("class_type"), str):
            yield key, value
            return
        for name, item in value.items():
            yield from _leaves(item, f"{key}.{name}", grad)
    elif isinstance(value, list):
        if grad and len(value) == 1:  # a parameters_grad leaf has no index, as msprobe
            yield from _leaves(value[0], key, grad)
            return
        for index, item in enumerate(value):
            yield from _leaves(item, f"{key}.{index}", grad)


def _record_leaves(name: str, record: JsonObject) -> Iterator[tuple[str, JsonObject]]:
    if is_parameters_grad(name):
        for grad_name, value in record.items():
            yield from _leaves(value, grad_name, True)
        return
    for section, value in record.items():
        prefix = _SECTION_PREFIX.get(section, section)
        if isinstance(value, dict | list):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for item_key, item in items:
                yield from _leaves(item, f"{prefix}.{item_key}", False)


def _stats(param: Param) -> tuple[Any, ...]:
    return (param.max, param.min, param.mean, param.norm)


def overlaid(name: str, record: JsonObject, params: Sequence[Param]) -> JsonObject:
    """The raw ``record`` with each leaf's Max/Min/Mean/Norm taken from the merged graph's
    parameter of the same name (msprobe writes its in-memory statistics over every leaf)."""
    by_key = {param.key: param for param in params}
    for key, leaf in _record_leaves(name, record):
        param = by_key.get(key)
        # a scalar nested in a list argument keeps its record as dumped, as in msprobe
        if param is not None and (param.is_tensor or key.count(".") < 2):
            leaf.update(zip(STAT_FIELDS, _stats(param), strict=True))
    return record


def _leaf_of(param: Param) -> JsonObject:
    """A parameter as a dump.json leaf: its own fields, none of the merge's internal ones
    (a scalar's dtype and shape, a process group's or a peer's synthetic md5)."""
    leaf: JsonObject = {"type": param.type}
    if param.is_tensor:
        leaf["dtype"] = param.dtype
        leaf["shape"] = list(param.shape) if param.shape is not None else None
    leaf.update(zip(STAT_FIELDS, _stats(param), strict=True))
    if param.requires_grad is not None:
        leaf["requires_grad"] = bool(param.requires_grad)
    if param.is_tensor and param.md5 is not None:
        leaf["md5"] = param.md5
    if param.data_name is not None:
        leaf["data_name"] = param.data_name
    if param.value is not None:
        leaf["value"] = param.value
    leaf.update(param.extra or {})
    return leaf


def _listed(tree: Any) -> Any:
    """Nested dicts whose keys are 0..n-1 as lists (an index path back to a JSON list)."""
    if not isinstance(tree, dict) or "type" in tree:
        return tree
    items = {key: _listed(value) for key, value in tree.items()}
    if items and sorted(items) == [str(index) for index in range(len(items))]:
        return [items[str(index)] for index in range(len(items))]
    return items


def rebuilt(params: Sequence[Param]) -> JsonObject:
    """A renamed node's record rebuilt from its parameters, grouped by their ``input.<i>``,
    ``input.<kwarg>``, ``output.<i>`` and ``parameters.<name>`` names."""
    sections: dict[str, dict[str, Any]] = {}
    for param in params:
        if param.role is Role.PARAMETERS_GRAD:
            section, path = "", param.key.split(".")
        else:
            prefix, _, rest = param.key.partition(".")
            path = rest.split(".")
            kwarg = prefix == "input" and not path[0].isdigit()
            section = "input_kwargs" if kwarg else "input_args" if prefix == "input" else prefix
        tree = sections.setdefault(section, {})
        for part in path[:-1]:
            tree = tree.setdefault(part, {})
        tree[path[-1]] = _leaf_of(param) if not param.is_null else None
    if "" in sections:  # parameters_grad: {name: [leaf]}
        return {name: [leaf] for name, leaf in sections[""].items()}
    record: JsonObject = {}
    for section in ("input_args", "input_kwargs", "output", "parameters"):
        if section in sections:
            value: Any = _listed(sections[section])
            if section in ("input_args", "output") and isinstance(value, dict):
                value = [value[key] for key in sorted(value, key=int)]  # an index left out
            record[section] = value
    return record


def records_of(graph: Graph, raw: JsonObject) -> JsonObject:
    """dump.json's ``data`` of the merged graph: the main rank's records (``raw``) overlaid,
    renamed nodes rebuilt, each merged node's ``parallel_merge_info``; nodes without a record
    have none."""
    data: JsonObject = {}
    for node in graph.post_order():
        if node is graph.root or not node.params:
            continue
        original = raw.get(node.name)
        record = (
            overlaid(node.name, original, node.params)
            if isinstance(original, dict)
            else rebuilt(node.params)
        )
        info = _merge_info(node)
        if info:
            record["parallel_merge_info"] = info
        data[node.name] = record
    return data


def _merge_info(node: Node) -> list[str]:
    merge = node.merge
    return list(merge.info) if merge is not None else []


def _dump_file(graph: Graph, main_dump: Path) -> JsonObject:
    source = load_json_object(main_dump, "dump.json")
    raw = source.get("data")
    header = {key: source.get(key) for key in ("task", "level", "framework", "dump_data_dir")}
    header["is_merged"] = True
    header["data"] = records_of(graph, raw if isinstance(raw, dict) else {})
    return header


def _write_task(task: ReplicaTask, folder: Path) -> None:
    graph, _ = merged_sides(task)
    folder.mkdir(parents=True)
    main_dump = task.target_ranks[task.rank].file("dump.json")
    files = {
        "construct.json": construct_of(graph),
        "dump.json": _dump_file(graph, main_dump),
        "stack.json": stacks_of(graph),
    }
    for name, content in files.items():
        _write_json(folder / name, content)


def _write_json(path: Path, content: object) -> None:
    with path.open("w", encoding="utf-8") as out:
        json.dump(content, out, ensure_ascii=False, indent=1)


def export_merged(tasks: Sequence[ReplicaTask], output_dir: Path) -> list[Path]:
    """Write each task's merged graph as ``<output_dir>/step<s>/rank<r>``; return the folders.
    Nothing is left in ``output_dir`` unless every folder was written."""
    targets = [output_dir / f"step{task.step}" / f"rank{task.rank}" for task in tasks]
    taken = [str(path) for path in targets if path.exists()]
    if taken:
        raise GraphboardError(
            f"--file_type json: {taken[0]} already exists; give an empty output folder (-o)"
        )
    make_output_dir(output_dir)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".graphboard-export-", dir=output_dir))
    except OSError as error:
        raise StoreError(f"{output_dir}: cannot write the export: {_reason(error)}") from None
    try:
        for task, target in zip(tasks, targets, strict=True):
            _write_task(task, staging / target.relative_to(output_dir))
        for target in targets:
            target.parent.mkdir(exist_ok=True)
            (staging / target.relative_to(output_dir)).rename(target)
    except OSError as error:  # a full disk, a folder made read-only meanwhile
        _remove_moved(targets)
        where = error.filename or output_dir
        raise StoreError(f"{where}: cannot write the export: {_reason(error)}") from None
    except BaseException:
        _remove_moved(targets)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _remove_moved(targets: list[Path]) -> None:
    """Remove the folders a failed export had moved into place already."""
    for target in targets:
        with suppress(OSError):
            if target.exists():
                shutil.rmtree(target)
            if target.parent.is_dir() and not any(target.parent.iterdir()):
                target.parent.rmdir()


def json_export_wanted(merged: bool, compare: bool) -> bool:
    """msprobe's rules for ``--file_type json``: an error with a golden dump; for a build
    without the merge flags, a warning (the caller writes a db); else the export."""
    if compare:
        raise GraphboardError(
            "--file_type json is only for a merged build, not a compare (-gp); use db"
        )
    return merged


def run_export(options: BuildOptions) -> list[Path]:
    """Plan the merged build (every flag and folder checked before any work) and export it."""
    from graphboard.pipeline.plan import plan_build

    plan = plan_build(options)
    tasks = [task.merge for task in plan.tasks if isinstance(task.merge, ReplicaTask)]
    return export_merged(tasks, options.output_dir)
