"""Refusing requests that come from the wrong place: a Host header this server does not go by
(DNS rebinding) and a write sent by another site's page (cross-site request forgery).

*DNS rebinding*: a page on attacker.example makes its name resolve to 127.0.0.1, and the
browser, seeing one origin, lets the page read and write the local server. The request still
says ``Host: attacker.example``, so a server that answers only to its own names is out of
reach. Allowed: localhost, any IP address (a rebinding needs a DNS name: an address is never
an attacker's), the bound host, this machine's name when bound to all interfaces, and what
``allowed_hosts`` adds ("*": any).

*Cross-site writes*: a form on another site can POST to the server (undo has no body, so a
plain form undid 25 pairs); the browser sends the cookie-less request with ``Origin`` and
``Sec-Fetch-Site`` headers saying where it comes from. A write (any method but GET, HEAD,
OPTIONS) is refused when ``Sec-Fetch-Site`` is present and not ``same-origin`` or ``none``
(typed by the user), or when ``Origin`` is present and names another host than the request's
(``null``, sent from sandboxed or privacy-masked contexts, included). A client that is no
browser (curl, ``ci-check``) sends neither and is judged by its token alone. Reads stay
linkable from anywhere: what a page elsewhere may read of them is the browser's CORS rule,
and this server sends no CORS header.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from graphboard.server.auth import SAFE_METHODS
from graphboard.server.errors import error_body

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]"})
SAME_SITE_FETCHES = frozenset({"same-origin", "none"})


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port, lower case; an IPv6 address unbracketed."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name, _, _port = host.partition(":") if host.count(":") == 1 else (host, "", "")
    return name.rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostNames:
    """The Host names a server bound to ``bound`` answers to."""

    def __init__(self, bound: str, extra: Iterable[str]) -> None:
        names = set(LOOPBACK_NAMES) | {host_name(name) for name in extra}
        if bound.strip("[]") in WILDCARD_HOSTS or bound in WILDCARD_HOSTS:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        else:
            names.add(host_name(bound))
        self.any = "*" in names
        self.names = frozenset(names)

    def allows(self, host_header: str) -> bool:
        if self.any:
            return True
        name = host_name(host_header)
        return bool(name) and (name in self.names or _is_address(name))


def cross_site(headers: dict[bytes, bytes]) -> str | None:
    """Why a write with these headers comes from another site, or None."""
    fetch_site = headers.get(b"sec-fetch-site")
    if fetch_site is not None and fetch_site.decode("latin-1").lower() not in SAME_SITE_FETCHES:
        return f"Sec-Fetch-Site: {fetch_site.decode('latin-1')}"
    origin = headers.get(b"origin")
    if origin is None:
        return None
    text = origin.decode("latin-1").strip()
    scheme, _, netloc = text.partition("://")
    host = headers.get(b"host", b"").decode("latin-1").strip().lower()
    if not scheme or netloc.rstrip("/").lower() != host:
        return f"Origin {text!r} is not this server ({host!r})"
    return None


class RequestOrigin:
    """Pure ASGI middleware: the Host check for every request, the cross-site check for writes."""

    def __init__(self, app: ASGIApp, bound_host: str, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = HostNames(bound_host, allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.hosts.allows(host):
            await _refuse(
                send,
                "unknown_host",
                f"Host {host!r} is not a name this server answers to (a DNS rebinding guard); "
                "an operator adds names with GRAPHBOARD_ALLOWED_HOSTS",
            )
            return
        if scope.get("method", "GET") not in SAFE_METHODS:
            reason = cross_site(headers)
            if reason is not None:
                await _refuse(
                    send, "cross_site", f"a write from another site is refused ({reason})"
                )
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
