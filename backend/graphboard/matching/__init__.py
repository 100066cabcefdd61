"""Manual matching: pair (or unpair) one target node with one golden node, and optionally
their forward/backward twins and their descendants, scored by the builder's own engine.

Each request is one write transaction (``BEGIN IMMEDIATE``: concurrent writers queue, readers
carry on) that reads the current state, decides every pair (:mod:`.planner`), scores it with
:func:`graphboard.compare.engine.compare_pair` on parameters rebuilt from the stored rows
(:mod:`.scoring`) and stores the result in graphboard's overlay tables
(:mod:`graphboard.store.matches`) with an undo record (:mod:`.actions`). ``tb_*`` rows are
never modified. Why a pair was refused is said precisely (:class:`.outcome.MatchFailure`).
"""

from graphboard.matching.actions import import_config, pair, undo
from graphboard.matching.outcome import MatchFailure, Outcome, ScoredPair, Skipped

__all__ = [
    "MatchFailure",
    "Outcome",
    "ScoredPair",
    "Skipped",
    "import_config",
    "pair",
    "undo",
]
