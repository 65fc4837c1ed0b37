"""Training pairs mined from a corpus with no labels: (query, the chunk it should find, a chunk it should not).

Queries come from the corpus's own text (a provision's title path and heading, a defined term, one of its sentences
asking for the rest) or, when a model is configured and asked to, from the questions it writes for one provision
from that provision alone. Hard negatives are BM25's best hits from other provisions. Pairs are split by provision, so
a held-out provision is never trained on. The one exception is ``labelled_pairs``: questions a user has labelled with
their gold provisions (``gweta tune --questions``), split by question so the held-out ones only measure.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from api.composer.skills import Skill, load_skills
from api.composer.structured import ask_json
from api.evaluation.core import Question, unit_of
from api.schemas.documents import Chunk
from api.settings import BM25Settings, Settings
from api.tools.bm25 import Bm25sIndex
from api.tools.llm import build_llm

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

Progress = Callable[[str, int, int | None], None]
PairKind = Literal["heading", "definition", "sentence", "generated", "labelled"]
_SENTENCE = re.compile(r"(?<=[.;:])\s+(?=[A-Z(])")
_DEFINITION = re.compile(r"[\"“']([^\"”']{3,60})[\"”']\s+(?:means|includes|has the meaning)\b")
_WORDS = re.compile(r"[A-Za-z]{3,}")
_TOKENS = re.compile(r"\w+")
# "What does provision 5. … (1) state?" asks for a number, not for what the law says: nobody asks that way.
_NUMBERED = re.compile(
    r"\b(?:sections?|subsections?|provisions?|paragraphs?|clauses?|regulations?|articles?)\s*\(?\d|\(\d{1,3}[A-Za-z]?\)",
    re.I,
)
COPY_RUN = 8  # a generated question repeating this many consecutive words of its provision teaches nothing BM25 lacks
GENERATE_STAGE = "generating questions"


def no_progress(stage: str, advance: int, total: int | None) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Pair:
    """A query mined from the corpus, the chunk text it should find, and a BM25-mined text it should not."""

    query: str
    positive: str
    negative: str
    chunk_id: str
    section_id: str
    kind: PairKind


def section_key(chunk: Chunk) -> str:
    return chunk.section_id or chunk.chunk_id


def _heading_key(chunk: Chunk) -> tuple[str, ...]:
    """The words a heading query asks with (its document's title and the heading), numbers and case aside; empty
    for a bare reference such as "AML 1.1.1.(1)", which is no heading."""
    words = _WORDS.findall(chunk.section_heading.lower())
    return (*_WORDS.findall(chunk.title.lower()), "|", *words) if len(words) >= 2 else ()


def _distinct_headings(chunks: Sequence[Chunk]) -> set[tuple[str, ...]]:
    """Heading queries that name one provision of the corpus. Where a heading is shared, its query points to all
    of them, and training each to find its own teaches the model to tell apart what the query cannot: some guidance
    documents head every paragraph with the document's name and a number, so one heading can name hundreds of
    provisions and most of a document's mined pairs."""
    named: dict[tuple[str, ...], set[str]] = {}
    for chunk in chunks:
        if key := _heading_key(chunk):
            named.setdefault(key, set()).add(section_key(chunk))
    return {key for key, provisions in named.items() if len(provisions) == 1}


def _queries(chunk: Chunk, rng: random.Random, distinct: set[tuple[str, ...]]) -> list[tuple[PairKind, str, str]]:
    """(kind, query, positive) candidates for one chunk; the positive drops what the query copied from it. A heading
    becomes a query only when it is in ``distinct`` (it names this provision alone)."""
    found: list[tuple[PairKind, str, str]] = []
    heading = chunk.section_heading.strip()
    if _heading_key(chunk) in distinct:
        found.append(("heading", f"{chunk.title}: {heading}", chunk.text))
    for term in _DEFINITION.findall(chunk.text)[:1]:
        found.append(("definition", f"What does {term} mean in the {chunk.title}?", chunk.text))
    sentences = [s for s in _SENTENCE.split(chunk.text) if len(_WORDS.findall(s)) >= 6]
    if len(sentences) >= 2:  # inverse cloze: one sentence asks for the rest of its provision
        picked = rng.choice(sentences)
        rest = chunk.text.replace(picked, " ").strip()
        found.append(("sentence", picked, f"{chunk.title} {heading}\n{rest}"))
    elif len(_WORDS.findall(chunk.text)) >= 12 and not found:
        words = chunk.text.split()
        cut = max(6, len(words) // 3)
        found.append(("sentence", " ".join(words[:cut]), f"{chunk.title} {heading}\n{' '.join(words[cut:])}"))
    return found


def mine_pairs(chunks: Sequence[Chunk], max_pairs: int, seed: int = 0) -> list[Pair]:
    """Queries with their positive and a hard negative: the best BM25 hit from another provision (a neighbour in
    the same Act or a provision of another Act that shares the words), so the model learns what BM25 confuses."""
    rng = random.Random(seed)
    order = list(chunks)
    rng.shuffle(order)
    distinct = _distinct_headings(chunks)
    candidates: list[tuple[Chunk, PairKind, str, str]] = []
    for chunk in order:
        candidates += [(chunk, kind, q, pos) for kind, q, pos in _queries(chunk, rng, distinct)]
        if len(candidates) >= max_pairs:
            break
    return attach_negatives(chunks, candidates[:max_pairs], seed)


def held_out(key: str, share: float = 0.2) -> bool:
    """Whether ``key`` falls in the held-out ``share``: a hash of it, so neither order nor run decides."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 1000 < share * 1000


def split_pairs(pairs: Sequence[Pair], share: float = 0.2) -> tuple[list[Pair], list[Pair]]:
    """Train and held-out pairs, split by provision (a hash of its id), so no held-out provision is trained on."""
    return [p for p in pairs if not held_out(p.section_id, share)], [p for p in pairs if held_out(p.section_id, share)]


def attach_negatives(
    chunks: Sequence[Chunk], candidates: Sequence[tuple[Chunk, PairKind, str, str]], seed: int = 0
) -> list[Pair]:
    """Pairs for (chunk, kind, query, positive) candidates, each with the hard negative ``mine_pairs`` gives its own
    queries: the best BM25 hit from another provision, else (nothing lexically close) any other provision, which
    still teaches the contrast; a candidate with neither is dropped."""
    if not candidates:
        return []
    rng = random.Random(seed)
    index = Bm25sIndex.of_chunks(chunks, BM25Settings())
    by_id = {c.chunk_id: c for c in chunks}
    pairs = []
    for chunk, kind, query, positive in candidates:
        negative = ""
        for hit in index._search(query, 10):
            other = by_id[hit.chunk_id]
            if section_key(other) != section_key(chunk):
                negative = other.embed_text
                break
        if not negative:
            other = rng.choice(chunks)
            negative = other.embed_text if section_key(other) != section_key(chunk) else ""
        if negative:
            pairs.append(Pair(query, positive, negative, chunk.chunk_id, section_key(chunk), kind))
    return pairs


def split_questions(questions: Sequence[Question], share: float = 0.2) -> tuple[list[Question], list[Question]]:
    """Training and held-out questions, split by a hash of each question's text, so where a question sits in the file
    does not decide which side it falls on."""
    return [q for q in questions if not held_out(q.text, share)], [q for q in questions if held_out(q.text, share)]


def labelled_pairs(chunks: Sequence[Chunk], questions: Sequence[Question]) -> list[Pair]:
    """A pair per (question, gold provision): the provision's first chunk as the positive, and as the negative the
    best BM25 hit that is none of the question's gold (what the lexical side would wrongly offer). A gold provision
    the corpus does not hold gives no pair; ``Pair.section_id`` is the gold unit as the question names it."""
    if not chunks or not questions:
        return []
    index = Bm25sIndex.of_chunks(chunks, BM25Settings())
    by_id = {c.chunk_id: c for c in chunks}
    first: dict[tuple[bool, str], Chunk] = {}
    for chunk in chunks:
        for by_source in (True, False):
            first.setdefault((by_source, unit_of(chunk, by_source)), chunk)
    pairs = []
    for question in questions:
        hits = (by_id[h.chunk_id] for h in index._search(question.text, 30))
        negative = next((c for c in hits if unit_of(c, question.by_source_id) not in question.gold), None)
        for unit in sorted(question.gold):
            positive = first.get((question.by_source_id, unit))
            if positive is not None and negative is not None:
                pairs.append(Pair(question.text, positive.embed_text, negative.embed_text, positive.chunk_id, unit,
                                  "labelled"))  # fmt: skip
    return pairs


def copies_provision(question: str, text: str, run: int = COPY_RUN) -> bool:
    """Whether ``question`` repeats ``run`` or more consecutive words of ``text`` (case and punctuation aside)."""
    words = _TOKENS.findall(text.lower())
    seen = {tuple(words[at : at + run]) for at in range(len(words) - run + 1)}
    asked = _TOKENS.findall(question.lower())
    return any(tuple(asked[at : at + run]) in seen for at in range(len(asked) - run + 1))


def usable_questions(reply: dict[str, Any]) -> list[str] | None:
    """The distinct questions (3 to 60 words, at most 3) in a reply, none naming a provision by its number; None when
    the reply lacks a ``questions`` list."""
    value = reply.get("questions")
    if not isinstance(value, list):
        return None
    found: list[str] = []
    for item in value:
        question = " ".join(item.split()) if isinstance(item, str) else ""
        if 3 <= len(_TOKENS.findall(question)) <= 60 and not _NUMBERED.search(question) and question not in found:
            found.append(question)
    return found[:3]


def _provisions_to_ask(chunks: Sequence[Chunk], limit: int, seed: int) -> list[Chunk]:
    """One chunk from each of up to ``limit`` provisions (seeded choice), each with enough text to ask about."""
    rng = random.Random(seed)
    by_section: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        if len(_WORDS.findall(chunk.text)) >= 12:
            by_section.setdefault(section_key(chunk), []).append(chunk)
    keys = sorted(by_section)
    rng.shuffle(keys)
    return [rng.choice(by_section[key]) for key in keys[:limit]]


@dataclass(slots=True)
class GenerateStats:
    """What asking the model for questions gave; ``note`` says why nothing was asked, when nothing was."""

    requested: int = 0  # provisions asked for (--generate)
    asked: int = 0  # provisions whose call was made
    answered: int = 0  # provisions with at least one question kept
    questions: int = 0  # questions kept
    invalid: int = 0  # replies that were not a JSON object with a "questions" list
    empty: int = 0  # replies with no usable question in their list
    failed: int = 0  # calls that failed or timed out
    copied: int = 0  # questions dropped for repeating COPY_RUN consecutive words of their provision
    shared: int = 0  # questions written for two or more provisions, dropped from each: they point to none of them
    unasked: int = 0  # provisions never asked because the time budget ran out
    stopped_by: str = "done"
    seconds: float = 0.0
    note: str = ""


async def ask_questions(
    llm: BaseChatModel | None, skill: Skill, chunks: Sequence[Chunk], limit: int, *, max_seconds: float,
    call_timeout_s: float, attempts: int = 1, concurrency: int = 3, seed: int = 0, progress: Progress = no_progress,
) -> tuple[list[tuple[Chunk, str]], GenerateStats]:  # fmt: skip
    """Ask ``llm`` for questions about up to ``limit`` provisions, ``concurrency`` at a time, within ``max_seconds``
    (a call in flight is cut at the deadline). A bad reply or a failed call skips its provision and is counted;
    it never ends the run. Returns (chunk, question) in the provisions' chosen order, so a seed repeats a run."""
    stats = GenerateStats(requested=max(0, limit))
    if limit <= 0:
        stats.note = "off"
        return [], stats
    if llm is None:
        stats.note = "no model configured"
        return [], stats
    todo = _provisions_to_ask(chunks, limit, seed)
    found: dict[int, list[str]] = {}
    start = time.perf_counter()
    deadline = start + max_seconds
    queue = iter(enumerate(todo))  # shared by the workers; the event loop hands out one item at a time
    progress(GENERATE_STAGE, 0, len(todo))

    async def ask(at: int, chunk: Chunk, remaining: float) -> None:
        values = {"title": chunk.title, "heading": chunk.section_heading or chunk.section_number, "text": chunk.text}
        reply, call = await ask_json(llm, skill, min(call_timeout_s, remaining), attempts, values)
        if reply is None:
            if call["outcome"] == "unparsable":
                stats.invalid += 1
            else:
                stats.failed += 1
                if call["outcome"] == "timeout" and time.perf_counter() >= deadline - 0.05:
                    stats.stopped_by = "time"  # cut at the deadline, not slow on its own
            return
        questions = usable_questions(reply)
        if questions is None:
            stats.invalid += 1
            return
        if not questions:
            stats.empty += 1
            return
        kept = [q for q in questions if not copies_provision(q, chunk.embed_text)]
        stats.copied += len(questions) - len(kept)
        if kept:
            found[at] = kept

    async def worker() -> None:
        for at, chunk in queue:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                stats.unasked += 1
                stats.stopped_by = "time"
                continue
            stats.asked += 1
            await ask(at, chunk, remaining)
            progress(GENERATE_STAGE, 1, None)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(concurrency, len(todo)))):
            group.create_task(worker())
    # The local model asked "What is the purpose of the … Act?" of 4 provisions of one Act: as a training query it
    # would pull each of them towards the others.
    written_for: dict[tuple[str, ...], int] = {}
    for questions in found.values():
        for question in questions:
            key = tuple(_TOKENS.findall(question.lower()))
            written_for[key] = written_for.get(key, 0) + 1
    for at in list(found):
        kept = [q for q in found[at] if written_for[tuple(_TOKENS.findall(q.lower()))] == 1]
        stats.shared += len(found[at]) - len(kept)
        if kept:
            found[at] = kept
        else:
            del found[at]
    pairs = [(todo[at], q) for at in sorted(found) for q in found[at]]
    stats.answered, stats.questions = len(found), len(pairs)
    stats.seconds = round(time.perf_counter() - start, 1)
    return pairs, stats


async def generate_pairs(
    settings: Settings, chunks: Sequence[Chunk], limit: int, max_seconds: float, concurrency: int = 3, seed: int = 0,
    progress: Progress = no_progress,
) -> tuple[list[Pair], GenerateStats]:  # fmt: skip
    """Pairs of kind "generated": the settings' model's questions for up to ``limit`` provisions, each with its
    chunk (as embedded) as the positive and a BM25-mined hard negative. No model configured: nothing, and said so."""
    # A server that answers one request at a time (llama.cpp) keeps a call waiting behind the others in flight, so a
    # call's limit is the configured one per call in flight: with 30 s each, 3 at a time to the local model timed out
    # 5 calls of 6 (it answers one provision in ~20 s on 2 busy cores), and a call given up on still holds the server.
    llm_cfg = settings.llm.model_copy(update={"timeout_s": settings.llm.timeout_s * max(1, concurrency)})
    skill = load_skills()["generate_questions"]
    async with httpx.AsyncClient(timeout=httpx.Timeout(llm_cfg.timeout_s, connect=5.0)) as http:
        found, stats = await ask_questions(
            build_llm(llm_cfg, http) if limit > 0 else None, skill, chunks, limit, max_seconds=max_seconds,
            call_timeout_s=llm_cfg.timeout_s, attempts=llm_cfg.call_attempts, concurrency=concurrency, seed=seed,
            progress=progress,
        )  # fmt: skip
    candidates: list[tuple[Chunk, PairKind, str, str]] = [(c, "generated", q, c.embed_text) for c, q in found]
    pairs = await asyncio.to_thread(attach_negatives, chunks, candidates, seed)
    return pairs, stats
