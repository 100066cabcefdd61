"""Uploads in the catalog, and removing their files once their job has ended."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session

from graphboard.server.catalog.models import Upload


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
