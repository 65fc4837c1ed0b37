"""The documents of a search's candidates ranked by how close the question is to each document as a whole (the mean
direction of its provisions' headings), fused in as one more list when ``retrieval.act_weight`` is above 0."""

from pathlib import Path

import numpy as np
import pytest

from api.schemas.documents import Chunk
from api.services import open_services
from api.settings import RetrievalSettings, Settings
from api.tools.retrieval import Retrieved, mean_directions, with_acts

# "leave" pulls the employment Act's annual leave provision first by its words; the question is about a flat.
TOLD_TO_GO = "They gave me one day to pack up and leave the flat."
TENANCY = "sample/act/2024/3"


def chunk(doc: str, section: str) -> Chunk:
    return Chunk(chunk_id=f"{doc}#{section}/c0", doc_key=doc, section_id=f"{doc}#{section}", section_number=section,
                 section_heading="Heading", title="Act", text="Text.", ordinal=0)  # fmt: skip


def test_every_chunk_of_a_ranked_document_gains_its_share() -> None:
    a1, a2, b1 = chunk("t/act/1", "1"), chunk("t/act/1", "2"), chunk("t/act/2", "1")
    c1 = chunk("t/act/3", "1")
    fused = [Retrieved(a1, 0.030, {"dense": 1}), Retrieved(a2, 0.029, {"dense": 2}),
             Retrieved(b1, 0.0299, {"bm25": 1}), Retrieved(c1, 0.027, {"bm25": 2})]  # fmt: skip
    ranked = with_acts(fused, ["t/act/2", "t/act/1"], 1.0, 60)
    assert [h.chunk.chunk_id for h in ranked] == [b1.chunk_id, a1.chunk_id, a2.chunk_id, c1.chunk_id]
    # The first document's share (1/61) outweighs the 0.0001 the second's first chunk was ahead by.
    assert ranked[0].score == pytest.approx(0.0299 + 1 / 61) and ranked[0].ranks == {"bm25": 1, "act": 1}
    assert ranked[1].score == pytest.approx(0.030 + 1 / 62) and ranked[2].ranks["act"] == 2
    # A document the ranking leaves out keeps its chunks' scores.
    assert ranked[3].score == 0.027 and "act" not in ranked[3].ranks


def test_a_documents_direction_is_the_mean_of_its_unit_rows() -> None:
    vectors = np.asarray([[3.0, 0.0], [0.0, 0.5], [0.0, 2.0]], dtype=np.float32)
    keys, directions = mean_directions({"b": [2], "a": [0, 1], "empty": []}, vectors)
    assert keys == ["a", "b"]
    # Each row counts once whatever its length: the mean of (1, 0) and (0, 1), at unit length.
    assert np.allclose(directions, [[2**-0.5, 2**-0.5], [0.0, 1.0]])


async def test_the_document_closest_to_the_question_rises(private_data_dir: Path) -> None:
    # Without the headings' ranking, so the documents' ranking alone changes the order.
    off = RetrievalSettings(cache_ttl_s=0, heading_weight=0)
    async with open_services(Settings(data_dir=private_data_dir, retrieval=off)) as services:
        retriever = services.orchestrator.deps.retriever
        assert retriever.cfg.act_weight == 0  # off by default
        before = await retriever.retrieve(TOLD_TO_GO)
        retriever.cfg = off.model_copy(update={"act_weight": 1.0})
        after = await retriever.retrieve(TOLD_TO_GO)
    assert before.hits[0].chunk.doc_key != TENANCY and "act" not in before.hits[0].ranks
    assert "acts" not in before.timings
    assert after.hits[0].chunk.doc_key == TENANCY and after.hits[0].ranks["act"] == 1
    assert "acts" in after.timings
    # Every candidate's document is ranked: the employment Act's chunks carry a later place.
    assert {h.ranks["act"] for h in after.hits} >= {1, 2}
