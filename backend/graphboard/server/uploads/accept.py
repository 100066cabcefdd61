"""From a received form to a queued job: unpack, find the dumps, validate, record.

Everything that can be refused is refused here, before a job exists: an unsafe or damaged
archive (400, the member named), one that unpacks too large (413), and dumps that
graph_build would not accept (422, with its reason: discover() checks the layout and that
every rank folder holds construct.json, dump.json and stack.json; the pairing of target and
golden and the layer-mapping file are checked too).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.orm import Session

from graphboard.errors import GraphboardError
from graphboard.pipeline import BuildOptions, plan_build
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.tokens import TokenIdentity
from graphboard.server.errors import ApiError, InvalidParameters, PayloadTooLarge
from graphboard.server.jobs import records
from graphboard.server.jobs.schemas import UploadForm
from graphboard.server.settings import Settings
from graphboard.server.uploads import records as uploads
from graphboard.server.uploads.archives import ArchiveError, ArchiveTooLarge, Budget, unpack
from graphboard.server.uploads.dumps import dump_root, relative_message
from graphboard.server.uploads.multipart import ReceivedForm

DUMP_FIELDS = ("target", "golden")
MAPPING_FIELD = "layer_mapping"
MAX_MAPPING_BYTES = 1 << 20
TEXT_FIELDS = set(UploadForm.model_fields)


class InvalidDump(InvalidParameters):
    code = "invalid_dump"


def file_limits(settings: Settings) -> dict[str, int]:
    return {
        "target": settings.max_upload_bytes,
        "golden": settings.max_upload_bytes,
        MAPPING_FIELD: MAX_MAPPING_BYTES,
    }


def _flags(form: ReceivedForm) -> UploadForm:
    try:
        return UploadForm.model_validate(form.fields)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        raise InvalidParameters(problems, code="invalid_parameters") from None


def check_flags(*, golden: bool, fuzzy_match: bool, layer_mapping: bool) -> None:
    """graph_build's rules: -fm and -lm need a golden dump."""
    if not golden and (fuzzy_match or layer_mapping):
        flag = "fuzzy_match" if fuzzy_match else "layer_mapping"
        raise InvalidParameters(f"{flag} needs a golden dump", code="needs_golden")


def unpack_fields(
    form: ReceivedForm,
    folder: Path,
    budget: Budget,
    root_of: Callable[[Path], Path] = dump_root,
) -> dict[str, Path]:
    """Unpack each dump field's archive into ``folder/<field>``; what ``root_of`` finds in it
    (the dump inside, by default) per field. Refusals name the field, archive and member."""
    roots: dict[str, Path] = {}
    for field in DUMP_FIELDS:
        received = form.files.get(field)
        if received is None:
            continue
        dest = folder / field
        try:
            unpack(received.path, dest, budget)
        except ArchiveTooLarge as error:
            raise PayloadTooLarge(
                f"{field} ({received.filename}): {error}",
                code=error.code,
                details={"field": field, "member": error.member},
            ) from None
        except ArchiveError as error:
            raise ApiError(
                f"{field} ({received.filename}): {error}",
                code=error.code,
                details={"field": field, "member": error.member},
            ) from None
        received.path.unlink()  # the unpacked copy is what the build reads
        roots[field] = root_of(dest)
    return roots


def validate(options: BuildOptions, base: Path) -> None:
    try:
        plan_build(options)
    except GraphboardError as error:
        raise InvalidDump(relative_message(error, base)) from None


def record_upload(
    session: Session,
    upload_id: str,
    token: TokenIdentity,
    folder: Path,
    form: ReceivedForm,
    budget: Budget,
) -> None:
    """The upload's catalog row, flushed: before the job that points at it."""
    uploads.create(
        session,
        upload_id=upload_id,
        token_id=token.id,
        folder=folder,
        archive_bytes=sum(received.size for received in form.files.values()),
        unpacked_bytes=budget.bytes_used,
        file_count=budget.files_used,
    )
    session.flush()


def accept_upload(
    settings: Settings,
    catalog: Catalog,
    runner: str,
    upload_id: str,
    folder: Path,
    form: ReceivedForm,
    token: TokenIdentity,
) -> str:
    """Unpack and check an upload received into ``folder``; queue its job; its id."""
    if "target" not in form.files:
        raise InvalidParameters(
            "target: a .tar.gz or .zip of the target dump folder is required",
            code="missing_target",
        )
    flags = _flags(form)
    check_flags(
        golden="golden" in form.files,
        fuzzy_match=flags.fuzzy_match,
        layer_mapping=MAPPING_FIELD in form.files,
    )
    budget = Budget(settings.max_unpacked_bytes, settings.max_archive_files)
    roots = unpack_fields(form, folder, budget)
    mapping = None
    if MAPPING_FIELD in form.files:
        mapping = folder / "layer_mapping.yaml"
        os.replace(form.files[MAPPING_FIELD].path, mapping)
    options = BuildOptions(
        target=roots["target"],
        golden=roots.get("golden"),
        output_dir=settings.builds_dir,
        fuzzy_match=flags.fuzzy_match,
        overflow_check=flags.overflow_check,
        layer_mapping=mapping,
    )
    validate(options, folder)
    with catalog.session() as session:
        record_upload(session, upload_id, token, folder, form, budget)
        job = records.create(
            session,
            target=options.target,
            golden=options.golden,
            layer_mapping=mapping,
            fuzzy_match=flags.fuzzy_match,
            overflow_check=flags.overflow_check,
            runner=runner,
            upload_id=upload_id,
            token_id=token.id,
        )
        session.commit()
        return job.id
