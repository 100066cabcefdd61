"""Pair every target node with its golden counterpart.

- default: the same name under the same chain of ancestors;
- fuzzy (-fm): modules by name wherever they are, their APIs by call order inside the pair
  (so a drifting global call counter does not break the pairing);
- layer mapping (-lm): module paths renamed by the mapping (renamed classes allowed), APIs
  by call order inside each mapped pair.

Pairs are one-to-one and stored both ways in ``Node.counterpart``. All modes are linear.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

from graphboard.compare.layer_mapping import TOP_LAYER, LayerMapping
from graphboard.graph.model import Graph, Node, NodeType


class MatchMode(StrEnum):
    DEFAULT = "default"
    FUZZY = "fuzzy"
    LAYER_MAPPING = "layer_mapping"


@dataclass(slots=True)
class MatchStats:
    target_matched: int
    target_unmatched: int
    golden_matched: int
    golden_unmatched: int


_COUNTER = re.compile(r"\.\d+\.")
_RANK_SUFFIX = re.compile(r"_rank\d+")
_MODULE = re.compile(
    r"^(Module|Cell)\.(.+)\.([^.]+)\.((?:forward|backward)\.\d+|parameters_grad(?:\.\d+)?)$"
)


def _pair(target: Node, golden: Node) -> bool:
    if target.counterpart is not None or golden.counterpart is not None:
        return False
    target.counterpart = golden
    golden.counterpart = target
    return True


def _api_key(name: str) -> str:
    return _RANK_SUFFIX.sub("", _COUNTER.sub(".", name))


def _pair_apis_by_order(target: Node, golden: Node) -> None:
    """Pair the API children of a matched pair by (API, direction) and call order."""
    golden_apis: dict[str, list[Node]] = defaultdict(list)
    for child in golden.children:
        if child.type is NodeType.API and child.counterpart is None:
            golden_apis[_api_key(child.name)].append(child)
    taken: dict[str, int] = defaultdict(int)
    for child in target.children:
        if child.type is not NodeType.API or child.counterpart is not None:
            continue
        key = _api_key(child.name)
        candidates = golden_apis.get(key)
        index = taken[key]
        if candidates is not None and index < len(candidates):
            taken[key] = index + 1
            _pair(child, candidates[index])


def _match_default(target: Graph, golden: Graph) -> None:
    for node in target.walk():
        other = golden.nodes.get(node.name)
        if other is None:
            continue
        if node.parent is None:
            if other.parent is None:
                _pair(node, other)
        elif other.parent is not None and node.parent.counterpart is other.parent:
            _pair(node, other)


def _match_fuzzy(target: Graph, golden: Graph) -> None:
    for node in target.walk():
        if node.type is NodeType.API:
            continue
        other = golden.nodes.get(node.name)
        if other is not None and other.type is not NodeType.API:
            _pair(node, other)
    for node in target.walk():
        if node.type is not NodeType.API and node.counterpart is not None:
            _pair_apis_by_order(node, node.counterpart)


class _PathMapper:
    """Target module path -> golden module path, computed once per module, top-down."""

    def __init__(self, mapping: LayerMapping) -> None:
        self.mapping = mapping
        self.mapped: dict[int, str] = {}

    def map(self, node: Node, path: str) -> str:
        owner = node.parent
        while owner is not None:
            parsed = _MODULE.match(owner.name)
            if (
                parsed is not None
                and path.startswith(parsed.group(2) + ".")
                and id(owner) in self.mapped
            ):
                relative = path[len(parsed.group(2)) + 1 :]
                renamed = self.mapping.rename(parsed.group(3), relative)
                result = (
                    f"{self.mapped[id(owner)]}.{renamed}" if renamed else self.mapped[id(owner)]
                )
                break
            owner = owner.parent
        else:
            result = self.mapping.rename(TOP_LAYER, path)
        self.mapped[id(node)] = result
        return result


def _match_layer_mapping(target: Graph, golden: Graph, mapping: LayerMapping) -> None:
    by_path: dict[tuple[str, str, str], Node] = {}
    for name, node in golden.nodes.items():
        parsed = _MODULE.match(name)
        if parsed is not None:
            by_path.setdefault((parsed.group(1), parsed.group(2), parsed.group(4)), node)
    mapper = _PathMapper(mapping)
    for node in target.walk():
        if node.type is NodeType.API:
            continue
        parsed = _MODULE.match(node.name)
        if parsed is None:  # root, optimizer, API collections...
            other = golden.nodes.get(node.name)
            if other is not None:
                _pair(node, other)
            continue
        prefix, path, class_name, tail = parsed.groups()
        mapped = mapper.map(node, path)
        other = golden.nodes.get(f"{prefix}.{mapped}.{class_name}.{tail}") or by_path.get(
            (prefix, mapped, tail)
        )
        if other is not None:
            _pair(node, other)
    for node in target.walk():
        if node.type is not NodeType.API and node.counterpart is not None:
            _pair_apis_by_order(node, node.counterpart)
    for node in target.walk():  # APIs outside any matched module: by name
        if node.type is NodeType.API and node.counterpart is None:
            other = golden.nodes.get(node.name)
            if other is not None:
                _pair(node, other)


def match_graphs(
    target: Graph,
    golden: Graph,
    mode: MatchMode = MatchMode.DEFAULT,
    mapping: LayerMapping | None = None,
) -> MatchStats:
    if mode is MatchMode.FUZZY:
        _match_fuzzy(target, golden)
    elif mode is MatchMode.LAYER_MAPPING:
        _match_layer_mapping(target, golden, mapping or LayerMapping())
    else:
        _match_default(target, golden)
    target_matched = sum(1 for node in target.nodes.values() if node.counterpart is not None)
    golden_matched = sum(1 for node in golden.nodes.values() if node.counterpart is not None)
    return MatchStats(
        target_matched,
        len(target.nodes) - target_matched,
        golden_matched,
        len(golden.nodes) - golden_matched,
    )
