"""The dump folders under the data dir that a build can start from."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from graphboard.server.auth import TokenDep
from graphboard.server.deps import SettingsDep
from graphboard.server.jobs.schemas import AUTH_ERRORS, DumpFolderOut, DumpListOut
from graphboard.server.uploads.dumps import find_dump_folders

router = APIRouter(prefix="/api/dumps", tags=["jobs"])


@router.get("", response_model=DumpListOut, responses=AUTH_ERRORS, summary="Dump folders")
async def list_dumps(_token: TokenDep, settings: SettingsDep) -> DumpListOut:
    """Folders that look like dumps (rank folders, rankN or stepN folders), each checked as
    a build would check it: an invalid one is listed with the reason. Hidden folders and the
    server's state are skipped."""
    folders, mappings, truncated = await run_in_threadpool(find_dump_folders, settings.data_root)
    return DumpListOut(
        folders=[DumpFolderOut.model_validate(found, from_attributes=True) for found in folders],
        layer_mappings=mappings,
        truncated=truncated,
    )
