"""A cross-encoder reranker trained here, on CPU, from labelled questions: two-fold cross-validation over ObliQA's
development questions (the folds of ``benchmarks/tune_labelled.py``), then the fold-one reranker on the Zimbabwe sample.

Candidates per question are the fused ranking (RRF k 60, dense weight 1, the packaged MiniLM with BM25 stemmed and
paired, 30 chunks a side). The cross-encoder starts from the packaged MiniLM's transformer with a fresh one-logit head
and learns, from one fold's questions, to put each gold passage above that question's best-ranked wrong candidates
(a softmax over one positive and ``--negatives`` negatives). It then reranks the other fold's top ``--k`` candidates,
alone and interpolated with the fused ranking (weighted RRF of the two ranks; the weight is chosen on fold 1 and
reported on fold 2 too). A passage is scored by its first chunk's ``embed_text``, as the service would score it.
Each fold's model is saved as a folder ``FlagReranker`` loads (``api/tools/reranker.py``), and checked once that way.

Embeddings, models and scores are kept under ``--work`` and reused when there, so a rerun only redoes what is missing.
Prints Markdown; progress goes to stderr.

    python -m benchmarks.tune_reranker --k 20 --negatives 3 --max-length 128 --learning-rate 2e-4 \\
        --head-learning-rate 1e-3 --max-minutes 9 --work /tmp/rr
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from api.evaluation.core import Question, load_questions, unit_of
from api.schemas.documents import Chunk
from api.tools.embeddings import load_sentence_transformer
from benchmarks.tune_labelled import log, rankings
from benchmarks.tune_retrieval import DATA, load, print_scores, score
from ingestion.pairs import split_questions

FUSED = "fused: dense x1.0 + bm25 stem+bigrams"
LEXICAL = "bm25 stem+bigrams"
RRF_K = 60
WEIGHTS = (0.5, 1.0, 2.0, 4.0)  # cross-encoder rank's weight against the fused rank's 1
Group = tuple[str, str, list[str]]  # question, gold passage text, wrong candidates' texts


@dataclass(slots=True)
class FitStats:
    questions: int
    groups: int
    pairs: int  # (question, passage) pairs seen in training, repeats across epochs counted
    steps: int
    seconds: float
    stopped_by: str
    first_loss: float
    last_loss: float


def cached_rankings(path: Path, chunks: Sequence[Chunk], texts: Sequence[str], by_source: bool) -> dict[str, Any]:
    """``tune_labelled.rankings`` with the packaged model, read from ``path`` when an earlier run wrote it."""
    if path.exists():
        return dict(json.loads(path.read_text()))
    ranked = rankings(chunks, texts, by_source, load_sentence_transformer())
    path.write_text(json.dumps(ranked))
    return ranked


def first_chunks(chunks: Sequence[Chunk], by_source: bool) -> dict[str, str]:
    """Each unit's text as scored: its first chunk's ``embed_text``."""
    text: dict[str, str] = {}
    for chunk in chunks:
        text.setdefault(unit_of(chunk, by_source), chunk.embed_text)
    return text


def training_groups(
    questions: Sequence[Question], candidates: dict[str, list[str]], text: dict[str, str], negatives: int
) -> list[Group]:
    """One group per (question, gold passage): the passage and the question's best-ranked candidates that are none of
    its gold passages."""
    groups = []
    for q in questions:
        wrong = [text[u] for u in candidates[q.qid] if u not in q.gold][:negatives]
        if len(wrong) < negatives:
            continue
        groups += [(q.text, text[unit], wrong) for unit in sorted(q.gold) if unit in text]
    return groups


def base_model(work: Path) -> Path:
    """The packaged MiniLM's transformer and tokenizer as a plain Hugging Face folder."""
    folder = work / "base"
    if not (folder / "config.json").exists():
        st = load_sentence_transformer()
        st[0].auto_model.save_pretrained(folder)  # type: ignore[union-attr,operator]
        st.tokenizer.save_pretrained(folder)
    return folder


def fit(groups: Sequence[Group], base: Path, out: Path, args: argparse.Namespace, questions: int) -> FitStats:
    """Train a one-logit cross-encoder with a softmax over each group (the gold passage first), within
    ``--max-minutes`` (stopping after the step that crosses it), and save it where ``FlagReranker`` can load it."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.manual_seed(0)
    rng = random.Random(0)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1)
    # The one-logit head starts at random (std 0.02): at the body's rate it barely moves in a few dozen steps, and the
    # softmax loss stayed at ln(1 + negatives) (every candidate tied), so the head and pooler learn faster.
    head = [p for name, p in model.named_parameters() if name.startswith(("classifier.", "bert.pooler."))]
    body = [p for name, p in model.named_parameters() if not name.startswith(("classifier.", "bert.pooler."))]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": args.learning_rate}, {"params": head, "lr": args.head_learning_rate}], weight_decay=0.01
    )
    per_epoch = -(-len(groups) // args.group_batch)
    total = per_epoch * args.epochs
    schedule = get_linear_schedule_with_warmup(optimizer, max(1, total // 10), total)  # type: ignore[no-untyped-call]
    start = last_note = time.perf_counter()
    steps = pairs = 0
    losses: list[float] = []
    stopped_by = "epochs"
    model.train()
    for epoch in range(args.epochs):
        order = list(groups)
        rng.shuffle(order)
        for at in range(0, len(order), args.group_batch):
            batch = order[at : at + args.group_batch]
            queries = [q for q, _, wrong in batch for _ in range(1 + len(wrong))]
            passages = [p for _, gold, wrong in batch for p in (gold, *wrong)]
            features = tokenizer(queries, passages, truncation="only_second", max_length=args.max_length,
                                 padding=True, return_tensors="pt")  # fmt: skip
            logits = model(**features).logits.view(len(batch), -1)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            steps, pairs = steps + 1, pairs + len(passages)
            losses.append(float(loss.item()))
            now = time.perf_counter()
            if now - last_note >= 30:
                recent = losses[-10:]
                log(f"  epoch {epoch + 1}, step {steps}/{total}, loss {sum(recent) / len(recent):.3f}, "
                    f"{now - start:.0f}s")  # fmt: skip
                last_note = now
            if now - start >= args.max_minutes * 60:
                stopped_by = "time"
                break
        if stopped_by == "time":
            break
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    head, tail = losses[:10], losses[-10:]
    stats = FitStats(questions, len(groups), pairs, steps, round(time.perf_counter() - start, 1), stopped_by,
                     round(sum(head) / len(head), 3), round(sum(tail) / len(tail), 3))  # fmt: skip
    (out / "train_stats.json").write_text(json.dumps(asdict(stats)))
    return stats


def cross_scores(folder: Path, pairs: Sequence[tuple[str, str]], max_length: int, batch_size: int = 64) -> list[float]:
    """The cross-encoder's logit for each (question, passage), batched by length so little is padding."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out = [0.0] * len(pairs)
    start = last_note = time.perf_counter()
    with torch.inference_mode():
        for at in range(0, len(order), batch_size):
            picked = order[at : at + batch_size]
            asked, passages = [pairs[i][0] for i in picked], [pairs[i][1] for i in picked]
            features = tokenizer(
                asked, passages, truncation="only_second", max_length=max_length, padding=True, return_tensors="pt"
            )
            for i, value in zip(picked, model(**features).logits.view(-1).tolist(), strict=True):
                out[i] = float(value)
            if time.perf_counter() - last_note >= 30:
                log(f"  scored {at + len(picked)}/{len(pairs)} pairs, {time.perf_counter() - start:.0f}s")
                last_note = time.perf_counter()
    return out


def rerank_scores(
    path: Path, folder: Path, asked: Sequence[tuple[str, str]], candidates: dict[str, list[str]],
    text: dict[str, str], k: int, max_length: int,
) -> tuple[dict[str, list[float]], float]:  # fmt: skip
    """Scores of each (key, question)'s top ``k`` candidates, and the seconds they took (read back when cached)."""
    if path.exists():
        cached = json.loads(path.read_text())
        return cached["scores"], float(cached["seconds"])
    pairs = [(q, text[u]) for key, q in asked for u in candidates[key][:k]]
    start = time.perf_counter()
    flat = cross_scores(folder, pairs, max_length)
    seconds = time.perf_counter() - start
    scores: dict[str, list[float]] = {}
    at = 0
    for key, _ in asked:
        n = len(candidates[key][:k])
        scores[key], at = flat[at : at + n], at + n
    path.write_text(json.dumps({"scores": scores, "seconds": seconds}))
    return scores, seconds


def reranked(fused: Sequence[str], scores: Sequence[float], weight: float | None) -> list[str]:
    """The top ``len(scores)`` of ``fused`` reordered by the cross-encoder (``weight`` None) or by weighted RRF of
    its rank and the fused rank (the fused rank's weight 1); the rest stays in fused order."""
    top = list(fused[: len(scores)])
    by_score = sorted(range(len(top)), key=lambda i: -scores[i])
    if weight is None:
        return [top[i] for i in by_score] + list(fused[len(top) :])
    ce_rank = {i: r for r, i in enumerate(by_score, 1)}
    value = {i: weight / (RRF_K + ce_rank[i]) + 1 / (RRF_K + i + 1) for i in range(len(top))}
    return [top[i] for i in sorted(value, key=lambda i: -value[i])] + list(fused[len(top) :])


def recall_at(ranked: Sequence[Sequence[str]], gold: Sequence[frozenset[str]], k: int) -> float:
    return sum(len(g & set(r[:k])) / len(g) for r, g in zip(ranked, gold, strict=True)) / len(gold)


def check_flag_reranker(
    folder: Path, asked: Sequence[tuple[str, str]], candidates: dict[str, list[str]], text: dict[str, str],
    scores: dict[str, list[float]], args: argparse.Namespace,
) -> str:  # fmt: skip
    """Load ``folder`` as the service would (FlagReranker, CPU, offline) and score a few questions' top ``k`` one
    question at a time: the same ordering as ours, and how long one question takes."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from FlagEmbedding import FlagReranker

    reranker = FlagReranker(str(folder), use_fp16=False, devices=["cpu"], batch_size=16, max_length=args.max_length)
    same, diff, seconds = 0, 0.0, []
    for key, q in asked:
        passages = [text[u] for u in candidates[key][: args.k]]
        start = time.perf_counter()
        flag = reranker.compute_score([[q, p] for p in passages], batch_size=16, max_length=args.max_length)
        seconds.append(time.perf_counter() - start)
        flag = flag if isinstance(flag, list) else [flag]
        ours = scores[key]
        same += list(np.argsort(-np.array(flag), kind="stable")) == list(np.argsort(-np.array(ours), kind="stable"))
        diff = max(diff, float(np.max(np.abs(np.array(flag) - np.array(ours)))))
    return (
        f"- FlagReranker (`use_fp16=False, devices=['cpu'], batch_size=16, max_length={args.max_length}`, "
        f"HF_HUB_OFFLINE=1) loads the fold-1 folder; on {len(asked)} fold-1 questions its order of the top "
        f"{args.k} equals ours for {same}, largest score difference {diff:.2e}; one question's {args.k} pairs take "
        f"{np.median(seconds):.2f} s median ({min(seconds):.2f}-{max(seconds):.2f} s) on 2 cores"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=30, help="fused candidates reranked per question")
    parser.add_argument("--negatives", type=int, default=3, help="wrong candidates per gold passage in training")
    parser.add_argument("--group-batch", type=int, default=6, help="(question, gold) groups per step")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--head-learning-rate", type=float, default=2e-3, help="the new head's (and pooler's)")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--max-minutes", type=float, default=11.0, help="training time limit per fold")
    parser.add_argument("--work", type=Path, default=Path("/tmp/rr"), help="models, embeddings and scores (reused)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    chunks, _, _ = load("obliqa", {str(i) for i in range(1, 41)})
    questions, _ = load_questions(DATA / "obliqa" / "questions.jsonl")
    one, two = split_questions(questions, share=0.5)
    log(f"obliqa: {len(chunks)} chunks, {len(questions)} questions, folds of {len(one)} and {len(two)}")
    ranked = cached_rankings(args.work / "obliqa_rankings.json", chunks, [q.text for q in questions], True)
    at = {q.qid: i for i, q in enumerate(questions)}
    candidates = {q.qid: ranked[FUSED][at[q.qid]] for q in questions}
    text = first_chunks(chunks, True)
    base = base_model(args.work)

    scores: dict[str, list[float]] = {}
    notes, fold_rows = [], []
    folders = []
    for fold, (fit_on, score_on) in enumerate(((two, one), (one, two)), 1):
        folder = args.work / f"fold{fold}"
        folders.append(folder)
        if (folder / "train_stats.json").exists():
            stats = FitStats(**json.loads((folder / "train_stats.json").read_text()))
            log(f"fold {fold}: reusing {folder}")
        else:
            groups = training_groups(fit_on, candidates, text, args.negatives)
            log(f"fold {fold}: training on {len(groups)} groups of 1 + {args.negatives} from {len(fit_on)} questions")
            stats = fit(groups, base, folder, args, len(fit_on))
        log(f"fold {fold}: {stats}")
        asked = [(q.qid, q.text) for q in score_on]
        fold_scores, seconds = rerank_scores(args.work / f"scores_fold{fold}_k{args.k}.json", folder, asked,
                                             candidates, text, args.k, args.max_length)  # fmt: skip
        scores |= fold_scores
        log(f"fold {fold}: reranked {len(asked)} questions' top {args.k} in {seconds:.0f}s")
        fold_rows.append(
            f"| {fold} | {stats.questions} | {stats.groups} | {stats.pairs} | {stats.steps} | {stats.seconds:.0f} "
            f"({stats.stopped_by}) | {stats.first_loss} → {stats.last_loss} | {len(asked)} | "
            f"{len(asked) * args.k} | {seconds:.0f} | {1000 * seconds / len(asked):.0f} |"
        )
    size = sum(f.stat().st_size for f in folders[0].iterdir()) / 2**20
    notes.append(check_flag_reranker(folders[0], [(q.qid, q.text) for q in one[:20]], candidates, text, scores, args))

    fused = [candidates[q.qid] for q in questions]
    gold = [q.gold for q in questions]
    fold_of = {q.qid: 1 for q in one} | {q.qid: 2 for q in two}
    picked = [i for i, q in enumerate(questions) if fold_of[q.qid] == 1]
    per_weight = {
        weight: score([reranked(fused[i], scores[questions[i].qid], weight) for i in picked], [gold[i] for i in picked])
        for weight in WEIGHTS
    }
    chosen = max(WEIGHTS, key=lambda w: per_weight[w])
    rows: dict[str, list[list[str]]] = {
        "bm25 stem+bigrams": ranked[LEXICAL],
        "dense (packaged model)": ranked["dense"],
        "fused (the candidates)": fused,
        f"cross-encoder alone on the top {args.k}": [
            reranked(f, scores[q.qid], None) for f, q in zip(fused, questions, strict=True)
        ],
    }
    for weight in WEIGHTS:
        mark = " ← chosen on fold 1" if weight == chosen else ""
        rows[f"RRF: cross-encoder x{weight} + fused x1 (top {args.k}){mark}"] = [
            reranked(f, scores[q.qid], weight) for f, q in zip(fused, questions, strict=True)
        ]

    def kinds(q: Question) -> tuple[str, str, str]:
        return "all", f"fold {fold_of[q.qid]}", "1 gold" if len(q.gold) == 1 else "2+ gold"

    scored = [(q.text, q.gold, kind) for q in questions for kind in kinds(q)]
    table = {name: [r[at[q.qid]] for q in questions for _ in kinds(q)] for name, r in rows.items()}
    print("## obliqa: candidates from the packaged model, reranked by the cross-encoder that did not see them\n")
    print_scores("obliqa (each question reranked by the fold model that did not train on it)", len(chunks), scored,
                 table, len(questions))  # fmt: skip
    print("\n### The candidate list's ceiling (fused, RRF k 60 over 30 chunks a side)\n")
    print("| questions | n | R@10 | R@30 | R@50 | R@all (≤60) |\n| --- | --- | --- | --- | --- | --- |")
    for kind in ("all", "fold 1", "fold 2", "1 gold", "2+ gold"):
        pick = [i for i, q in enumerate(questions) if kind in kinds(q)]
        cells = " | ".join(f"{recall_at([fused[i] for i in pick], [gold[i] for i in pick], k):.3f}"
                           for k in (10, 30, 50, 100))  # fmt: skip
        print(f"| {kind} | {len(pick)} | {cells} |")
    print("\n### Training and reranking, per fold\n")
    print("| fold | train questions | groups | pairs seen | steps | train s | loss first 10 → last 10 steps | "
          "scored questions | pairs scored | rerank s | ms per question |")  # fmt: skip
    print("|" + " --- |" * 11)
    print("\n".join(fold_rows))
    print()
    print(f"- interpolation weight chosen on fold 1 (R@10, then MRR@10): x{chosen}; fold 1 "
          + ", ".join(f"x{w} {r:.3f}/{m:.3f}" for w, (r, m) in per_weight.items()))  # fmt: skip
    print(f"- model folder {size:.0f} MiB; negatives {args.negatives}, groups per step {args.group_batch}, epochs "
          f"{args.epochs}, learning rate {args.learning_rate} (head and pooler {args.head_learning_rate}), "
          f"max length {args.max_length}")  # fmt: skip
    print("\n".join(notes))

    zim_chunks, zim_questions, _ = load("zim_qa", set())
    log(f"zim_qa sample: {len(zim_chunks)} chunks, {len(zim_questions)} questions with gold")
    zim = cached_rankings(args.work / "zim_rankings.json", zim_chunks, [q for q, _, _ in zim_questions], False)
    zim_candidates = {str(i): r for i, r in enumerate(zim[FUSED])}
    zim_text = first_chunks(zim_chunks, False)
    zim_asked = [(str(i), q) for i, (q, _, _) in enumerate(zim_questions)]
    zim_scores, seconds = rerank_scores(args.work / f"scores_zim_k{args.k}.json", folders[0], zim_asked,
                                        zim_candidates, zim_text, args.k, args.max_length)  # fmt: skip
    log(f"zim: reranked in {seconds:.0f}s")
    zim_fused = [zim_candidates[key] for key, _ in zim_asked]
    zim_rows = {
        "bm25 stem+bigrams": zim[LEXICAL],
        "dense (packaged model)": zim["dense"],
        "fused (the candidates)": zim_fused,
        f"cross-encoder alone on the top {args.k}": [reranked(f, zim_scores[k], None)
                                                     for f, (k, _) in zip(zim_fused, zim_asked, strict=True)],
        f"RRF: cross-encoder x{chosen} + fused x1 (top {args.k})": [
            reranked(f, zim_scores[k], chosen) for f, (k, _) in zip(zim_fused, zim_asked, strict=True)
        ],
    }  # fmt: skip
    print()
    print_scores("zimbabwe sample: the fold-1 cross-encoder (trained on ObliQA fold 2) on the other corpus",
                 len(zim_chunks), zim_questions, zim_rows)  # fmt: skip
    print(f"\n- reranked {len(zim_asked)} questions' top {args.k} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
