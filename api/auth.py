"""Who is calling: a JWT on every call once ``auth.enabled`` is set, read into a Caller.

Tokens are signed with HS256 and the shared ``auth.jwt_secret`` (or RS256 against ``auth.jwt_public_key``), carry
``exp`` and the configured audience, and name the caller (``sub``), the tenant whose private documents it may read
(``tenant``; none means the public corpus only) and its roles (``roles``; ``admin`` opens the debug endpoints).
The token comes in the ``Authorization: Bearer`` header, or as ``access_token`` in the query string for clients
that cannot set headers (the browser's EventSource).

With auth off (the embedded default on a laptop) every caller is a local administrator of the public corpus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

import jwt
from fastapi import Depends, Request

from api.errors import ForbiddenError, UnauthorizedError
from api.settings import AuthSettings

# A tenant claim names an owner as ingestion does (IngestionSettings.tenant); a role is one short word.
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9._-]{0,128}$")
ROLE_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
MAX_ROLES = 32


@dataclass(frozen=True, slots=True)
class Caller:
    subject: str
    tenant: str = ""
    roles: frozenset[str] = frozenset()
    issuer: str = ""

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @property
    def key(self) -> str:
        """Who this is, as one string no other caller has: issuer, tenant and subject, each percent-encoded (so a
        '/' or '|' inside one cannot imitate the separator) and joined."""
        return "|".join(quote(part, safe="") for part in (self.issuer, self.tenant, self.subject))

    def session_key(self, session_id: str) -> str:
        """The checkpoint thread for a session: callers never share one, even if they pick the same id."""
        return session_id if self == LOCAL else f"{self.key}|{quote(session_id, safe='')}"


LOCAL = Caller("local", roles=frozenset({"admin"}))


def _claims_caller(claims: dict[str, Any]) -> Caller:
    """A Caller from verified claims, refusing claims of the wrong shape rather than guessing what they mean."""
    subject, tenant, roles = claims.get("sub"), claims.get("tenant") or "", claims.get("roles", [])
    if not isinstance(subject, str) or not subject:
        raise UnauthorizedError("the access token's sub claim must be a non-empty string")
    if not isinstance(tenant, str) or not TENANT_PATTERN.match(tenant):
        raise UnauthorizedError("the access token's tenant claim must be a tenant name (letters, digits, . _ -)")
    if (
        not isinstance(roles, list)
        or len(roles) > MAX_ROLES
        or not all(isinstance(r, str) and ROLE_PATTERN.match(r) for r in roles)
    ):
        raise UnauthorizedError("the access token's roles claim must be a list of role names")
    issuer = claims.get("iss") or ""
    return Caller(subject=subject, tenant=tenant, roles=frozenset(roles), issuer=str(issuer))


# Our own words for each way a token fails: the JWT library's messages describe its internals.
_TOKEN_PROBLEMS: tuple[tuple[type[jwt.InvalidTokenError], str], ...] = (
    (jwt.ExpiredSignatureError, "the access token has expired; sign in again"),
    (jwt.ImmatureSignatureError, "the access token is not valid yet"),
    (jwt.InvalidAudienceError, "the access token was issued for another service"),
    (jwt.InvalidIssuerError, "the access token was issued by an issuer this service does not trust"),
    (jwt.MissingRequiredClaimError, "the access token lacks a required claim (sub, exp)"),
)


def verify_token(token: str, cfg: AuthSettings) -> Caller:
    public_key = cfg.jwt_public_key.get_secret_value()
    key, algorithm = (public_key, "RS256") if public_key else (cfg.jwt_secret.get_secret_value(), "HS256")
    try:
        claims = jwt.decode(
            token, key, algorithms=[algorithm], audience=cfg.audience, issuer=cfg.issuer or None,
            options={"require": ["exp", "sub"]}, leeway=cfg.leeway_s,
        )  # fmt: skip
    except jwt.InvalidTokenError as exc:
        message = next((m for kind, m in _TOKEN_PROBLEMS if isinstance(exc, kind)), "the access token is not valid")
        raise UnauthorizedError(message) from None
    return _claims_caller(claims)


def current_caller(request: Request) -> Caller:
    cfg: AuthSettings = request.app.state.services.settings.auth
    if not cfg.enabled:
        return LOCAL
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        token = request.query_params.get("access_token", "")
    if not token:
        raise UnauthorizedError("this endpoint needs an access token (Authorization: Bearer <JWT>)")
    return verify_token(token.strip(), cfg)


def admin_caller(caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    if not caller.is_admin:
        raise ForbiddenError("this endpoint is for administrators (a token with the 'admin' role)")
    return caller


CallerDep = Annotated[Caller, Depends(current_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]
