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
    cache_entries: int = Field(
        20_000, ge=0, description="Query path: vectors kept by text across requests (LRU; 0 keeps none)."
    )
    batch_wait_ms: float = Field(
        3.0, ge=0, le=100, description="Query path: how long a text waits for others to share one model call."
    )
    max_batch: int = Field(64, ge=1, le=4096, description="Query path: texts in one shared model call, at most.")


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
    tenant: str = Field(
        "", max_length=128, pattern=r"^[A-Za-z0-9._-]*$",
        description="Owner of what is ingested: only callers of this tenant see it. '' is the public corpus.",
    )  # fmt: skip


class AdmissionSettings(BaseModel):
    enabled: bool = True
    max_streams: int = Field(100, ge=1, description="Answer streams one instance runs at once.")
    max_waiting: int = Field(100, ge=0, description="Streams that may wait for a turn; beyond them, 503 at once.")
    max_wait_s: float = Field(10.0, gt=0, description="Longest a stream waits for its turn before a 503.")
    retry_after_s: float = Field(2.0, gt=0, description="Retry-After sent with a 503.")


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
    admission: AdmissionSettings = AdmissionSettings()

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
        if self.auth.enabled and not any(auth_keys):
            problems.append("auth.enabled needs auth.jwt_secret (HS256) or auth.jwt_public_key (RS256)")
        if self.ingestion.ocr == "pageindex" and not self.ingestion.pageindex_api_key.get_secret_value():
            problems.append(
                "ingestion.ocr=pageindex needs ingestion.pageindex_api_key (GWETA_INGESTION__PAGEINDEX_API_KEY)"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def milvus_uri(self) -> str:
        return self.vector_store.uri or str(self.data_dir / "milvus.db")
