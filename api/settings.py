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
    backend: Literal["milvus"] = Field(
        "milvus", description="Vector store: Milvus (Milvus Lite in data_dir when uri is empty)."
    )
    uri: str = Field("", description="Milvus/Zilliz URI; empty means a Milvus Lite folder inside data_dir.")
    token: SecretStr = Field(SecretStr(""), description="Milvus/Zilliz token (user:password or an API key).")
    collection: str = Field(
        "gweta_chunks", description="Collection name for the packaged model; other models get '<name>__<model>_<dims>'."
    )
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
    backend: Literal["local", "s3"] = Field(
        "local",
        description="Where documents, chunks and indexes are stored: a local folder, or any S3 API (Cloudflare R2).",
    )
    bucket: str = Field("gweta", description="S3: the bucket.")
    endpoint_url: str = Field("", description="S3 API endpoint, e.g. https://<account>.r2.cloudflarestorage.com")
    region: str = Field("auto", description="S3: the region ('auto' for R2).")
    access_key_id: SecretStr = Field(SecretStr(""), description="S3: access key id.")
    secret_access_key: SecretStr = Field(SecretStr(""), description="S3: secret access key.")
    prefix: str = Field("", description="Key prefix inside the store, so one bucket can hold several deployments.")
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
    backend: Literal["bm25s", "rank_bm25"] = Field(
        "bm25s",
        description="bm25s by measurement (benchmarks/results/bm25_backends.md); rank_bm25 reads the same artifact.",
    )
    k1: float = Field(1.5, description="BM25 term-frequency saturation (gweta tune may choose another).")
    b: float = Field(0.75, description="BM25 length normalisation, 0 to 1 (gweta tune may choose another).")
    stem: bool = Field(False, description="Index word families ('resources' = 'resource'), not exact words.")
    bigrams: bool = Field(False, description="Also index each pair of adjacent words, so shared phrases count more.")
    title_weight: int = Field(1, ge=0, le=3, description="How many times a chunk's document title counts (text: once).")
    heading_weight: int = Field(
        1, ge=0, le=3, description="How many times a provision's number and heading count (text: once)."
    )


class EmbeddingSettings(BaseModel):
    backend: Literal["minilm", "openai"] = Field(
        "minilm",
        description="minilm: the packaged all-MiniLM-L6-v2 (or a tuned copy); openai: any OpenAI-compatible API.",
    )
    model: str = Field("", description="Model name for the openai backend, or a local sentence-transformers folder.")
    base_url: str = Field("", description="OpenAI-compatible embeddings endpoint (openai backend).")
    api_key: SecretStr = Field(SecretStr(""), description="API key for the embeddings endpoint (openai backend).")
    dimensions: int = Field(384, description="Vector size; must match the model (384 for MiniLM).")
    batch_size: int = Field(32, description="Texts per embedding call at ingestion.")
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
    backend: Literal["none", "bge"] = Field(
        "none", description="Cross-encoder reranking of the fused candidates: none (the stage passes through) or bge."
    )
    model_path: str = Field("", description="A local folder with the cross-encoder (e.g. bge-reranker-v2-m3).")
    candidates: int = Field(20, ge=1, le=200, description="Fused candidates scored by the cross-encoder.")
    max_length: int = Field(512, description="Longest question-and-passage pair the cross-encoder reads, in tokens.")
    batch_size: int = Field(16, description="Pairs scored per cross-encoder call.")
    cache_ttl_s: float = Field(3600.0, description="How long a pair's score is reused.")


class LLMSettings(BaseModel):
    backend: Literal["none", "openai"] = Field(
        "none", description="none: extractive answers (verbatim quotes); openai: any OpenAI-compatible chat endpoint."
    )
    base_url: str = Field(
        "", description="OpenAI-compatible chat endpoint, e.g. http://127.0.0.1:8090/v1 (openai backend)."
    )
    api_key: SecretStr = Field(SecretStr(""), description="API key for the chat endpoint.")
    model: str = Field("gpt-4o-mini", description="Chat model name sent to the endpoint.")
    temperature: float = Field(0.0, description="Sampling temperature for every call.")
    timeout_s: float = Field(
        30.0, description="HTTP limit for one model request, and for the gap between streamed chunks."
    )
    max_tokens: int = Field(800, description="Longest answer the model may write, in tokens.")
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
    backend: Literal["sqlite", "firestore"] = Field(
        "sqlite", description="Where the graph's per-session state is saved: SQLite in data_dir, or Firestore."
    )
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

    backend: Literal["sqlite", "firestore", "off"] = Field(
        "sqlite", description="Where one record per question is written: SQLite in data_dir, Firestore, or off."
    )
    store_question: Literal["hash", "text"] = Field(
        "hash", description="Keep the question's text, or only its salted SHA-256 (privacy)."
    )
    hash_salt: SecretStr = Field(SecretStr(""), description="Salt mixed into question hashes (set one in production).")


class MemorySettings(BaseModel):
    """Where QA memory (verified answers served again) lives: this process, or Firestore for every replica."""

    backend: Literal["process", "firestore"] = Field(
        "process", description="QA memory of verified answers: this process only, or Firestore (shared by replicas)."
    )
    max_entries: int = Field(1000, ge=1, description="Answers a process keeps (process backend).")
    scan_limit: int = Field(
        500, ge=1, le=10_000, description="Newest answers compared per lookup under one key (firestore backend)."
    )


class TracingSettings(BaseModel):
    backend: Literal["log", "langsmith"] = Field(
        "log", description="log: JSON logs with a request id; langsmith: traces sent to LangSmith too."
    )
    endpoint: str = Field("https://api.smith.langchain.com", description="LangSmith API endpoint.")
    api_key: SecretStr = Field(SecretStr(""), description="LangSmith API key.")
    project: str = Field("gweta", description="LangSmith project the traces go to.")


class AuthSettings(BaseModel):
    enabled: bool = Field(False, description="Require a JWT on every API call (off: local use, caller is admin).")
    jwt_secret: SecretStr = Field(SecretStr(""), description="HS256 shared secret.")
    jwt_public_key: SecretStr = Field(SecretStr(""), description="PEM public key; when set, tokens must be RS256.")
    audience: str = Field("gweta", description="Required 'aud' claim of our own JWTs.")
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


class StateSettings(BaseModel):
    """What replicas share between requests: answer replay, per-caller limits, WhatsApp de-duplication, corpus
    switches. ``memory`` keeps it in this process (one replica); ``redis`` shares it through a Redis server."""

    backend: Literal["memory", "redis"] = Field(
        "memory", description="memory: this process only (one replica); redis: shared by every replica."
    )
    url: SecretStr = Field(
        SecretStr(""),
        description="Redis URL for backend=redis, e.g. redis://host:6379/0, rediss://:password@host:6380 or "
        "unix:///run/redis.sock (Render's Key Value: its connectionString).",
    )
    prefix: str = Field("gweta:", description="Prefix of every key and channel, so services can share one Redis.")
    connect_timeout_s: float = Field(2.0, gt=0, description="Limit for opening a connection to Redis.")
    timeout_s: float = Field(
        1.0, gt=0, description="Limit for one Redis call; past it the call counts as failed (see the fail_* settings)."
    )
    limits_fail: Literal["open", "closed"] = Field(
        "open", description="When Redis fails, per-caller rate and stream limits let requests through (open) or "
        "refuse them with 503 (closed).",
    )  # fmt: skip
    whatsapp_seen_fail: Literal["open", "closed"] = Field(
        "closed", description="When Redis fails, a WhatsApp message whose id cannot be checked is answered (open) or "
        "left for Meta's retry (closed, so nothing is answered twice).",
    )  # fmt: skip
    lease_s: float = Field(
        30.0, ge=1, description="Redis: an answer in progress holds its caller's slot this long unless its replica "
        "renews it (every third of it), so a replica that died frees its callers' slots within this time.",
    )  # fmt: skip
    stream_idle_s: float = Field(
        60.0, gt=0, description="Redis: an answer resumed on another replica whose producing replica has written "
        "nothing for this long ends with an error event (that replica died).",
    )  # fmt: skip
    seen_ttl_s: float = Field(
        7 * 86_400.0, gt=0, description="Redis: how long a WhatsApp message id is remembered (Meta retries for days)."
    )


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
    firebase_auth_domain: str = Field("", description="Firebase auth domain (web sign-in).")
    firebase_project_id: str = Field("", description="Firebase project id (web sign-in).")
    firebase_auth_url: str = Field(
        "https://identitytoolkit.googleapis.com", description="Firebase Auth REST base (accounts:signInWithPassword)."
    )
    firebase_token_url: str = Field("https://securetoken.googleapis.com", description="Firebase token refresh base.")
    dev_signin_secret: SecretStr = Field(
        SecretStr(""), description="A passphrase that lets the page mint a short-lived HS256 token (development only)."
    )
    dev_token_ttl_s: int = Field(900, ge=60, le=86_400, description="Lifetime of a dev sign-in token.")
    dev_signin_failures: int = Field(
        5, ge=1, le=1000,
        description="Wrong dev sign-in passphrases one client (address) may send within dev_signin_window_s; then "
        "every attempt from it is refused with 429 and Retry-After until its oldest failure is that old.",
    )  # fmt: skip
    dev_signin_window_s: int = Field(
        300, ge=1, le=86_400, description="The window, in seconds, over which dev_signin_failures are counted."
    )


class WhatsAppSettings(BaseModel):
    """The WhatsApp Cloud API number: its webhook answers 404 until all four credentials are set."""

    verify_token: SecretStr = Field(SecretStr(""), description="Chosen by us, typed into Meta's webhook setup.")
    app_secret: SecretStr = Field(SecretStr(""), description="The Meta app secret: signs every webhook POST.")
    access_token: SecretStr = Field(SecretStr(""), description="A system-user token allowed to send messages.")
    phone_number_id: str = Field("", pattern=r"^[0-9]*$", description="The sending number's id (not the number).")
    graph_url: str = Field(
        "https://graph.facebook.com", description="Meta Graph API base URL (a loopback server in tests)."
    )
    api_version: str = Field("v21.0", pattern=r"^v\d+\.\d+$", description="Graph API version in the URL path.")
    timeout_s: float = Field(10.0, gt=0, description="Limit for one Graph API call.")
    attempts: int = Field(4, ge=1, le=8, description="Tries per Graph API call on 429, 5xx and network errors.")
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each try (Retry-After wins).")
    rate_limit: int = Field(6, ge=1, description="Questions one sender may ask per rate_window_s.")
    rate_window_s: float = Field(60.0, gt=0, description="The window rate_limit counts questions in, in seconds.")
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
    top_k: int = Field(
        6,
        ge=1,
        le=50,
        description="Chunks handed to synthesis after fusion; with section_chunks above 0, the best chunks of further "
        "provisions may follow them, up to twice as many in all.",
    )
    candidates: int = Field(30, ge=1, le=500, description="Candidates asked of each backend before fusion.")
    section_chunks: int = Field(
        1,
        ge=0,
        le=50,
        description="The evidence a search hands on holds its first top_k chunks and, in their place in the search's "
        "order, the best chunks of further provisions (sections) until it holds top_k distinct ones where the search "
        "found them, choosing at most this many chunks of one section among those top_k places. So a long section "
        "found several times does not keep other provisions out of the evidence an answer or the closest provisions "
        "are chosen from; 0: the first top_k chunks only.",
    )
    heading_weight: float = Field(
        1.0,
        ge=0,
        description="Weight, in fusion, of the ranking of the found provisions by how close their heading (with their "
        "law's title) is in meaning to the question; 0 turns it off (hybrid searches only).",
    )
    heading_source: int = Field(
        0,
        ge=0,
        le=200,
        description="Provisions found by their heading alone: this many provisions whose headings (with their law's "
        "title), out of every provision's, are closest in meaning to the question, their first chunks fused in as one "
        "more list beside the two searches' (hybrid searches only; the headings' vectors are read from those ingestion "
        "kept, or embedded once, at the first search that asks); 0 turns it off.",
    )
    heading_source_weight: float = Field(
        1.0, ge=0, description="Weight, in fusion, of the list of provisions found by their heading (heading_source)."
    )
    rrf_k: int = Field(60, ge=1, description="Reciprocal rank fusion constant: a list's rank r adds weight / (k + r).")
    dense_weight: float = Field(1.0, ge=0, description="Weight of the dense list in fusion (gweta tune may raise it).")
    bm25_weight: float = Field(1.0, ge=0, description="Weight of the BM25 list in fusion.")
    timeout_s: float = Field(5.0, gt=0, description="Limit for embedding the question and for each search backend.")
    context_tokens: int = Field(1500, ge=100, le=100_000, description="Token budget of the context the LLM reads.")
    provision_tokens: int = Field(
        600, ge=50, description="A provision this long or shorter goes into the context whole."
    )
    cache_ttl_s: float = Field(900.0, ge=0, description="How long a query's retrieval result is reused (0: never).")
    cache_entries: int = Field(2048, ge=1, description="Retrieval results kept in the semantic result cache (LRU).")
    cache_similarity: float = Field(
        0.95, gt=0, le=1, description="A query this close (cosine) to a cached one reuses its results."
    )
    mask_cache_entries: int = Field(256, ge=1, description="Filter sets whose BM25 candidate mask is kept (LRU).")
    follow_references: int = Field(
        3,
        ge=0,
        le=20,
        description="Provisions the evidence depends on ('subject to section 9', 'referred to in "
        "subsection (3)') fetched into it after each planned step, without a search; 0 turns following off.",
    )
    add_definitions: int = Field(
        2,
        ge=0,
        le=2,
        description="Definitions an answer quotes as their own citations (kind 'definition'): of terms its cited "
        "words or the question use that their document defines; 0 turns adding them off.",
    )
    related_provisions: int = Field(
        3,
        ge=1,
        le=10,
        description="When nothing found answers but the evidence is close enough, the reply shows at most this many of "
        "the closest provisions (distinct sections of the evidence, best first), one verbatim sentence each.",
    )
    related_among: int = Field(
        6,
        ge=0,
        le=10,
        description="The closest provisions are chosen among this many distinct sections of the evidence, by the "
        "search's order fused with how close in meaning each one's nearest sentence is to the question; 0 or at most "
        "related_provisions: the first related_provisions sections in the search's order.",
    )
    add_references: int = Field(
        2,
        ge=0,
        le=5,
        description="Referenced provisions an answer quotes as their own citations (kind 'reference'): those its cited "
        "words refer to ('subject to section 12', 'referred to in subsection (3)', a schedule) that the corpus holds "
        "and the caller may read, their sentence most relevant to the question; 0 turns adding them off.",
    )
    add_referring: int = Field(
        1,
        ge=0,
        le=3,
        description="Provisions that depend on a cited one quoted as their own citations (kind 'reference'): those "
        "whose words make the cited provision what they are 'subject to', 'in terms of', 'referred to in', from the "
        "answer's evidence or the cited provision's own law (sharing a word with the question), the sentence making "
        "the reference quoted; 0 turns adding them off.",
    )
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
    pageindex_api_key: SecretStr = Field(SecretStr(""), description="PageIndex API key (ocr=pageindex).")
    pageindex_timeout_s: float = Field(600.0, gt=0, description="Longest wait for PageIndex to finish one file.")
    parse_workers: int = Field(0, ge=0, le=64, description="Processes that parse files; 0 picks one per core.")
    max_chunk_tokens: int = Field(200, ge=16, le=2048, description="Longest chunk, in the embedding model's tokens.")
    max_file_mb: int = Field(
        128, ge=1, le=4096, description="Largest source file read, in MiB; a larger one is reported and left out."
    )
    max_unpacked_mb: int = Field(
        64, ge=1, le=4096,
        description="Largest total uncompressed size, in MiB, of an archive-based file (DOCX, or any zip): one over "
        "it is reported as failed and left out, before anything is unpacked.",
    )  # fmt: skip
    max_compression_ratio: int = Field(
        100, ge=2, le=100_000,
        description="Largest ratio of uncompressed to compressed size of an archive-based file, or of any member "
        "over 1 MiB (a Word document's XML packs about 10 to 1; a zip bomb, hundreds to 1 or more).",
    )  # fmt: skip
    max_chunks_per_document: int = Field(
        20_000, ge=1, le=10_000_000,
        description="Most chunks one document may become (at most 2,400 characters each); a document over it is "
        "reported as failed and nothing of it is stored or embedded.",
    )  # fmt: skip
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
    enabled: bool = Field(
        True, description="Admission control: bound the answer streams one instance runs and queues (503 beyond)."
    )
    max_streams: int = Field(100, ge=1, description="Answer streams one instance runs at once.")
    max_waiting: int = Field(100, ge=0, description="Streams that may wait for a turn; beyond them, 503 at once.")
    max_wait_s: float = Field(10.0, gt=0, description="Longest a stream waits for its turn before a 503.")
    retry_after_s: float = Field(2.0, gt=0, description="Retry-After sent with a 503.")


class GateSettings(BaseModel):
    judge: Literal["rules", "cross_encoder", "llm"] = Field(  # api.composer.judge.judge.JudgeName
        "rules",
        description="What judges whether a cited provision supports a sentence of the answer (the gate's "
        "ClaimJudge): 'rules', the hand-written facts, meaning, polarity and topic checks; 'cross_encoder', an NLI or "
        "support-scoring model from gate.cross_encoder_path; 'llm', the configured chat model (the judge skill). "
        "The rules' fact and topic checks apply on top of either model.",
    )
    cross_encoder_path: str = Field(
        "",
        description="Local folder of the cross-encoder judge's model (transformers format: an NLI model with an "
        "'entailment' label, or a one-output support scorer). Nothing is downloaded.",
    )
    cross_encoder_threshold: float = Field(
        0.5, gt=0, lt=1, description="The cross-encoder's support (entailment) probability a sentence needs."
    )
    llm_max_calls: int = Field(
        12,
        ge=0,
        description="New judge-skill calls one answer may make (cached pairs are free); past it, the rules decide.",
    )
    llm_timeout_s: float = Field(4.0, gt=0, description="Limit for one judge-skill call; a late one leaves the "
                                 "decision to the rules.")  # fmt: skip


class Settings(BaseSettings):
    """The service's configuration, validated once at start-up."""

    model_config = SettingsConfigDict(env_prefix="GWETA_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Field(
        Path(".gweta-data"),
        description="Folder for all embedded state: Milvus Lite, objects, checkpoints, audit, tuned models.",
    )
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
    state: StateSettings = StateSettings()
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
        if self.state.backend == "redis" and not self.state.url.get_secret_value():
            problems.append("state.backend=redis needs state.url (GWETA_STATE__URL)")
        missing = self.whatsapp.missing()
        if 0 < len(missing) < 4:
            names = ", ".join(f"GWETA_WHATSAPP__{m.upper()}" for m in missing)
            problems.append(f"whatsapp is half configured: set {names} too (or none of the four)")
        dev_secret = self.web.dev_signin_secret.get_secret_value()
        if dev_secret and not self.auth.jwt_secret.get_secret_value():
            problems.append(
                "web.dev_signin_secret mints HS256 tokens, so it needs auth.jwt_secret (GWETA_AUTH__JWT_SECRET)"
            )
        if dev_secret and len(dev_secret.encode()) < MIN_HS256_SECRET_BYTES:
            problems.append(
                f"web.dev_signin_secret (GWETA_WEB__DEV_SIGNIN_SECRET) must be at least {MIN_HS256_SECRET_BYTES} "
                f"bytes, as auth.jwt_secret must: it is {len(dev_secret.encode())} (a short passphrase can be guessed)"
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
