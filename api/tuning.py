"""What ``gweta tune`` chose for this data dir, and how it is applied to the settings every entry point builds.

``<data_dir>/tuning/state.json`` names the active tuned embedder (a folder under ``<data_dir>/models/``), the vector
collection its vectors live in, and the BM25 (analyzer, field weights, k1, b) and fusion parameters fit on pairs
mined from the corpus or on labelled questions (with the learned fusion's trees, when labelled questions trained trees
that beat RRF). Writing that file (atomically, by rename) is the switch; deleting the tuning returns to the packaged
model.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

from api.settings import BM25Settings, EmbeddingSettings, RetrievalSettings, Settings

STATE_FILE = Path("tuning") / "state.json"
PACKAGED_NAME = "minilm"


class TuningState(BaseModel):
    version: int = Field(0, description="The active tuned model's version; 0 means the packaged model.")
    last_version: int = Field(0, description="The highest version ever made here, so numbers are never reused.")
    model_dir: str = Field("", description="The tuned model's folder, relative to the data dir.")
    collection: str = Field("", description="The vector collection embedded with the tuned model.")
    base_collection: str = Field("", description="The packaged model's collection, kept for revert.")
    base_version: str = Field("", description="Corpus version the base collection matched when tuning switched.")
    k1: float | None = None
    b: float | None = None
    stem: bool = False
    bigrams: bool = False
    title_weight: int = 1
    heading_weight: int = 1
    dense_weight: float | None = None
    bm25_weight: float | None = None
    fusion_file: str = Field("", description="The learned fusion's trees, relative to the data dir; empty: RRF.")

    @property
    def embedder_name(self) -> str:
        return f"{PACKAGED_NAME}-tuned-v{self.version}" if self.version else PACKAGED_NAME


def load_state(data_dir: Path) -> TuningState:
    path = data_dir / STATE_FILE
    return TuningState.model_validate_json(path.read_text()) if path.is_file() else TuningState()


def save_state(data_dir: Path, state: TuningState) -> None:
    """Write the state by rename, so a reader sees the old tuning or the new one, never half of either."""
    write_atomically(data_dir / STATE_FILE, state.model_dump_json(indent=2))


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` by rename: a reader sees the old file or the new one, never half of either."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def apply_tuning(settings: Settings) -> Settings:
    """The settings with this data dir's tuning applied; unchanged when nothing is tuned or when the deploy names
    its own embedder (an explicit model folder or an API), whose vectors the tuned collection does not hold."""
    state = load_state(settings.data_dir)
    update: dict[str, object] = {}
    if state.k1 is not None and state.b is not None:
        chosen = {"k1": state.k1, "b": state.b, "stem": state.stem, "bigrams": state.bigrams,
                  "title_weight": state.title_weight, "heading_weight": state.heading_weight}  # fmt: skip
        update["bm25"] = BM25Settings(**{**settings.bm25.model_dump(), **chosen})
    if state.dense_weight is not None and state.bm25_weight is not None:
        chosen_fusion: dict[str, object] = {"dense_weight": state.dense_weight, "bm25_weight": state.bm25_weight}
        if state.fusion_file:
            chosen_fusion["learned_fusion_path"] = settings.data_dir / state.fusion_file
        update["retrieval"] = RetrievalSettings(**{**settings.retrieval.model_dump(), **chosen_fusion})
    packaged = settings.embeddings.backend == "minilm" and not settings.embeddings.model
    if state.version and packaged and state.model_dir:
        model = str(settings.data_dir / state.model_dir)
        embeddings = {**settings.embeddings.model_dump(), "model": model, "name": state.embedder_name}
        update["embeddings"] = EmbeddingSettings(**embeddings)  # its collection follows from its name
    return settings.model_copy(update=update) if update else settings
