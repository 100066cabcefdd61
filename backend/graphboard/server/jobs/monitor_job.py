"""Monitor compares as jobs (issue 33): ``graphboard monitor`` of two runs under the data dir,
run by the same runners as builds (the job's ``kind`` is ``monitor``), its ``.trend.db``
written into the builds folder and opened on the /monitor page; its verdict is the summary
and the first departure, with the dump config and the .vis.db files of that step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from pydantic import Field
from sqlalchemy.orm import Session

from graphboard.monitor.compare import compare_runs, locate_run, read_run
from graphboard.monitor.formats import RANK_FOLDER, TREND_DB_SUFFIX
from graphboard.monitor.run import MonitorInputError
from graphboard.monitor.store import save_report
from graphboard.monitor.views import read_report
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Job
from graphboard.server.catalog.tokens import TokenIdentity
from graphboard.server.errors import InvalidParameters
from graphboard.server.jobs import records
from graphboard.server.monitor_links import departure_graphs
from graphboard.server.schemas import ApiModel
from graphboard.server.settings import Settings
from graphboard.server.uploads.accept import record_upload, unpack_fields
from graphboard.server.uploads.archives import Budget
from graphboard.server.uploads.dumps import BadFolder, relative_message, resolve_folder
from graphboard.server.uploads.multipart import ReceivedForm

MONITOR = "monitor"
Progress = Callable[[float, str], None]  # run_build's progress callback's shape


class MonitorJobRequest(ApiModel):
    """``POST /api/monitor/jobs``: compare two runs' monitor output under the data dir."""

    target: str = Field(
        min_length=1,
        max_length=1024,
        description="the target run: a monitor output folder (of <time>-rank<r>-<id>/ "
        "folders) or a .trend.db file under the data dir, as /api/monitor/runs lists them",
    )
    golden: str = Field(min_length=1, max_length=1024, description="the golden run, likewise")


class MonitorVerdictOut(ApiModel):
    """A monitor job's answer: did the runs part, and where first."""

    kind: str = Field(default=MONITOR, description="always monitor")
    job_id: str
    file: str = Field(description="the .trend.db's id under the data dir (/api/monitor/{file})")
    summary: str = Field(description="graphboard monitor's summary line")
    departed: bool = Field(description="true when the runs part beyond the noise")
    first_departure: dict[str, Any] | None = Field(
        description="step, rank, module, metric, kind, statistic, both values (null: none)"
    )
    departures: dict[str, Any] = Field(description="the first departure per kind of metric")
    url: str = Field(description="the /monitor page on this file")
    dump_config_url: str | None = Field(
        description="msprobe's dump config.json for the first departure's step and modules"
    )
    graphs: list[dict[str, Any]] = Field(
        description=".vis.db files under the data dir showing that step (graph, match, url)"
    )


def monitor_url(file_id: str) -> str:
    return "/monitor?" + urlencode({"file": file_id})


def output_name(job_id: str) -> str:
    return f"monitor_{job_id}{TREND_DB_SUFFIX}"


def _run(settings: Settings, field: str, relative: str) -> Path:
    try:
        found = resolve_folder(settings.data_root, relative)  # a file is resolved alike
    except BadFolder as error:
        raise InvalidParameters(f"{field}: {error}", code="invalid_folder") from None
    if found == settings.data_root or found.is_relative_to(settings.state_root):
        raise InvalidParameters(f"{field}: {relative!r} is not a monitor run", code="invalid_run")
    try:
        locate_run(found)
    except MonitorInputError as error:
        raise InvalidParameters(
            f"{field}: {relative_message(error, settings.data_root)}", code="invalid_run"
        ) from None
    return found


def create_monitor_job(
    settings: Settings,
    catalog: Catalog,
    runner: str,
    request: MonitorJobRequest,
    token: TokenIdentity,
) -> str:
    target = _run(settings, "target", request.target)
    golden = _run(settings, "golden", request.golden)
    with catalog.session() as session:
        return _record(session, target, golden, runner, token)


def _record(
    session: Session,
    target: Path,
    golden: Path,
    runner: str,
    token: TokenIdentity,
    upload_id: str | None = None,
) -> str:
    """The queued monitor job of two runs, committed; its id."""
    job = records.create(
        session,
        target=target,
        golden=golden,
        layer_mapping=None,
        fuzzy_match=False,
        overflow_check=False,
        runner=runner,
        upload_id=upload_id,
        token_id=token.id,
        kind=MONITOR,
    )
    session.commit()
    return job.id


def _monitor_root(unpacked: Path) -> Path:
    """The run inside an unpacked archive: down through lone wrapper folders to the folder
    holding rank folders or a .trend.db (an archive of rank folders is that folder itself)."""
    root = unpacked
    while True:
        entries = [entry for entry in root.iterdir() if not entry.name.startswith(".")]
        if any(
            entry.name.endswith(TREND_DB_SUFFIX)
            or (RANK_FOLDER.match(entry.name) and entry.is_dir())
            for entry in entries
        ):
            return root
        if len(entries) != 1 or not entries[0].is_dir() or entries[0].is_symlink():
            return root  # no run: locate_run says why
        root = entries[0]


def accept_monitor_upload(
    settings: Settings,
    catalog: Catalog,
    runner: str,
    upload_id: str,
    folder: Path,
    form: ReceivedForm,
    token: TokenIdentity,
) -> str:
    """Unpack and check two uploaded runs (``target`` and ``golden``, each a .tar.gz or .zip
    of a monitor output folder or a .trend.db); queue their monitor job; its id."""
    missing = [field for field in ("target", "golden") if field not in form.files]
    if missing:
        raise InvalidParameters(
            f"{missing[0]}: a .tar.gz or .zip of the {missing[0]} run's monitor output is required",
            code=f"missing_{missing[0]}",
        )
    budget = Budget(settings.max_unpacked_bytes, settings.max_archive_files)
    roots = unpack_fields(form, folder, budget, _monitor_root)
    for root in roots.values():
        try:
            locate_run(root)
        except MonitorInputError as error:
            raise InvalidParameters(relative_message(error, folder), code="invalid_run") from None
    with catalog.session() as session:
        record_upload(session, upload_id, token, folder, form, budget)
        return _record(session, roots["target"], roots["golden"], runner, token, upload_id)


def remove_leftovers(settings: Settings, job_id: str) -> None:
    """An earlier attempt's file (renamed into place, but its process died before the job was
    recorded done) and temporary file: this attempt writes them afresh."""
    (settings.builds_dir / output_name(job_id)).unlink(missing_ok=True)
    for leftover in settings.builds_dir.glob(f".{output_name(job_id)}.*"):
        leftover.unlink(missing_ok=True)


def run_monitor(settings: Settings, job: Job, progress: Progress) -> tuple[str, str]:
    """Compare a monitor job's runs into its file in the builds folder: the file's id and
    the summary line (an error as graphboard monitor raises it)."""
    progress(0.0, "reading the target run")
    target = read_run(Path(job.target))
    progress(0.4, "reading the golden run")
    golden = read_run(Path(job.golden or ""))
    progress(0.8, "comparing")
    report = compare_runs(target, golden)
    settings.builds_dir.mkdir(parents=True, exist_ok=True)
    remove_leftovers(settings, job.id)
    path = save_report(report, settings.builds_dir, output_name(job.id))
    file_id = path.relative_to(settings.data_root).as_posix().removesuffix(TREND_DB_SUFFIX)
    return file_id, report.summary()


def monitor_verdict(settings: Settings, job: Job, path: Path) -> MonitorVerdictOut:
    """The verdict of a done monitor job whose file is ``path``."""
    file_id = str(job.graph_id)
    report = read_report(path)
    first = report.get("first_departure")
    departures = report.get("departures")
    return MonitorVerdictOut(
        job_id=job.id,
        file=file_id,
        summary=str(report.get("summary", "")),
        departed=first is not None,
        first_departure=first if isinstance(first, dict) else None,
        departures=departures if isinstance(departures, dict) else {},
        url=monitor_url(file_id),
        dump_config_url=f"/api/monitor/{file_id}/dump-config" if first else None,
        graphs=departure_graphs(settings, report),
    )
