"""Errors as JSON: ``{"error": {"code", "message", "details"}}`` with the right status.

Routes raise :class:`ApiError` (or a subclass); validation errors, unknown routes and store
errors are turned into the same shape, so a client reads one format for every failure.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphboard.errors import GraphboardError
from graphboard.refusals import Conflict as Conflict
from graphboard.refusals import Forbidden as Forbidden
from graphboard.refusals import NotFound as NotFound
from graphboard.refusals import Refusal
from graphboard.refusals import UnreadableFile as UnreadableFile

# The refusals the core raises too (manual matching, suggestions) are defined there; the
# server calls their base ApiError and adds its own below.
ApiError = Refusal


class InvalidParameters(ApiError):
    status = 422
    code = "invalid_parameters"


class Unauthorized(ApiError):
    """No bearer token, or one the catalog does not know (RFC 6750: a challenge goes back)."""

    status = 401
    code = "unauthorized"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code, headers={"WWW-Authenticate": "Bearer"})


class PayloadTooLarge(ApiError):
    status = 413
    code = "too_large"


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def _respond(
    status: int,
    code: str,
    message: str,
    details: Any = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        status_code=status,
        content=jsonable_encoder(error_body(code, message, details)),
        headers=headers,
    )


def _validation_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for error in errors[:5]:
        where = ".".join(
            str(item) for item in error.get("loc", ()) if item not in ("query", "body", "path")
        )
        parts.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
    return "; ".join(parts) or "invalid parameters"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, error: ApiError) -> JSONResponse:
        return _respond(error.status, error.code, error.message, error.details, error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        errors = list(error.errors())
        details = [
            {
                "location": list(item.get("loc", ())),
                "message": item.get("msg"),
                "type": item.get("type"),
            }
            for item in errors
        ]
        return _respond(422, "invalid_parameters", _validation_message(errors), details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        return _respond(error.status_code, code, str(error.detail))

    @app.exception_handler(GraphboardError)
    async def store_error(_request: Request, error: GraphboardError) -> JSONResponse:
        return _respond(422, "unreadable_file", str(error))
