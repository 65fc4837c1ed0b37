"""Who is calling: a JWT on every call once ``auth.enabled`` is set, read into a Caller.

Tokens are signed with HS256 and the shared ``auth.jwt_secret`` (or RS256 against ``auth.jwt_public_key``), carry
``exp`` and the configured audience, and name the caller (``sub``), the tenant whose private documents it may read
(``tenant``; none means the public corpus only) and its roles (``roles``; ``admin`` opens the debug endpoints).
The token comes in the ``Authorization: Bearer`` header, or as ``access_token`` in the query string for clients
that cannot set headers (the browser's EventSource).

With auth off (the embedded default on a laptop) every caller is a local administrator of the public corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import jwt
from fastapi import Depends, Request

from api.errors import ForbiddenError, UnauthorizedError
from api.settings import AuthSettings


@dataclass(frozen=True, slots=True)
class Caller:
    subject: str
    tenant: str = ""
    roles: frozenset[str] = frozenset()

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def session_key(self, session_id: str) -> str:
        """The checkpoint thread for a session: callers never share one, even if they pick the same id."""
        return session_id if self.subject == LOCAL.subject else f"{self.tenant}/{self.subject}/{session_id}"


LOCAL = Caller("local", roles=frozenset({"admin"}))


def verify_token(token: str, cfg: AuthSettings) -> Caller:
    public_key = cfg.jwt_public_key.get_secret_value()
    key, algorithm = (public_key, "RS256") if public_key else (cfg.jwt_secret.get_secret_value(), "HS256")
    try:
        claims = jwt.decode(
            token, key, algorithms=[algorithm], audience=cfg.audience, issuer=cfg.issuer or None,
            options={"require": ["exp", "sub"]}, leeway=cfg.leeway_s,
        )  # fmt: skip
    except jwt.ExpiredSignatureError:
        raise UnauthorizedError("the access token has expired; sign in again") from None
    except jwt.InvalidTokenError as exc:
        raise UnauthorizedError(f"the access token is not valid ({exc})") from None
    roles = claims.get("roles", [])
    if isinstance(roles, str):
        roles = roles.split()
    tenant = claims.get("tenant") or ""
    if not isinstance(tenant, str):
        raise UnauthorizedError("the access token's tenant claim must be a string")
    return Caller(subject=str(claims["sub"]), tenant=tenant, roles=frozenset(map(str, roles)))


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
