"""Assisted matching: proposals, each with a confidence and a reason, for the grey nodes the
exact and fuzzy matchers leave when the two runs name the same model differently.

One module per job: reading a side (:mod:`.sides`), what a node shows (:mod:`.features`),
how alike two nodes are (:mod:`.score`), which nodes may pair (:mod:`.candidates`), the
top-down walk (:mod:`.proposals`) and what it gives (:mod:`.results`), pairs one level
apart (:mod:`.levels`), recording them as manual matches (:mod:`.apply`), the
``graphboard suggest-matches`` command (:mod:`.command`) and users' rejections
(:mod:`.rejections`).
"""

from graphboard.suggest.proposals import propose
from graphboard.suggest.results import DEFAULT_MIN_CONFIDENCE, Fused, Proposals, Suggestion

__all__ = ["DEFAULT_MIN_CONFIDENCE", "Fused", "Proposals", "Suggestion", "propose"]
