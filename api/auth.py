"""Who is calling: a JWT on every call once ``auth.enabled`` is set, read into a Caller.

Tokens are signed with HS256 and the shared ``auth.jwt_secret`` (or RS256 against ``auth.jwt_public_key``), carry
``exp`` and the configured audience, and name the caller (``sub``), the tenant whose private documents it may read
(``tenant``; none means the public corpus only) and its roles (``roles``; ``admin`` opens the debug endpoints).
The token comes in the ``Authorization: Bearer`` header, or as ``access_token`` in the query string for clients
that cannot set headers (the browser's EventSource).

With auth off (the embedded default on a laptop) every caller is a local administrator of the public corpus.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

import httpx
import jwt
from fastapi import Depends, Request

from api.errors import BackendError, ForbiddenError, TooManyRequestsError, UnauthorizedError
from api.settings import AuthSettings, IdentitySettings
from api.tools.cache import TTLCache

log = logging.getLogger(__name__)

# A tenant claim names an owner as ingestion does (IngestionSettings.tenant); a role is one short word.
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9._-]{0,128}$")
ROLE_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
MAX_ROLES = 32
MAX_TOKEN_CHARS = 8192
"""A token longer than this is refused unread: real tokens are well under 2 KB, and a huge one costs a signature
check and a claims parse on every request it is sent with."""
TIME_CLAIMS = ("exp", "nbf", "iat", "auth_time")


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


def _is_text(value: str) -> bool:
    """Whether ``value`` is real text: JSON's escapes can carry a lone surrogate ("\\ud800"), which no key, log or
    store can encode, so a caller named so would break every answer asked under it."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _claims_caller(claims: dict[str, Any]) -> Caller:
    """A Caller from verified claims, refusing claims of the wrong shape rather than guessing what they mean."""
    subject, tenant, roles = claims.get("sub"), claims.get("tenant") or "", claims.get("roles", [])
    for claim in TIME_CLAIMS:  # the JWT library reads "2000000000" as a number; a token of ours never says so
        value = claims.get(claim)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise UnauthorizedError(f"the access token's {claim} claim must be a number (seconds since 1970)")
    if not isinstance(subject, str) or not subject or not _is_text(subject):
        raise UnauthorizedError("the access token's sub claim must be a non-empty string of text")
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
    (jwt.MissingRequiredClaimError, "the access token lacks a required claim"),
)


def _token_problem(exc: jwt.InvalidTokenError) -> str:
    """Our words for why a token was refused, naming a missing claim (our own fact) but never the library's text."""
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"the access token lacks a required claim ({exc.claim})"
    return next((m for kind, m in _TOKEN_PROBLEMS if isinstance(exc, kind)), "the access token is not valid")


def verify_token(token: str, cfg: AuthSettings) -> Caller:
    public_key = cfg.jwt_public_key.get_secret_value()
    key, algorithm = (public_key, "RS256") if public_key else (cfg.jwt_secret.get_secret_value(), "HS256")
    try:
        claims = jwt.decode(
            token, key, algorithms=[algorithm], audience=cfg.audience, issuer=cfg.issuer or None,
            options={"require": ["exp", "sub"]}, leeway=cfg.leeway_s,
        )  # fmt: skip
    except jwt.InvalidTokenError as exc:
        raise UnauthorizedError(_token_problem(exc)) from None
    return _claims_caller(claims)


async def current_caller(request: Request) -> Caller:
    cfg: AuthSettings = request.app.state.services.settings.auth
    if not cfg.enabled:
        return LOCAL
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        token = request.query_params.get("access_token", "")
    if not token:
        raise UnauthorizedError("this endpoint needs an access token (Authorization: Bearer <JWT>)")
    if len(token) > MAX_TOKEN_CHARS:
        raise UnauthorizedError(f"the access token is longer than {MAX_TOKEN_CHARS:,} characters")
    published: IdTokenVerifier | None = getattr(request.app.state.services, "id_tokens", None)
    if published is not None:  # identity.provider: keys published by Firebase or an OIDC provider
        return await published.verify(token.strip())
    return verify_token(token.strip(), cfg)


# -- ID tokens signed with published keys (Firebase, OpenID Connect) ---------------------------------------------


def caller_from_claims(claims: dict[str, Any]) -> Caller:
    """The caller a verified ID token names, with the same claim shapes as our own tokens; Firebase puts a tenant in
    ``firebase.tenant``."""
    firebase = claims.get("firebase")
    if not claims.get("tenant") and isinstance(firebase, dict) and firebase.get("tenant"):
        claims = {**claims, "tenant": firebase["tenant"]}
    return _claims_caller(claims)


_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*(\d+)", re.IGNORECASE)


def parse_published_keys(body: Any) -> dict[str, Any]:
    """Public keys by ``kid`` from either format a provider publishes: Google's x509 certificate map
    (``{kid: "-----BEGIN CERTIFICATE-----..."}``) or a JSON Web Key Set (``{"keys": [{"kid": ..., "kty": "RSA"}]}``).
    """
    from cryptography.x509 import load_pem_x509_certificate

    keys: dict[str, Any] = {}
    if isinstance(body, dict) and isinstance(body.get("keys"), list):
        for jwk in body["keys"]:
            if isinstance(jwk, dict) and jwk.get("kty") == "RSA" and jwk.get("kid") and jwk.get("use", "sig") == "sig":
                keys[str(jwk["kid"])] = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(jwk))
    elif isinstance(body, dict):
        for kid, pem in body.items():
            if isinstance(pem, str) and "BEGIN CERTIFICATE" in pem:
                keys[str(kid)] = load_pem_x509_certificate(pem.encode()).public_key()
    if not keys:
        raise BackendError("the identity provider's published keys could not be read")
    return keys


class PublishedKeys:
    """An identity provider's signing keys, fetched from its URL and cached as its ``Cache-Control`` allows.

    An unknown ``kid`` (the provider has rotated its keys) triggers one refetch, at most once per
    ``min_refresh_s``, and concurrent requests share that one fetch.
    """

    def __init__(self, url: str, http: httpx.AsyncClient, cfg: IdentitySettings) -> None:
        self.url = url
        self.http = http
        self.cfg = cfg
        self._keys: dict[str, Any] = {}
        self._expires = 0.0
        self._fetched = float("-inf")
        self._lock = asyncio.Lock()
        self.fetches = 0

    async def _refresh(self) -> None:
        try:
            response = await self.http.get(self.url, timeout=self.cfg.timeout_s)
            response.raise_for_status()
            keys = parse_published_keys(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("could not fetch the identity provider's keys from %s: %s", self.url, exc)
            raise BackendError("the identity provider's keys could not be fetched; try again shortly") from None
        match = _MAX_AGE.search(response.headers.get("cache-control", ""))
        max_age = float(match.group(1)) if match else self.cfg.default_max_age_s
        self._keys, self._fetched, self._expires = keys, time.monotonic(), time.monotonic() + max_age
        self.fetches += 1

    async def key(self, kid: str) -> Any:
        """The public key ``kid`` names, refetching when the cache has expired or the kid is new."""
        now = time.monotonic()
        if now < self._expires and kid in self._keys:
            return self._keys[kid]
        async with self._lock:
            now = time.monotonic()
            expired = now >= self._expires
            unknown = kid not in self._keys and now - self._fetched >= self.cfg.min_refresh_s
            if expired or unknown:
                await self._refresh()
        if kid not in self._keys:
            raise UnauthorizedError("the access token is signed with a key the identity provider does not publish")
        return self._keys[kid]


class IdTokenVerifier:
    """Verifies RS256 ID tokens against published keys: Firebase Authentication, or any OpenID Connect provider.

    Checked: the signature by the ``kid`` the header names; ``aud`` and ``iss``; ``exp`` in the future, ``iat``
    (and Firebase's ``auth_time``) not in the future, allowing ``leeway_s``; a non-empty ``sub``.
    """

    def __init__(self, cfg: IdentitySettings, http: httpx.AsyncClient) -> None:
        self.cfg = cfg
        self.keys = PublishedKeys(cfg.keys_url, http, cfg)

    async def verify(self, token: str) -> Caller:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise UnauthorizedError("the access token is not valid") from None
        if header.get("alg") != "RS256":
            raise UnauthorizedError("the access token must be signed with RS256")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise UnauthorizedError("the access token names no signing key (kid)")
        key = await self.keys.key(kid)
        firebase = self.cfg.provider == "firebase"
        required = ["exp", "iat", "sub", "aud", "iss", *(["auth_time"] if firebase else [])]
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=["RS256"], audience=self.cfg.expected_audience,
                issuer=self.cfg.expected_issuer, leeway=self.cfg.leeway_s, options={"require": required},
            )  # fmt: skip
        except jwt.InvalidTokenError as exc:
            raise UnauthorizedError(_token_problem(exc)) from None
        now = time.time() + self.cfg.leeway_s
        for claim in ("iat", "auth_time"):
            value = claims.get(claim)
            if value is not None and (not isinstance(value, int | float) or value > now):
                raise UnauthorizedError(f"the access token's {claim} is in the future")
        if not isinstance(claims.get("sub"), str) or not claims["sub"] or len(claims["sub"]) > 128:
            raise UnauthorizedError("the access token's subject (sub) must be a non-empty string")
        return caller_from_claims(claims)


def build_id_token_verifier(cfg: IdentitySettings, http: httpx.AsyncClient) -> IdTokenVerifier | None:
    return None if cfg.provider == "none" else IdTokenVerifier(cfg, http)


def admin_caller(caller: Annotated[Caller, Depends(current_caller)]) -> Caller:
    if not caller.is_admin:
        raise ForbiddenError("this endpoint is for administrators (a token with the 'admin' role)")
    return caller


CallerDep = Annotated[Caller, Depends(current_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]


class FailedAttempts:
    """Failed guesses of a secret per client, in a sliding window: after ``limit`` failures within ``window_s`` a
    client is refused, right or wrong, until its oldest failure ages out, so a passphrase cannot be guessed at
    request speed. Clients are an LRU of ``tracked`` entries (each a few timestamps)."""

    def __init__(
        self, limit: int, window_s: float, tracked: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._failures: TTLCache[list[float]] = TTLCache(window_s, tracked, clock=clock)

    def _recent(self, client: str) -> list[float]:
        since = self.clock() - self.window_s
        return [t for t in self._failures.get(client) or [] if t > since]

    def check(self, client: str) -> None:
        """Raise TooManyRequestsError (with when to try again) if ``client`` has used up its failures."""
        recent = self._recent(client)
        if len(recent) >= self.limit:
            wait = max(1, math.ceil(recent[0] + self.window_s - self.clock()))
            raise TooManyRequestsError(f"too many wrong attempts; try again in {wait} s", retry_after_s=wait)

    def failed(self, client: str) -> None:
        self._failures.put(client, [*self._recent(client), self.clock()][-self.limit :])
