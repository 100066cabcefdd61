"""HTTP calls of ``graphboard ci-check``: upload, job state, verdict. Errors come back from
the server as ``{"error": {"code", "message"}}`` and leave here as :class:`CiError`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

UPLOAD_TIMEOUT = httpx.Timeout(30.0, read=600.0, write=600.0)
CALL_TIMEOUT = httpx.Timeout(30.0)


class CiError(Exception):
    """Something that keeps ci-check from giving a verdict (one line, for a CI log)."""


def _message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        error = {}
    code = error.get("code") if isinstance(error, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return f"{response.status_code} {code or response.reason_phrase}: {text or response.text[:200]}"


class Client:
    def __init__(self, server: str, token: str, *, transport: httpx.BaseTransport | None = None):
        self.server = server.rstrip("/")
        self.http = httpx.Client(
            base_url=self.server,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            transport=transport,
            timeout=CALL_TIMEOUT,
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise CiError(f"cannot reach {self.server}: {error}") from None
        if response.status_code >= 400:
            raise CiError(_message(response))
        body: dict[str, Any] = response.json()
        return body

    def upload(
        self,
        target: Path,
        golden: Path | None,
        layer_mapping: Path | None,
        *,
        fuzzy_match: bool,
        overflow_check: bool,
    ) -> dict[str, Any]:
        """POST /api/uploads; httpx streams the files from disk in chunks."""
        handles = {"target": target.open("rb")}
        if golden is not None:
            handles["golden"] = golden.open("rb")
        if layer_mapping is not None:
            handles["layer_mapping"] = layer_mapping.open("rb")
        paths = {"target": target, "golden": golden, "layer_mapping": layer_mapping}
        try:
            files = {
                field: (Path(str(paths[field])).name, handle, "application/octet-stream")
                for field, handle in handles.items()
            }
            data = {
                "fuzzy_match": str(fuzzy_match).lower(),
                "overflow_check": str(overflow_check).lower(),
            }
            return self._call(
                "POST", "/api/uploads", files=files, data=data, timeout=UPLOAD_TIMEOUT
            )
        finally:
            for handle in handles.values():
                handle.close()

    def upload_monitor(self, target: Path, golden: Path) -> dict[str, Any]:
        """POST /api/monitor/uploads: two runs' monitor output, as archives."""
        with target.open("rb") as target_file, golden.open("rb") as golden_file:
            files = {
                "target": (target.name, target_file, "application/octet-stream"),
                "golden": (golden.name, golden_file, "application/octet-stream"),
            }
            return self._call("POST", "/api/monitor/uploads", files=files, timeout=UPLOAD_TIMEOUT)

    def check_token(self) -> None:
        """Fail on a bad token or server before packing what may be gigabytes."""
        self._call("GET", "/api/jobs", params={"limit": 1})

    def job(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/api/jobs/{job_id}")

    def verdict(self, job_id: str, rules: str | None = None) -> dict[str, Any]:
        """The job's verdict under ``rules``; None: the server's default for the file."""
        params = {"rules": rules} if rules else {}
        return self._call("GET", f"/api/jobs/{job_id}/verdict", params=params)
