"""One validated settings object for the whole service.

Every section has an embedded default that needs no account and no network; production backends are chosen by
setting ``backend`` (and their URIs and secrets) through ``GWETA_<SECTION>__<FIELD>`` environment variables, e.g.
``GWETA_VECTOR_STORE__URI=https://...``. All embedded state lives under ``data_dir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class VectorStoreSettings(BaseModel):
    backend: Literal["milvus"] = "milvus"
    uri: str = Field("", description="Milvus/Zilliz URI; empty means a Milvus Lite folder inside data_dir.")
    token: SecretStr = SecretStr("")
    collection: str = "gweta_chunks"


class ObjectStoreSettings(BaseModel):
    backend: Literal["local", "s3"] = "local"
    bucket: str = "gweta"
    endpoint_url: str = Field("", description="S3 API endpoint, e.g. https://<account>.r2.cloudflarestorage.com")
    region: str = "auto"
    access_key_id: SecretStr = SecretStr("")
    secret_access_key: SecretStr = SecretStr("")
    prefix: str = ""


class BM25Settings(BaseModel):
    backend: Literal["bm25s", "rank_bm25"] = Field("bm25s", description="bm25s by measurement; see README.")
    k1: float = 1.5
    b: float = 0.75


class EmbeddingSettings(BaseModel):
    backend: Literal["minilm", "openai"] = "minilm"
    model: str = Field("", description="Model name for the openai backend, or a local sentence-transformers folder.")
    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    dimensions: int = 384
    batch_size: int = 32
    name: str = Field("", description="The local model's name in the manifest (empty: minilm); set by gweta tune.")


class RerankerSettings(BaseModel):
    backend: Literal["none", "bge"] = "none"
    model_path: str = Field("", description="A local folder with the cross-encoder (e.g. bge-reranker-v2-m3).")
    candidates: int = Field(20, ge=1, le=200, description="Fused candidates scored by the cross-encoder.")
    max_length: int = 512
    batch_size: int = 16
    cache_ttl_s: float = 3600.0


class LLMSettings(BaseModel):
    backend: Literal["none", "openai"] = "none"
    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    timeout_s: float = 30.0
    max_tokens: int = 800
    call_timeout_s: float = Field(4.0, gt=0, description="Limit for one small structured call (guard, plan, grade…).")
    route_timeout_s: float = Field(0.25, gt=0, description="Limit for the router's call when heuristics are unsure.")
    expand_timeout_s: float = Field(0.45, gt=0, description="Limit for multi-query and HyDE; late results are dropped.")
    call_attempts: int = Field(2, ge=1, le=5, description="Tries per structured call on 429 and 5xx, with backoff.")
    max_calls_simple: int = Field(4, ge=1, description="LLM calls one simple question may use.")
    max_calls_multi_hop: int = Field(11, ge=1, description="LLM calls one multi-hop question may use.")
    max_rewrites: int = Field(1, ge=0, le=3, description="Grade-and-rewrite retries per research step.")
    max_steps: int = Field(3, ge=1, le=5, description="Research steps a multi-hop question may complete.")
    memory_similarity: float = Field(0.92, gt=0, le=1, description="QA memory: how alike a question must be.")
    memory_ttl_s: float = Field(3600.0, ge=0, description="QA memory: how long a verified answer is kept.")


class CheckpointerSettings(BaseModel):
    backend: Literal["sqlite", "firestore"] = "sqlite"
    project: str = ""
    emulator_host: str = ""


class TracingSettings(BaseModel):
    backend: Literal["log", "langsmith"] = "log"
    endpoint: str = "https://api.smith.langchain.com"
    api_key: SecretStr = SecretStr("")
    project: str = "gweta"


class AuthSettings(BaseModel):
    enabled: bool = Field(False, description="Require a JWT on every API call (off: local use, caller is admin).")
    jwt_secret: SecretStr = Field(SecretStr(""), description="HS256 shared secret.")
    jwt_public_key: SecretStr = Field(SecretStr(""), description="PEM public key; when set, tokens must be RS256.")
    audience: str = "gweta"
    issuer: str = Field("", description="Required 'iss' claim, if set.")
    leeway_s: float = Field(30.0, ge=0, description="Clock skew allowed on exp/nbf.")
    docs_public: bool = Field(
        False, description="With auth on, serve /docs and /openapi.json without a token (off: they need one)."
    )

    def problems(self) -> list[str]:
        """What stops these settings from working; checked at boot only when auth is on."""
        secret, public_key = self.jwt_secret.get_secret_value(), self.jwt_public_key.get_secret_value()
        if not self.enabled:
            return []
        if not (secret or public_key):
            return ["auth.enabled needs auth.jwt_secret (HS256) or auth.jwt_public_key (RS256)"]
        if public_key:
            return [] if _is_rsa_public_key(public_key) else [
                "auth.jwt_public_key (GWETA_AUTH__JWT_PUBLIC_KEY) must be an RSA public key in PEM form "
                "('-----BEGIN PUBLIC KEY-----' …)"
            ]  # fmt: skip
        if len(secret.encode()) < MIN_HS256_SECRET_BYTES:
            return [
                f"auth.jwt_secret (GWETA_AUTH__JWT_SECRET) must be at least {MIN_HS256_SECRET_BYTES} bytes "
                f"for HS256 (it is {len(secret.encode())})"
            ]
        return []


MIN_HS256_SECRET_BYTES = 32  # RFC 7518 3.2: a key at least as long as the hash output


def _is_rsa_public_key(pem: str) -> bool:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        return isinstance(load_pem_public_key(pem.encode()), RSAPublicKey)
    except (ValueError, TypeError):
        return False


class LimitsSettings(BaseModel):
    """Abuse limits, each answered in the service's error format with ``Retry-After`` where waiting helps."""

    max_body_bytes: int = Field(
        65_536, ge=1024, description="Largest request body; a bigger one is refused with 413 before it is read."
    )
    requests_per_minute: float = Field(
        60.0, ge=0, description="Sustained API requests per caller (per client IP when anonymous); 0: no limit."
    )
    burst: int = Field(20, ge=1, description="Requests a caller may make at once before the per-minute rate applies.")
    streams_per_caller: int = Field(
        4, ge=1, description="Answers one caller may have in progress at once; one more is answered 429."
    )
    tracked_callers: int = Field(100_000, ge=100, description="Callers whose request rate is remembered (LRU).")


class StreamSettings(BaseModel):
    """Resumable answers: every event has an id, and a client that reconnects with Last-Event-ID resumes."""

    retry_ms: int = Field(2000, ge=100, le=60_000, description="Reconnection delay sent to clients as 'retry:'.")
    resume_grace_s: float = Field(
        10.0, ge=0, description="How long an answer keeps being produced after its client drops, awaiting a resume."
    )
    replay_ttl_s: float = Field(60.0, gt=0, description="How long a finished answer's events can be replayed.")
    replay_events: int = Field(5000, ge=10, description="Events kept per answer for replay (oldest dropped first).")
    max_streams: int = Field(1000, ge=1, description="Answers kept for replay at once, over all callers.")


class PrivacySettings(BaseModel):
    log_questions: Literal["hash", "text", "none"] = Field(
        "hash", description="How questions appear in logs: a short hash (default), the text itself, or not at all."
    )


class RetrievalSettings(BaseModel):
    top_k: int = Field(6, ge=1, le=50, description="Hits handed to synthesis after fusion.")
    candidates: int = Field(30, ge=1, le=500, description="Candidates asked of each backend before fusion.")
    rrf_k: int = Field(60, ge=1)
    dense_weight: float = Field(1.0, ge=0)
    bm25_weight: float = Field(1.0, ge=0)
    timeout_s: float = Field(5.0, gt=0)
    context_tokens: int = Field(1500, ge=100, le=100_000, description="Token budget of the context the LLM reads.")
    provision_tokens: int = Field(
        600, ge=50, description="A provision this long or shorter goes into the context whole."
    )
    cache_ttl_s: float = Field(900.0, ge=0, description="How long a query's retrieval result is reused (0: never).")
    cache_entries: int = Field(2048, ge=1)
    cache_similarity: float = Field(
        0.95, gt=0, le=1, description="A query this close (cosine) to a cached one reuses its results."
    )
    mask_cache_entries: int = Field(256, ge=1, description="Filter sets whose BM25 candidate mask is kept (LRU).")


class IngestionSettings(BaseModel):
    ocr: Literal["auto", "tesseract", "pageindex", "off"] = Field(
        "auto",
        description="How scanned PDFs (no text layer, or a garbled one) are read: auto uses tesseract when installed.",
    )
    ocr_dpi: int = Field(300, ge=72, le=600, description="Resolution pages are rendered at for tesseract.")
    ocr_language: str = Field("eng", description="Tesseract language(s), e.g. eng or eng+por.")
    pageindex_url: str = Field("https://api.pageindex.ai", description="PageIndex OCR service, for ocr=pageindex.")
    pageindex_api_key: SecretStr = SecretStr("")
    pageindex_timeout_s: float = Field(600.0, gt=0, description="Longest wait for PageIndex to finish one file.")
    parse_workers: int = Field(0, ge=0, le=64, description="Processes that parse files; 0 picks one per core.")
    max_chunk_tokens: int = Field(200, ge=16, le=2048, description="Longest chunk, in the embedding model's tokens.")
    max_file_mb: int = Field(
        128, ge=1, le=4096, description="Largest source file read, in MiB; a larger one is reported and left out."
    )
    tenant: str = Field(
        "", max_length=128, pattern=r"^[A-Za-z0-9._-]*$",
        description="Owner of what is ingested: only callers of this tenant see it. '' is the public corpus.",
    )  # fmt: skip


class Settings(BaseSettings):
    """The service's configuration, validated once at start-up."""

    model_config = SettingsConfigDict(env_prefix="GWETA_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path(".gweta-data")
    model_threads: int = Field(2, ge=1, le=64, description="Size of the one thread pool that runs model inference.")
    sse_ping_s: float = Field(15.0, gt=0, description="Keep-alive comment interval on event streams.")
    vector_store: VectorStoreSettings = VectorStoreSettings()
    object_store: ObjectStoreSettings = ObjectStoreSettings()
    bm25: BM25Settings = BM25Settings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    reranker: RerankerSettings = RerankerSettings()
    llm: LLMSettings = LLMSettings()
    checkpointer: CheckpointerSettings = CheckpointerSettings()
    tracing: TracingSettings = TracingSettings()
    auth: AuthSettings = AuthSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    ingestion: IngestionSettings = IngestionSettings()
    limits: LimitsSettings = LimitsSettings()
    streams: StreamSettings = StreamSettings()
    privacy: PrivacySettings = PrivacySettings()
    allow_public_without_auth: bool = Field(
        False, description="Let `gweta serve` bind a public interface (0.0.0.0) with auth off; off: it refuses."
    )

    @model_validator(mode="after")
    def _check_backends(self) -> Self:
        problems = []
        if self.llm.backend == "openai" and not self.llm.base_url:
            problems.append("llm.backend=openai needs llm.base_url (GWETA_LLM__BASE_URL)")
        if self.embeddings.backend == "openai" and not (self.embeddings.base_url and self.embeddings.model):
            problems.append("embeddings.backend=openai needs embeddings.base_url and embeddings.model")
        if self.reranker.backend == "bge" and not self.reranker.model_path:
            problems.append("reranker.backend=bge needs reranker.model_path (a local folder)")
        if self.object_store.backend == "s3" and not self.object_store.bucket:
            problems.append("object_store.backend=s3 needs object_store.bucket")
        problems += self.auth.problems()
        if self.ingestion.ocr == "pageindex" and not self.ingestion.pageindex_api_key.get_secret_value():
            problems.append(
                "ingestion.ocr=pageindex needs ingestion.pageindex_api_key (GWETA_INGESTION__PAGEINDEX_API_KEY)"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def check_bind(self, host: str) -> None:
        """Refuse to serve on a non-loopback interface with auth off unless told so explicitly."""
        if self.auth.enabled or self.allow_public_without_auth or is_loopback(host):
            return
        raise ValueError(
            f"refusing to serve on {host} with authentication off: anyone who can reach it could use the API and its "
            "debug endpoint. Turn auth on (GWETA_AUTH__ENABLED=true with a key), bind 127.0.0.1, or set "
            "GWETA_ALLOW_PUBLIC_WITHOUT_AUTH=true to serve publicly anyway."
        )

    @property
    def milvus_uri(self) -> str:
        return self.vector_store.uri or str(self.data_dir / "milvus.db")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost`` or a loopback address)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
