"""BM25's analyzer (word families, adjacent-word pairs) and field weights (title, number and heading against the
text) on real questions and on mined pairs, both development sets.

Why ``gweta tune`` chooses the analyzer only on labelled questions: on mined pairs (queries cut from the corpus's own
text) adjacent-word pairs always win, while on real questions they help one corpus and hurt the other. The corpora
are those of ``benchmarks/tune_retrieval.py`` (ObliQA: all 40 documents; Zimbabwe: the 34-Act sample), searched in
memory with bm25s at default k1 and b. Prints Markdown.

    python -m benchmarks.bm25_analyzers
"""

from __future__ import annotations

from collections.abc import Sequence

from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.tools.bm25 import Bm25sIndex, lexical_tokens
from benchmarks.tune_retrieval import POOL, load, score, units
from ingestion.pairs import mine_pairs, section_key
from ingestion.tuning import ANALYZERS, FIELD_WEIGHTS, _mrr, _sections, unit_map

Questions = Sequence[tuple[str, frozenset[str], str]]


def name(stem: bool, bigrams: bool) -> str:
    return {(False, False): "words", (True, False): "stems", (False, True): "words + pairs"}.get(
        (stem, bigrams), "stems + pairs"
    )


def table(corpus: str, chunks: Sequence[Chunk], questions: Questions, by_source: bool, count: int = 0) -> None:
    """R@10 per question kind and mined pairs' MRR@10 per kind, for each analyzer, then for each field weighting
    with words and with stems + pairs (``count``: the questions, when some are listed under two kinds)."""
    ids = [c.chunk_id for c in chunks]
    tokens, fields = lexical_tokens(chunks)
    pos = {cid: i for i, cid in enumerate(ids)}
    kinds = sorted({k for _, _, k in questions})
    pairs = mine_pairs(chunks, 2000)
    mined = sorted({p.kind for p in pairs})
    sections = unit_map(chunks, section_key)
    print(f"## {corpus}: {len(chunks)} chunks, {count or len(questions)} questions, {len(pairs)} mined pairs\n")
    configs = [(name(stem, bigrams), BM25Settings(stem=stem, bigrams=bigrams)) for stem, bigrams in ANALYZERS] + [
        (f"{name(stem, stem)}, title x{title}, heading x{heading}",
         BM25Settings(stem=stem, bigrams=stem, title_weight=title, heading_weight=heading))
        for stem in (False, True) for title, heading in FIELD_WEIGHTS
    ]  # fmt: skip
    print("| BM25 | " + " | ".join(f"R@10 {k}" for k in kinds) + " | "
          + " | ".join(f"mined {k} MRR@10 (n)" for k in mined) + " |")  # fmt: skip
    print("|" + " --- |" * (1 + len(kinds) + len(mined)))
    for label, cfg in configs:
        index = Bm25sIndex(ids, tokens, cfg, fields)
        ranked = [units(chunks, [pos[h.chunk_id] for h in index._search(q, POOL)], by_source) for q, _, _ in questions]
        cells = []
        for kind in kinds:
            pick = [i for i, (_, _, k) in enumerate(questions) if k == kind]
            cells.append(f"{score([ranked[i] for i in pick], [questions[i][1] for i in pick])[0]:.3f}")
        for kind in mined:
            some = [p for p in pairs if p.kind == kind]
            found = [_sections(sections, [h.chunk_id for h in index._search(p.query, POOL)]) for p in some]
            cells.append(f"{_mrr(found, [p.section_id for p in some]):.3f} ({len(some)})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    chunks, questions, by_source = load("obliqa", {str(i) for i in range(1, 41)})
    count = len(questions)
    questions += [(q, gold, "1 gold" if len(gold) == 1 else "2+ gold") for q, gold, _ in questions]
    table("ObliQA development questions (all, and by how many gold passages)", chunks, questions, by_source, count)
    chunks, questions, by_source = load("zim_qa", set())
    table("Zimbabwe sample (zim_qa dev + ours)", chunks, questions, by_source)


if __name__ == "__main__":
    main()
