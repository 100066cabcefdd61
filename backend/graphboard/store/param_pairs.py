"""A node's target and golden parameters side by side, from their stored dicts alone, paired
by name as the builder pairs them (``compare.engine.pair_params``), by position only where
the names cannot agree. The node view (``server.present.paired_rows``) and the compare table
(``graphboard.table.rows``) both show these rows."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol

from graphboard.compare.engine import pair_params
from graphboard.dump.records import Param, Role
from graphboard.store.param_parse import split_fields, stored_entries


class StoredParams(Protocol):
    """What pairing reads of a node: its name and its stored parameter dicts
    (``tb_nodes.input_data`` / ``output_data``), as ``NodeRecord`` and ``StoredNode`` hold them."""

    @property
    def name(self) -> str: ...
    @property
    def input_data(self) -> dict[str, Any]: ...
    @property
    def output_data(self) -> dict[str, Any]: ...


class SideFields(NamedTuple):
    name: str  # the full parameter name as stored
    fields: dict[str, Any]  # the parameter's own fields, as stored


class PairedParam(NamedTuple):
    """One target parameter and its golden counterpart as stored (either may be missing)."""

    role: str
    key: str
    paired_by: str | None  # None when one side is missing
    target: SideFields | None
    golden: SideFields | None
    comparison: dict[str, Any]  # the fields the compare stored on the target


def _entries(node: StoredParams) -> list[tuple[str, str, Role, dict[str, Any]]]:
    return list(stored_entries(node.name, node.input_data, node.output_data))


def paired_stored(target: StoredParams | None, golden: StoredParams | None) -> list[PairedParam]:
    """The target's and the golden's parameters paired, in the builder's order."""
    # pair_params reads only keys and roles; the rows show the stored dicts
    target_entries = _entries(target) if target is not None else []
    golden_entries = _entries(golden) if golden is not None else []
    target_params = [Param(key, role) for _name, key, role, _shown in target_entries]
    golden_params = [Param(key, role) for _name, key, role, _shown in golden_entries]
    target_stored = {name: shown for name, _key, _role, shown in target_entries}
    golden_stored = {name: shown for name, _key, _role, shown in golden_entries}
    pairs: list[tuple[Param | None, Param | None, str | None]]
    if target is not None and golden is not None:
        rows = pair_params(target_params, golden_params)
        pairs = [(row.target, row.golden, row.paired_by) for row in rows]
    else:
        pairs = [(param, None, None) for param in target_params] + [
            (None, param, None) for param in golden_params
        ]
    out: list[PairedParam] = []
    for target_param, golden_param, paired_by in pairs:
        any_param = target_param or golden_param
        assert any_param is not None
        target_fields = golden_fields = None
        comparison: dict[str, Any] = {}
        if target_param is not None and target is not None:
            name = target_param.full_name(target.name)
            own, comparison = split_fields(target_stored.get(name, {}))
            target_fields = SideFields(name, own)
        if golden_param is not None and golden is not None:
            name = golden_param.full_name(golden.name)
            own, _ignored = split_fields(golden_stored.get(name, {}))
            golden_fields = SideFields(name, own)
        both = target_param is not None and golden_param is not None
        out.append(
            PairedParam(
                any_param.role.value,
                any_param.key,
                paired_by if both else None,
                target_fields,
                golden_fields,
                comparison,
            )
        )
    return out


def stored_messages(value: Any) -> list[str]:
    """A row's ``Err_message`` as the messages it holds: stored as a JSON list's text, a list,
    or one message."""
    if value == "[]":  # nearly every row
        return []
    if isinstance(value, list):
        return [str(item) for item in value]
    if isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        return [str(item) for item in parsed] if isinstance(parsed, list) else [value]
    return [str(value)] if value else []
