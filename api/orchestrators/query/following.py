"""Following what the evidence depends on: the provisions its "subject to", "in terms of" or "referred to in"
references name, fetched into the evidence without a search or a model.

A provision that answers a question is often incomplete on its own: "Subject to section 9, an officer may detain …"
leaves where and how long to section 9. Ingestion resolved such references to provision ids (``api.tools.links``);
here the ones made inside the evidence's provisions are followed one step, each target's first chunk added to the
evidence, within a per-step limit and only where the caller may read the target's document.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from api.schemas.documents import Chunk
from api.tools.corpus import Corpus
from api.tools.links import FOLLOWED, Reference


def chunk_of(corpus: Corpus, provision_id: str) -> Chunk | None:
    """The first chunk of ``provision_id``: one that starts in it, else the first of its section."""
    section = provision_id.split("(")[0]
    first: Chunk | None = None
    ordinal = 0
    while (chunk := corpus.chunks.get(f"{section}/c{ordinal}")) is not None:
        first = first or chunk
        if chunk.provision_id == provision_id or chunk.provision_id.startswith(provision_id + "("):
            return chunk
        ordinal += 1
    return first


def dependencies(
    corpus: Corpus, evidence: Sequence[Chunk], tenant: str, limit: int, have: Iterable[str]
) -> list[tuple[Reference, Chunk]]:
    """Up to ``limit`` provisions the ``evidence`` chunks depend on, each with the chunk to add: one for each
    reference made (a range, "subsections (2) to (5)", by its first provision), a provision of another section
    before another part of the section that refers to it (which the evidence already holds in part), then the most
    binding relation, then in the evidence's order; not one already in ``have``, and only from the public corpus or
    the caller's ``tenant``."""
    if limit <= 0:
        return []
    candidates: list[tuple[int, int, int, Reference]] = []
    made: set[tuple[str, int]] = set()
    for rank, chunk in enumerate(evidence):
        text = " ".join(chunk.text.split())
        for reference in corpus.links.refers_to(chunk.section_id):
            # Only the references this chunk's own words make, each once.
            place = (chunk.section_id, reference.at)
            if reference.relation in FOLLOWED and reference.words in text and place not in made:
                made.add(place)
                inside = int(reference.target.split("(")[0] == chunk.section_id)
                candidates.append((inside, FOLLOWED.index(reference.relation), rank, reference))
    taken = set(have)
    found: list[tuple[Reference, Chunk]] = []
    for *_, reference in sorted(candidates, key=lambda c: c[:3]):
        target = chunk_of(corpus, reference.target)
        if target is None or target.chunk_id in taken or target.tenant not in ("", tenant):
            continue
        taken.add(target.chunk_id)
        found.append((reference, target))
        if len(found) >= limit:
            break
    return found
