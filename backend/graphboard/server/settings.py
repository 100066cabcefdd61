"""Every setting of the service, from one pydantic-settings object (env prefix ``GRAPHBOARD_``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from graphboard.serve_address import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ENV_PREFIX,
    HIGHEST_PORT,
    LOWEST_PORT,
)

STATE_FOLDER = ".graphboard"  # inside the data dir; hidden, so never served as a graph


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    data_dir: Path = Field(default=Path("."), description="folder whose .vis.db files are served")
    host: str = DEFAULT_HOST
    port: int = Field(default=DEFAULT_PORT, ge=LOWEST_PORT, le=HIGHEST_PORT)
    database_url: str | None = Field(
        default=None,
        description="catalog database (SQLAlchemy URL); default SQLite in the state folder",
    )
    state_dir: Path | None = Field(
        default=None,
        description="catalog and derived indexes; default <data_dir>/.graphboard, or a per-user "
        "cache folder when the data dir is read-only",
    )
    page_size: int = Field(default=200, ge=1, description="default page length")
    max_page_size: int = Field(default=5000, ge=1, description="longest page a client may ask for")
    view_cache_nodes: int = Field(
        default=4_000_000,
        ge=1,
        description="nodes of per-graph columns and name indexes kept in memory (~300 bytes each)",
    )
    table_cache_bytes: int = Field(
        default=384 << 20,
        ge=1,
        description="memory of the compare tables kept for paging (estimated bytes); a table "
        "larger than this alone is refused (503 table_too_large: `graphboard table` writes it)",
    )
    max_exports: int = Field(
        default=2, ge=1, description="table downloads (CSV / XLSX) streaming at once"
    )
    search_seconds: float = Field(
        default=10.0,
        gt=0,
        description="longest a regex search may run before it gives up (422 search_too_slow)",
    )
    allow_matching: bool = Field(default=True, description="False: manual matching is refused")
    static_dir: Path | None = Field(default=None, description="served at /static when set")
    templates_dir: Path | None = Field(default=None, description="jinja2 page shells")
    # --- uploads and background builds (the CI API) ---
    broker_url: str | None = Field(
        default=None,
        description="Celery broker (redis://...): builds run on `graphboard worker` processes; "
        "unset: on the server's own worker processes",
    )
    protect_reads: bool = Field(
        default=False, description="the read API needs a bearer token too (uploads always do)"
    )
    protect_writes: bool = Field(
        default=True,
        description="a write to a graph file (match, unmatch, undo, .vis.config import, "
        "suggestions) needs a bearer token; `graphboard serve` prints the viewer's URL with "
        "one. False (GRAPHBOARD_PROTECT_WRITES=0, serve --no-write-token): any local caller "
        "may write; the Host and cross-site checks still apply",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header names served besides localhost, IP addresses, the bound host "
        "and this machine's name when bound to all interfaces (a JSON list in the "
        'environment: GRAPHBOARD_ALLOWED_HOSTS=\'["graphs.example.com"]\'); "*" serves any',
    )
    job_workers: int = Field(
        default=2, ge=1, le=64, description="builds at once on the server's own workers"
    )
    job_attempts: int = Field(
        default=2,
        ge=1,
        description="runs of a job whose process died (a restart, a crash) before it is failed",
    )
    builds_folder: str = Field(
        default="builds",
        pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*$",
        description="folder under the data dir where background builds write their .vis.db",
    )
    max_upload_bytes: int = Field(default=4 << 30, ge=1, description="largest upload body")
    max_unpacked_bytes: int = Field(
        default=32 << 30, ge=1, description="most bytes one upload may unpack to"
    )
    max_archive_files: int = Field(
        default=200_000, ge=1, description="most files one upload may unpack"
    )
    keep_uploads: bool = Field(
        default=False, description="keep unpacked uploads after their job ends"
    )

    @property
    def data_root(self) -> Path:
        return self.data_dir.expanduser().resolve()

    @property
    def state_root(self) -> Path:
        if self.state_dir is not None:
            return self.state_dir.expanduser().resolve()
        inside = self.data_root / STATE_FOLDER
        if inside.is_dir() or os.access(self.data_root, os.W_OK):
            return inside
        # A read-only data dir (a shared mount): keep our state in the user's cache instead.
        digest = hashlib.sha256(str(self.data_root).encode()).hexdigest()[:16]
        cache_home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        return cache_home / "graphboard" / digest

    @property
    def cache_dir(self) -> Path:
        """Sidecars derived for msprobe's files."""
        return self.state_root / "cache"

    @property
    def uploads_dir(self) -> Path:
        """Unpacked uploads, one folder each (on the volume workers share)."""
        return self.state_root / "uploads"

    @property
    def work_dir(self) -> Path:
        """Part files of fanned-out builds, one folder per job."""
        return self.state_root / "jobs"

    @property
    def builds_dir(self) -> Path:
        return self.data_root / self.builds_folder

    @property
    def catalog_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.state_root / 'catalog.db'}"
