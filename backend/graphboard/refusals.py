"""Refusals: a request on a file that cannot be done as asked, with a stable code.

Raised by the core code a request runs (manual matching, suggestions) as well as by the
server's routes. ``status`` is the HTTP status the server answers with (server/errors.py turns
every refusal into its JSON error); a command turns one into its one-line error.
"""

from __future__ import annotations

from typing import Any


class Refusal(Exception):
    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        self.headers = headers


class NotFound(Refusal):
    status = 404
    code = "not_found"


class Conflict(Refusal):
    status = 409
    code = "conflict"


class Forbidden(Refusal):
    status = 403
    code = "forbidden"


class UnreadableFile(Refusal):
    """The file exists but is not a .vis.db this service can read."""

    status = 422
    code = "unreadable_file"
