"""Uploads in the catalog, and removing their files once their job has ended."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from graphboard.server.catalog.models import Job, Upload


def create(
    session: Session,
    *,
    upload_id: str,
    token_id: int | None,
    folder: Path,
    archive_bytes: int,
    unpacked_bytes: int,
    file_count: int,
) -> Upload:
    upload = Upload(
        id=upload_id,
        token_id=token_id,
        folder=str(folder),
        archive_bytes=archive_bytes,
        unpacked_bytes=unpacked_bytes,
        file_count=file_count,
        created_at=datetime.now(UTC),
    )
    session.add(upload)
    return upload


def purge(session: Session, upload_id: str) -> None:
    """Delete the unpacked dumps (the job that needed them has ended); the row stays."""
    upload = session.get(Upload, upload_id)
    if upload is None or upload.purged_at is not None:
        return
    shutil.rmtree(upload.folder, ignore_errors=True)
    upload.purged_at = datetime.now(UTC)
    session.commit()


ORPHAN_AGE = timedelta(hours=6)  # longer than any upload takes to arrive


def sweep(session: Session, uploads_dir: Path, *, keep_uploads: bool) -> None:
    """At start-up: remove what a crash left behind. Uploads whose job ended but were not
    purged (the process died in between), and folders without a row: bodies cut off by a
    crash mid-upload. Only old ones: another server of a team may be receiving one now."""
    if not keep_uploads:
        ended = session.scalars(
            select(Upload.id)
            .join(Job, Job.upload_id == Upload.id)
            .where(Upload.purged_at.is_(None), Job.status.in_(("done", "failed")))
        ).all()
        for upload_id in ended:
            purge(session, upload_id)
    if not uploads_dir.is_dir():
        return
    known = set(session.scalars(select(Upload.id)))
    limit = (datetime.now(UTC) - ORPHAN_AGE).timestamp()
    for folder in uploads_dir.iterdir():
        if folder.name not in known and folder.is_dir() and folder.stat().st_mtime < limit:
            shutil.rmtree(folder, ignore_errors=True)
