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
    index_type: Literal["AUTOINDEX", "HNSW", "IVF_FLAT", "FLAT"] = Field(
        "AUTOINDEX", description="Vector index of a new collection (a Milvus server; Lite picks its own)."
    )
    index_params: dict[str, int] = Field(default_factory=dict, description="e.g. {'M': 16, 'efConstruction': 200}.")
    search_params: dict[str, int] = Field(default_factory=dict, description="e.g. {'ef': 64} or {'nprobe': 16}.")
    exact_max_rows: int = Field(
        100_000,
        ge=0,
        description="Milvus Lite only: keep up to this many vectors in memory (1.5 KB each at 384 dimensions) and "
        "search them exactly, several times faster than Lite's own (approximate) search; a corpus with more is "
        "searched by Lite; 0: never (benchmarks/results/exact_search.md).",
    )
    hosted_lite: bool = Field(
        False,
        description="Set by the serving process for its graph workers: ``uri`` is the Milvus Lite engine it hosts "
        "on loopback (searched like Lite, so the exact index applies).",
    )


class ObjectStoreSettings(BaseModel):
    backend: Literal["local", "s3"] = "local"
    bucket: str = "gweta"
    endpoint_url: str = Field("", description="S3 API endpoint, e.g. https://<account>.r2.cloudflarestorage.com")
    region: str = "auto"
    access_key_id: SecretStr = SecretStr("")
    secret_access_key: SecretStr = SecretStr("")
    prefix: str = ""
    answer_wait_s: float = Field(
        2.0,
        gt=0,
        description="Longest an answer waits for parent documents; after it, the provision's indexed text "
        "is used (with a warning where verification reads it) and the read goes on to fill the cache.",
    )
    connect_timeout_s: float = Field(5.0, gt=0, description="S3: limit for opening a connection.")
    read_timeout_s: float = Field(15.0, gt=0, description="S3: limit for a response to start or continue.")
    attempts: int = Field(3, ge=1, le=10, description="S3: tries per call (retried on throttling and 5xx).")
    threads: int = Field(16, ge=1, le=128, description="S3: calls in flight at once (the store's own threads).")


class BM25Settings(BaseModel):
    backend: Literal["bm25s", "rank_bm25"] = Field("bm25s", description="bm25s by measurement; see README.")
    k1: float = 1.5
    b: float = 0.75
    stem: bool = Field(False, description="Index word families ('resources' = 'resource'), not exact words.")
    bigrams: bool = Field(False, description="Also index each pair of adjacent words, so shared phrases count more.")
    title_weight: int = Field(1, ge=0, le=3, description="How many times a chunk's document title counts (text: once).")
    heading_weight: int = Field(
        1, ge=0, le=3, description="How many times a provision's number and heading count (text: once)."
    )


class EmbeddingSettings(BaseModel):
    backend: Literal["minilm", "openai"] = "minilm"
    model: str = Field("", description="Model name for the openai backend, or a local sentence-transformers folder.")
    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    dimensions: int = 384
    batch_size: int = 32
    cache_entries: int = Field(
        20_000, ge=0, description="Query path: provision sentences' vectors kept across requests (LRU; 0 keeps none)."
    )
    query_cache_entries: int = Field(
        1024,
        ge=0,
        description="Query path: questions' vectors kept across requests (LRU; 0: each request embeds "
        "its question once).",
    )
    batch_wait_ms: float = Field(
        3.0, ge=0, le=100, description="Query path: how long a text waits for others to share one model call."
    )
    max_batch: int = Field(64, ge=1, le=4096, description="Query path: texts in one shared model call, at most.")
    name: str = Field("", description="The local model's name in the manifest (empty: minilm); set by gweta tune.")
    runtime: Literal["onnx", "torch"] = Field(
        "onnx",
        description="Query path: what runs the local model (onnx: ONNX Runtime, its graph exported once into the data "
        "dir's models/onnx/, used only when its vectors are PyTorch's; torch: PyTorch). Ingestion uses PyTorch.",
    )
    onnx_dir: Path | None = Field(
        None,
        description="Where exported ONNX graphs are kept, named by their weights' digest, so data dirs on one machine "
        "may share them (default: <data_dir>/models/onnx).",
    )


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
    skip_settled: bool = Field(
        True,
        description="Skip the router's, expansion's and grade's calls when the question's own search already settles "
        "what they would decide: the evidence judge finds it answerable even with a grade of nothing relevant. "
        "Verification of the answer is unchanged.",
    )
    pause_after_timeouts: int = Field(
        5,
        ge=0,
        description="A structured skill whose calls ran out of time this many times running is not asked for "
        "pause_s (then one call tries again): a model slower than the skill's limit only adds the wait. 0: always ask.",
    )
    pause_s: float = Field(60.0, gt=0, description="How long a skill that keeps running out of time is not asked.")
    max_steps: int = Field(3, ge=1, le=5, description="Research steps a multi-hop question may complete.")
    memory_similarity: float = Field(0.92, gt=0, le=1, description="QA memory: how alike a question must be.")
    memory_ttl_s: float = Field(3600.0, ge=0, description="QA memory: how long a verified answer is kept.")
    stall_timeout_s: float = Field(
        10.0, gt=0, description="Stall watchdog: no answer token for this long stops the model; what is verified stays."
    )


class FirestoreSettings(BaseModel):
    """One Firestore database shared by the checkpointer, the audit log and QA memory when they select it."""

    project: str = Field("", description="Google Cloud / Firebase project id.")
    database: str = Field("(default)", description="Firestore database id.")
    credentials_json: SecretStr = Field(
        SecretStr(""), description="A service account's JSON key; empty uses the platform's default credentials."
    )
    emulator_host: str = Field(
        "", description="host:port of a Firestore emulator (tests, local runs); no TLS, no auth."
    )
    collection_prefix: str = Field(
        "gweta_", pattern=r"^[A-Za-z0-9_-]*$", description="Prefix of every top-level collection this service uses."
    )
    timeout_s: float = Field(10.0, gt=0, description="Limit for one Firestore call.")


class CheckpointerSettings(BaseModel):
    backend: Literal["sqlite", "firestore"] = "sqlite"
    durability: Literal["exit", "async", "sync"] = Field(
        "exit",
        description="When a question's graph state is saved: once when it ends ('exit'; what the next turn reads), or "
        "after every step too ('async' beside the next step, 'sync' before it). Per-step saves serialise every "
        "stream on the one checkpoint connection; nothing reads them, since a question is never resumed mid-graph.",
    )
    project: str = Field("", description="Deprecated: use firestore.project (read when that is empty).")
    emulator_host: str = Field("", description="Deprecated: use firestore.emulator_host (read when that is empty).")


class AuditSettings(BaseModel):
    """The audit record of every question: who asked what, when, what was cited and whether it verified."""

    backend: Literal["sqlite", "firestore", "off"] = "sqlite"
    store_question: Literal["hash", "text"] = Field(
        "hash", description="Keep the question's text, or only its salted SHA-256 (privacy)."
    )
    hash_salt: SecretStr = Field(SecretStr(""), description="Salt mixed into question hashes (set one in production).")


class MemorySettings(BaseModel):
    """Where QA memory (verified answers served again) lives: this process, or Firestore for every replica."""

    backend: Literal["process", "firestore"] = "process"
    max_entries: int = Field(1000, ge=1, description="Answers a process keeps (process backend).")
    scan_limit: int = Field(
        500, ge=1, le=10_000, description="Newest answers compared per lookup under one key (firestore backend)."
    )


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
            return [
                "auth.enabled needs auth.jwt_secret (HS256), auth.jwt_public_key (RS256) "
                "or identity.provider (firebase, oidc)"
            ]
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


class WebSettings(BaseModel):
    """The browser app served at ``/``: how it signs people in, and the address it is reached at."""

    enabled: bool = Field(True, description="Serve the web app at / (the API works either way).")
    public_url: str = Field(
        "", description="Where people reach this service, e.g. https://gweta.example.org; WhatsApp replies link to "
        "the reader there. Empty: no links.",
    )  # fmt: skip
    firebase_api_key: str = Field("", description="Firebase web API key (public); enables email sign-in.")
    firebase_auth_domain: str = ""
    firebase_project_id: str = ""
    firebase_auth_url: str = Field(
        "https://identitytoolkit.googleapis.com", description="Firebase Auth REST base (accounts:signInWithPassword)."
    )
    firebase_token_url: str = Field("https://securetoken.googleapis.com", description="Firebase token refresh base.")
    dev_signin_secret: SecretStr = Field(
        SecretStr(""), description="A passphrase that lets the page mint a short-lived HS256 token (development only)."
    )
    dev_token_ttl_s: int = Field(900, ge=60, le=86_400, description="Lifetime of a dev sign-in token.")


class WhatsAppSettings(BaseModel):
    """The WhatsApp Cloud API number: its webhook answers 404 until all four credentials are set."""

    verify_token: SecretStr = Field(SecretStr(""), description="Chosen by us, typed into Meta's webhook setup.")
    app_secret: SecretStr = Field(SecretStr(""), description="The Meta app secret: signs every webhook POST.")
    access_token: SecretStr = Field(SecretStr(""), description="A system-user token allowed to send messages.")
    phone_number_id: str = Field("", pattern=r"^[0-9]*$", description="The sending number's id (not the number).")
    graph_url: str = "https://graph.facebook.com"
    api_version: str = Field("v21.0", pattern=r"^v\d+\.\d+$")
    timeout_s: float = Field(10.0, gt=0)
    attempts: int = Field(4, ge=1, le=8, description="Tries per Graph API call on 429, 5xx and network errors.")
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each try (Retry-After wins).")
    rate_limit: int = Field(6, ge=1, description="Questions one sender may ask per rate_window_s.")
    rate_window_s: float = Field(60.0, gt=0)
    seen_ids: int = Field(10_000, ge=100, description="Message ids remembered to drop webhook retries.")
    concurrency: int = Field(4, ge=1, le=64, description="Messages answered at once.")

    @property
    def configured(self) -> bool:
        return not self.missing()

    def missing(self) -> list[str]:
        values = {
            "verify_token": self.verify_token.get_secret_value(), "app_secret": self.app_secret.get_secret_value(),
            "access_token": self.access_token.get_secret_value(), "phone_number_id": self.phone_number_id,
        }  # fmt: skip
        return [name for name, value in values.items() if not value]


GOOGLE_SECURETOKEN_CERTS = "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"


class IdentitySettings(BaseModel):
    """Tokens signed by an identity provider with published, rotating keys (used when ``auth.enabled``).

    ``firebase``: Firebase Authentication ID tokens (RS256; ``aud`` = the project id, ``iss`` =
    ``https://securetoken.google.com/<project id>``; keys from Google's x509 certificate map). ``oidc``: any OpenID
    Connect provider's RS256 tokens, keys from its JWKS URL, with the audience and issuer given here.
    """

    provider: Literal["none", "firebase", "oidc"] = Field(
        "none", description="none: tokens are checked against auth.jwt_secret / auth.jwt_public_key."
    )
    project_id: str = Field("", description="Firebase project id (firebase).")
    certs_url: str = Field(
        "", description="Published keys: Google's x509 map or a JWKS; firebase defaults to Google's securetoken map."
    )
    audience: str = Field("", description="Required 'aud' (oidc; firebase uses the project id).")
    issuer: str = Field("", description="Required 'iss' (oidc; firebase uses securetoken.google.com/<project id>).")
    leeway_s: float = Field(30.0, ge=0, description="Clock skew allowed on exp, iat and auth_time.")
    default_max_age_s: float = Field(300.0, ge=0, description="Key cache lifetime when no Cache-Control max-age.")
    min_refresh_s: float = Field(30.0, ge=0, description="Least time between refetches caused by unknown kids.")
    timeout_s: float = Field(5.0, gt=0, description="Limit for fetching the published keys.")

    @property
    def keys_url(self) -> str:
        return self.certs_url or (GOOGLE_SECURETOKEN_CERTS if self.provider == "firebase" else "")

    @property
    def expected_audience(self) -> str:
        return self.project_id if self.provider == "firebase" else self.audience

    @property
    def expected_issuer(self) -> str:
        return f"https://securetoken.google.com/{self.project_id}" if self.provider == "firebase" else self.issuer


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
    lay_terms: bool = Field(True, description="Add the lay-term thesaurus's legal terms to both search sides.")
    lay_terms_path: Path | None = Field(None, description="Thesaurus TOML; unset means api/data/lay_terms.toml.")
    answerability: bool = Field(True, description="Abstain before synthesis when the fitted evidence judge says so.")
    answerability_path: Path | None = Field(None, description="Judge parameters; unset: api/data/answerability.toml.")
    learned_fusion: bool = Field(
        True, description="Order by the trees 'gweta tune --questions' kept for this data dir; false: RRF's order."
    )
    learned_fusion_path: Path | None = Field(
        None, description="Trees 'gweta tune --questions' learned to order the fused chunks; unset: RRF's order."
    )


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
    sentence_vectors: bool = Field(
        True,
        description="Embed every quotable sentence at ingestion (once; later runs embed only new ones), so answers "
        "read their vectors instead of embedding them (the 385 Acts: 318 s more on a first run, 115 MB a process).",
    )


class AdmissionSettings(BaseModel):
    enabled: bool = True
    max_streams: int = Field(100, ge=1, description="Answer streams one instance runs at once.")
    max_waiting: int = Field(100, ge=0, description="Streams that may wait for a turn; beyond them, 503 at once.")
    max_wait_s: float = Field(10.0, gt=0, description="Longest a stream waits for its turn before a 503.")
    retry_after_s: float = Field(2.0, gt=0, description="Retry-After sent with a 503.")


class GateSettings(BaseModel):
    judge: Literal["rules"] = Field(
        "rules",
        description="What judges whether a cited provision supports a sentence of the answer (the gate's "
        "ClaimJudge): 'rules', the hand-written facts, meaning, polarity and topic checks.",
    )


class Settings(BaseSettings):
    """The service's configuration, validated once at start-up."""

    model_config = SettingsConfigDict(env_prefix="GWETA_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path(".gweta-data")
    model_threads: int = Field(2, ge=1, le=64, description="Size of the one thread pool that runs model inference.")
    sse_ping_s: float = Field(15.0, gt=0, description="Keep-alive comment interval on event streams.")
    corpus_poll_s: float = Field(
        30.0, ge=0, description="How often a replica checks the object store for a new corpus version (0: never)."
    )
    question_deadline_s: float = Field(
        60.0, gt=0, le=600, description="Every question ends (with a final event) within this many seconds."
    )
    graph_workers: int = Field(
        0,
        ge=0,
        le=64,
        description="Worker processes that answer questions for `gweta serve` (0: the serving process answers them "
        "itself). One process uses about 1.2 cores; two workers on 2 cores gave 41 against 28 answers/s at 50 "
        "streams over the 385 Acts, with each worker's memory (benchmarks/results/load_workers.md).",
    )
    worker_start_timeout_s: float = Field(
        120.0, gt=0, description="How long a question waits for a graph worker when none is ready (restarting)."
    )
    vector_store: VectorStoreSettings = VectorStoreSettings()
    object_store: ObjectStoreSettings = ObjectStoreSettings()
    bm25: BM25Settings = BM25Settings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    reranker: RerankerSettings = RerankerSettings()
    llm: LLMSettings = LLMSettings()
    checkpointer: CheckpointerSettings = CheckpointerSettings()
    firestore: FirestoreSettings = FirestoreSettings()
    audit: AuditSettings = AuditSettings()
    memory: MemorySettings = MemorySettings()
    tracing: TracingSettings = TracingSettings()
    auth: AuthSettings = AuthSettings()
    identity: IdentitySettings = IdentitySettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    ingestion: IngestionSettings = IngestionSettings()
    admission: AdmissionSettings = AdmissionSettings()
    limits: LimitsSettings = LimitsSettings()
    streams: StreamSettings = StreamSettings()
    privacy: PrivacySettings = PrivacySettings()
    gate: GateSettings = GateSettings()
    allow_public_without_auth: bool = Field(
        False, description="Let `gweta serve` bind a public interface (0.0.0.0) with auth off; off: it refuses."
    )
    web: WebSettings = WebSettings()
    whatsapp: WhatsAppSettings = WhatsAppSettings()

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
        auth_keys = (self.auth.jwt_secret.get_secret_value(), self.auth.jwt_public_key.get_secret_value())
        if self.identity.provider == "none":
            problems += self.auth.problems()
        elif self.auth.enabled and any(auth_keys):
            problems += self.auth.problems()  # our own tokens besides published ones: the same checks
        if self.identity.provider == "firebase" and not self.identity.project_id:
            problems.append("identity.provider=firebase needs identity.project_id (GWETA_IDENTITY__PROJECT_ID)")
        if self.identity.provider == "oidc" and not (
            self.identity.certs_url and self.identity.audience and self.identity.issuer
        ):
            problems.append("identity.provider=oidc needs identity.certs_url, identity.audience and identity.issuer")
        if self.ingestion.ocr == "pageindex" and not self.ingestion.pageindex_api_key.get_secret_value():
            problems.append(
                "ingestion.ocr=pageindex needs ingestion.pageindex_api_key (GWETA_INGESTION__PAGEINDEX_API_KEY)"
            )
        missing = self.whatsapp.missing()
        if 0 < len(missing) < 4:
            names = ", ".join(f"GWETA_WHATSAPP__{m.upper()}" for m in missing)
            problems.append(f"whatsapp is half configured: set {names} too (or none of the four)")
        if self.web.dev_signin_secret.get_secret_value() and not self.auth.jwt_secret.get_secret_value():
            problems.append(
                "web.dev_signin_secret mints HS256 tokens, so it needs auth.jwt_secret (GWETA_AUTH__JWT_SECRET)"
            )
        uses_firestore = [
            name
            for name, backend in (
                ("checkpointer", self.checkpointer.backend),
                ("audit", self.audit.backend),
                ("memory", self.memory.backend),
            )
            if backend == "firestore"
        ]
        if uses_firestore and not (self.firestore_settings.project or self.firestore_settings.emulator_host):
            problems.append(
                f"{', '.join(uses_firestore)} on firestore need firestore.project (GWETA_FIRESTORE__PROJECT)"
                " or firestore.emulator_host"
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
    def firestore_settings(self) -> FirestoreSettings:
        """The Firestore section, with the checkpointer's older ``project``/``emulator_host`` filling its gaps."""
        fs = self.firestore
        return fs.model_copy(
            update={
                "project": fs.project or self.checkpointer.project,
                "emulator_host": fs.emulator_host or self.checkpointer.emulator_host,
            }
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
