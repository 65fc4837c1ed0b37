"""Errors the service raises on purpose.

    GwetaError                  base; ``code`` is the stable machine-readable name sent to clients
    ├── ConfigError             settings that cannot work (raised at boot)
    ├── BadRequestError         the caller's input is unusable (HTTP 422)
    ├── UnauthorizedError       no valid access token (HTTP 401)
    ├── ForbiddenError          a valid token without the needed role (HTTP 403)
    ├── NotFoundError           no such document, provision or resumable answer for this caller (HTTP 404)
    ├── PayloadTooLargeError    a request body over limits.max_body_bytes (HTTP 413)
    ├── TooManyRequestsError    over a rate or concurrent-stream limit; says when to retry (HTTP 429)
    ├── NotReadyError           no corpus ingested yet, or a backend still starting (HTTP 503)
    │   ├── OverloadedError     the instance is answering all the streams it can; retry later (HTTP 503)
    │   └── StateUnavailableError  the shared state (Redis) failed or is too slow; retry later (HTTP 503)
    ├── BackendError            a store or model failed (HTTP 502)
    │   └── UpstreamLLMError    the configured LLM endpoint failed or timed out
    └── IngestionError          one source document could not be ingested; the run goes on

Tools raise these; one handler in ``api.main`` maps them to HTTP statuses, and once a stream has started a typed
``error`` event closes it. Messages are written for the user and never include a traceback.
"""

from __future__ import annotations


class GwetaError(Exception):
    code = "internal_error"
    status_code = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(GwetaError):
    code = "config_error"


class BadRequestError(GwetaError):
    code = "bad_request"
    status_code = 422


class UnauthorizedError(GwetaError):
    code = "unauthorized"
    status_code = 401


class ForbiddenError(GwetaError):
    code = "forbidden"
    status_code = 403


class NotFoundError(GwetaError):
    code = "not_found"
    status_code = 404


class PayloadTooLargeError(GwetaError):
    code = "payload_too_large"
    status_code = 413


class TooManyRequestsError(GwetaError):
    code = "too_many_requests"
    status_code = 429

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class NotReadyError(GwetaError):
    code = "not_ready"
    status_code = 503


class OverloadedError(NotReadyError):
    code = "overloaded"


class StateUnavailableError(NotReadyError):
    code = "state_unavailable"


class BackendError(GwetaError):
    code = "backend_error"
    status_code = 502


class UpstreamLLMError(BackendError):
    code = "llm_error"


class IngestionError(GwetaError):
    code = "ingestion_error"
