"""Who may call what: a bearer token for uploads and jobs, for every write to a graph file
unless the ``protect_writes`` setting is off, and for reads when ``protect_reads`` says so.

The routes are not rewritten for this: ``create_app`` adds :func:`read_access` and
:func:`write_access` to the API's routers as dependencies. A write is told by its method
(anything but GET, HEAD, OPTIONS), so a write route added later is covered without a word.
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


_CREATE_ONE = "create one with `graphboard token create`"
# In a browser, the token comes with the URL the server printed; the page keeps it.
_OPEN_THE_URL = (
    "open the viewer once through the URL `graphboard serve` printed (/?token=...), "
    "or create a token with `graphboard token create`"
)


def _identify(
    catalog: Catalog, credentials: HTTPAuthorizationCredentials | None, hint: str = _CREATE_ONE
) -> TokenIdentity:
    if credentials is None or not credentials.credentials:
        raise Unauthorized(
            f"this endpoint needs a bearer token (Authorization: Bearer <token>); {hint}",
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


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # RFC 9110 9.2.1: they change nothing


def read_access(request: Request, settings: SettingsDep, catalog: CatalogDep) -> None:
    """Reads are open unless ``GRAPHBOARD_PROTECT_READS`` is set."""
    if not settings.protect_reads:
        return
    _identify_request(request, catalog)


def write_access(request: Request, settings: SettingsDep, catalog: CatalogDep) -> None:
    """Writes need a token unless ``GRAPHBOARD_PROTECT_WRITES=0``: on a shared or local
    machine, any process or page that can reach the port could otherwise change a file."""
    if request.method in SAFE_METHODS or not settings.protect_writes:
        return
    _identify_request(request, catalog, _OPEN_THE_URL)


def _identify_request(request: Request, catalog: Catalog, hint: str = _CREATE_ONE) -> None:
    header = request.headers.get("authorization", "")
    scheme, _, credentials = header.partition(" ")
    given = (
        HTTPAuthorizationCredentials(scheme=scheme, credentials=credentials.strip())
        if scheme.lower() == "bearer"
        else None
    )
    _identify(catalog, given, hint)
