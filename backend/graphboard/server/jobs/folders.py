"""Jobs on dump folders already under the data dir (the Build page's first choice)."""

from __future__ import annotations

from pathlib import Path

from graphboard.pipeline import BuildOptions
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.tokens import TokenIdentity
from graphboard.server.errors import InvalidParameters
from graphboard.server.jobs import records
from graphboard.server.jobs.schemas import JobRequest
from graphboard.server.settings import Settings
from graphboard.server.uploads.accept import check_flags, validate
from graphboard.server.uploads.dumps import (
    MAPPING_SUFFIXES,
    BadFolder,
    refuse_links_out,
    resolve_folder,
)


def _folder(settings: Settings, field: str, relative: str) -> Path:
    try:
        found = resolve_folder(settings.data_root, relative)
    except BadFolder as error:
        raise InvalidParameters(f"{field}: {error}", code="invalid_folder") from None
    if found == settings.data_root or found.is_relative_to(settings.state_root):
        raise InvalidParameters(
            f"{field}: {relative!r} is not a dump folder", code="invalid_folder"
        )
    return found


def _dump_folder(settings: Settings, field: str, relative: str) -> Path:
    """A dump folder under the data dir whose every file a build reads is there too."""
    found = _folder(settings, field, relative)
    try:
        refuse_links_out(settings.data_root, found)
    except BadFolder as error:
        raise InvalidParameters(f"{field}: {error}", code="invalid_folder") from None
    return found


def create_folder_job(
    settings: Settings, catalog: Catalog, runner: str, request: JobRequest, token: TokenIdentity
) -> str:
    check_flags(
        golden=request.golden is not None,
        fuzzy_match=request.fuzzy_match,
        layer_mapping=request.layer_mapping is not None,
    )
    target = _dump_folder(settings, "target", request.target)
    golden = _dump_folder(settings, "golden", request.golden) if request.golden else None
    noise_reference = None
    if request.noise_reference is not None:  # graph_build -nr
        if golden is None:
            raise InvalidParameters("noise_reference needs a golden dump", code="needs_golden")
        noise_reference = _dump_folder(settings, "noise_reference", request.noise_reference)
    mapping = None
    if request.layer_mapping is not None:
        mapping = _folder(settings, "layer_mapping", request.layer_mapping)
        if not mapping.is_file() or not mapping.name.endswith(MAPPING_SUFFIXES):
            raise InvalidParameters(
                f"layer_mapping: {request.layer_mapping!r} is not a .yaml file",
                code="invalid_folder",
            )
    options = BuildOptions(
        target=target,
        golden=golden,
        output_dir=settings.builds_dir,
        fuzzy_match=request.fuzzy_match,
        overflow_check=request.overflow_check,
        layer_mapping=mapping,
        noise_reference=noise_reference,
    )
    validate(options, settings.data_root)
    with catalog.session() as session:
        job = records.create(
            session,
            target=target,
            golden=golden,
            layer_mapping=mapping,
            fuzzy_match=request.fuzzy_match,
            overflow_check=request.overflow_check,
            runner=runner,
            token_id=token.id,
            noise_reference=noise_reference,
        )
        session.commit()
        return job.id
