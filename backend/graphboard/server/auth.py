"""Who may call what: a bearer token for uploads and jobs, and for reads when the
``protect_reads`` setting says so.

The read routes are not rewritten for this: ``create_app`` adds :func:`read_access` to their
routers as a dependency, which does nothing unless reads are protected.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from graphboard.server.catalog import Catalog, tokens
from graphboard.server.catalog.tokens import TokenIdentity
from graphboard.server.deps import CatalogDep, SettingsDep
from graphboard.server.errors import Unauthorized

# auto_error=False: a missing header gets our JSON envelope (and a 401, not FastAPI's 403).
_bearer = HTTPBearer(
    auto_error=False,
    description="a token from `graphboard token create`: Authorization: Bearer <token>",
)


def _identify(catalog: Catalog, credentials: HTTPAuthorizationCredentials | None) -> TokenIdentity:
    if credentials is None or not credentials.credentials:
        raise Unauthorized(
            "this endpoint needs a bearer token (Authorization: Bearer <token>); "
            "create one with `graphboard token create`",
            code="missing_token",
        )
    with catalog.session() as session:
        identity = tokens.verify(session, credentials.credentials.strip())
    if identity is None:
        raise Unauthorized("the bearer token is unknown or revoked", code="invalid_token")
    return identity


def require_token(
    catalog: CatalogDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TokenIdentity:
    return _identify(catalog, credentials)


TokenDep = Annotated[TokenIdentity, Depends(require_token)]


def read_access(request: Request, settings: SettingsDep, catalog: CatalogDep) -> None:
    """Reads are open unless ``GRAPHBOARD_PROTECT_READS`` is set."""
    if not settings.protect_reads:
        return
    header = request.headers.get("authorization", "")
    scheme, _, credentials = header.partition(" ")
    given = (
        HTTPAuthorizationCredentials(scheme=scheme, credentials=credentials.strip())
        if scheme.lower() == "bearer"
        else None
    )
    _identify(catalog, given)
