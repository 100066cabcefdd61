"""Recording which .vis.db files the service has seen (the catalog's ``known_graphs``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from graphboard.server.catalog.models import KnownGraph


@dataclass(frozen=True, slots=True)
class Sighting:
    graph_id: str
    source: str | None
    graph_type: str | None
    data_mode: str | None
    size_bytes: int
    modified_at: datetime
    error: str | None


def record(session: Session, sightings: Sequence[Sighting]) -> None:
    """Upsert what a scan of the data dir found; files no longer there are marked absent."""
    now = datetime.now(UTC)
    known = {row.graph_id: row for row in session.scalars(select(KnownGraph))}
    for seen in sightings:
        row = known.get(seen.graph_id)
        if row is None:
            row = KnownGraph(graph_id=seen.graph_id, first_seen=now)
            session.add(row)
        row.source = seen.source
        row.graph_type = seen.graph_type
        row.data_mode = seen.data_mode
        row.size_bytes = seen.size_bytes
        row.modified_at = seen.modified_at
        row.last_seen = now
        row.present = True
        row.error = seen.error
    gone = set(known) - {seen.graph_id for seen in sightings}
    if gone:
        session.execute(
            update(KnownGraph).where(KnownGraph.graph_id.in_(gone)).values(present=False)
        )
    session.commit()


def known(session: Session) -> list[KnownGraph]:
    return list(session.scalars(select(KnownGraph).order_by(KnownGraph.graph_id)))
