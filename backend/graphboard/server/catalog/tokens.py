"""Bearer tokens of the upload and job endpoints (the catalog's ``api_tokens``).

A token reads ``gbt_<prefix>_<secret>``: the prefix is public and finds the row, the secret
is 256 random bits. Only the SHA-256 of the whole token is stored: a leaked catalog gives
no usable token, and a fast hash is enough because the secret is not guessable (unlike a
password, it needs no slow key derivation). The stored and presented hashes are compared in
constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from graphboard.server.catalog.models import ApiToken

SCHEME = "gbt"
_SHAPE = re.compile(r"^gbt_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$")
# last_used_at is for people ("is this token still in use?"); writing it on every request
# would turn each read into a write.
_TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class NewToken:
    id: int
    name: str
    prefix: str
    token: str  # shown once


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    id: int
    name: str
    prefix: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(session: Session, name: str | None = None) -> NewToken:
    prefix = secrets.token_hex(6)
    token = f"{SCHEME}_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken(
        name=(name or f"token {prefix}")[:200],
        prefix=prefix,
        token_hash=_digest(token),
        created_at=datetime.now(UTC),
    )
    session.add(row)
    session.commit()
    return NewToken(row.id, row.name, prefix, token)


def verify(session: Session, token: str) -> TokenIdentity | None:
    """The token's identity, or None when it is malformed, unknown or revoked."""
    shape = _SHAPE.match(token)
    if shape is None:
        return None
    row = session.scalar(select(ApiToken).where(ApiToken.prefix == shape.group(1)))
    if row is None or not hmac.compare_digest(row.token_hash, _digest(token)):
        return None
    if row.revoked_at is not None:
        return None
    now = datetime.now(UTC)
    last = row.last_used_at
    if last is not None and last.tzinfo is None:  # SQLite hands back naive datetimes
        last = last.replace(tzinfo=UTC)
    if last is None or now - last > _TOUCH_EVERY:
        session.execute(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=now))
        session.commit()
    return TokenIdentity(row.id, row.name, row.prefix)


def revoke(session: Session, prefix: str) -> bool:
    """Revoke the token whose prefix (or whole text) is given; False when none matches."""
    shape = _SHAPE.match(prefix)
    key = shape.group(1) if shape is not None else prefix
    done = session.execute(
        update(ApiToken)
        .where(ApiToken.prefix == key, ApiToken.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    session.commit()
    return bool(getattr(done, "rowcount", 0))


def listed(session: Session) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.id)))
