"""Catalog tables. Constraint names follow one convention so migrations can alter them on
SQLite (batch mode) and PostgreSQL alike."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class KnownGraph(Base):
    """A .vis.db file seen under the data dir."""

    __tablename__ = "known_graphs"

    id: Mapped[int] = mapped_column(primary_key=True)
    graph_id: Mapped[str] = mapped_column(String(1024), unique=True)  # path without .vis.db
    source: Mapped[str | None] = mapped_column(String(16))  # graphboard | msprobe
    graph_type: Mapped[str | None] = mapped_column(String(16))  # build | compare
    data_mode: Mapped[str | None] = mapped_column(String(16))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    modified_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    present: Mapped[bool] = mapped_column(Boolean, default=True)
    error: Mapped[str | None] = mapped_column(Text)  # why it could not be read, if so


class ApiToken(Base):
    """A bearer token of the upload and job endpoints. Only its SHA-256 is kept; the token
    itself is printed once, by ``graphboard token create``."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(32), unique=True)  # public part: finds the row
    token_hash: Mapped[str] = mapped_column(String(64))  # hex SHA-256 of the whole token
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Upload(Base):
    """Dump archives received by ``POST /api/uploads``, unpacked into the state folder."""

    __tablename__ = "uploads"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id"))
    folder: Mapped[str] = mapped_column(Text)  # where the archives were unpacked
    archive_bytes: Mapped[int] = mapped_column(BigInteger)
    unpacked_bytes: Mapped[int] = mapped_column(BigInteger)
    file_count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    purged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # files removed


class Job(Base):
    """A build in the background: from an upload or from dump folders under the data dir.

    ``status`` goes queued -> running -> done | failed; a job found running after its process
    died is queued again until ``attempts`` reaches the limit (see ``server.jobs.records``).
    """

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    upload_id: Mapped[str | None] = mapped_column(ForeignKey("uploads.id"))
    token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id"))
    status: Mapped[str] = mapped_column(String(16), index=True)
    stage: Mapped[str | None] = mapped_column(String(16))  # build | parts | merge
    progress: Mapped[int] = mapped_column(Integer, default=0)  # percent
    message: Mapped[str | None] = mapped_column(Text)  # the last progress message
    error: Mapped[str | None] = mapped_column(Text)  # why it failed
    graph_id: Mapped[str | None] = mapped_column(String(1024))  # the result, once done
    target: Mapped[str] = mapped_column(Text)  # dump folders, absolute
    golden: Mapped[str | None] = mapped_column(Text)
    layer_mapping: Mapped[str | None] = mapped_column(Text)
    noise_reference: Mapped[str | None] = mapped_column(Text)  # -nr's dump folder, absolute
    kind: Mapped[str | None] = mapped_column(String(16))  # None: a graph build; "monitor"
    fuzzy_match: Mapped[bool] = mapped_column(Boolean, default=False)
    overflow_check: Mapped[bool] = mapped_column(Boolean, default=False)
    runner: Mapped[str] = mapped_column(String(16))  # local | celery
    owner: Mapped[str | None] = mapped_column(String(200))  # who claimed it: a Celery task id...
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    parts_total: Mapped[int] = mapped_column(Integer, default=0)  # fanned-out (step, rank) tasks
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class JobPart(Base):
    """A finished (step, rank) task of a fanned-out job; one row per task, so a task run
    twice (a redelivered message) is counted once."""

    __tablename__ = "job_parts"
    __table_args__ = (UniqueConstraint("job_id", "part_index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    part_index: Mapped[int] = mapped_column(Integer)
    step: Mapped[int] = mapped_column(Integer)
    rank: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
