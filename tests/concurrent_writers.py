"""A client that writes to one compare through a real graphboard server, as a user would,
for the concurrent-writers test: matches, unmatches, undos, suggestion accepts and rejects
in a random order (seeded), every answer's status counted.

    python tests/concurrent_writers.py URL GRAPH SEED OPERATIONS

Prints one JSON object: {"statuses": {code: count}, "bad": [answers no writer should get]}.
An answer is bad when the server failed (5xx) or a read found the file damaged (422 with
"malformed"); a refusal (409 "already matched", "nothing to undo"...) is an ordinary answer.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from typing import Any

import httpx

Q = {"step": 0, "rank": 0}


def _pairs(client: httpx.Client, graph: str) -> list[tuple[str, str]]:
    """Pairs to write: every proposal, at any confidence."""
    found = client.get(f"/api/graphs/{graph}/suggestions", params={**Q, "min_confidence": 0})
    found.raise_for_status()
    return [(s["target"], s["golden"]) for s in found.json()["suggestions"]]


def _operation(
    client: httpx.Client, graph: str, pair: tuple[str, str], kind: str
) -> httpx.Response:
    body = {**Q, "target": pair[0], "golden": pair[1]}
    if kind == "match":
        return client.post(f"/api/graphs/{graph}/matches", json=body)
    if kind == "unmatch":
        return client.delete(f"/api/graphs/{graph}/matches", params=body)
    if kind == "undo":
        return client.post(f"/api/graphs/{graph}/matches/undo", params=Q)
    if kind == "accept":
        return client.post(f"/api/graphs/{graph}/suggestions/accept", json=body)
    if kind == "reject":
        return client.post(f"/api/graphs/{graph}/suggestions/reject", json=body)
    return client.get(f"/api/graphs/{graph}/matches", params=Q)  # a read between writes


KINDS = ("match", "match", "unmatch", "undo", "undo", "accept", "reject", "read")


def run(url: str, graph: str, seed: int, operations: int, token: str) -> dict[str, Any]:
    chosen = random.Random(seed)
    statuses: Counter[int] = Counter()
    bad: list[str] = []
    # the viewer's token, as the browser sends it on writes (the URL serve prints)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, timeout=60, headers=headers) as client:
        pairs = _pairs(client, graph)
        for _ in range(operations):
            kind = chosen.choice(KINDS)
            answer = _operation(client, graph, chosen.choice(pairs), kind)
            statuses[answer.status_code] += 1
            if answer.status_code >= 500 or "malformed" in answer.text:
                bad.append(f"{kind}: {answer.status_code} {answer.text[:300]}")
    return {"statuses": dict(statuses), "bad": bad}


if __name__ == "__main__":
    print(
        json.dumps(run(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    )
