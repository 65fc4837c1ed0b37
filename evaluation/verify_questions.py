"""Check evaluation/dev_questions.jsonl against the Zimbabwe legislation corpus.

Every gold (law_id, section) must name exactly one section; every quote (8-30 words) must occur verbatim in a gold
section after whitespace is collapsed; every unanswerable question's ``absence_check`` pattern must match no section
of the corpus. Also prints, per kind, the share of a question's content words that occur in its gold section.

    python evaluation/verify_questions.py [--corpus ../shared/data/corpus/zimbabwe_legislation/acts.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parent.parent / "shared" / "data" / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
STOP = set(
    "a an the of to in on for and or is are am be can do does did my me i we our you your he she his her it its they"
    " them their what which who whom how when where why if at as by with from that this there any under must may"
    " still not no have has had will would should could than so get got just up out about after before into"
    " s such".split()
)


def collapse(text: str) -> str:
    return " ".join(text.split())


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP and len(w) > 2}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--questions", type=Path, default=HERE / "dev_questions.jsonl")
    args = parser.parse_args()
    acts = {a["id"]: a for a in map(json.loads, args.corpus.read_text().splitlines())}
    every_section = [s["text"] for a in acts.values() for s in a["sections"]]
    problems: list[str] = []
    overlap: dict[str, list[float]] = defaultdict(list)
    records = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    ids = [r["id"] for r in records]
    if len(ids) != len(set(ids)):
        problems.append("duplicate ids")
    for r in records:
        qid, kind = r["id"], r["kind"]
        texts = []
        for g in r["gold"]:
            act = acts.get(g["law_id"])
            matches = [s for s in act["sections"] if s["ref"] == g["section"]] if act else []
            if len(matches) != 1:
                problems.append(f"{qid}: {g} names {len(matches)} sections")
            texts += [m["text"] for m in matches]
        if kind == "unanswerable":
            if r["gold"] or r["quote"]:
                problems.append(f"{qid}: unanswerable with gold or quote")
            pattern = re.compile(r["absence_check"], re.I)
            found = sum(bool(pattern.search(t)) for t in every_section)
            if found:
                problems.append(f"{qid}: absence_check {r['absence_check']!r} matches {found} sections")
            continue
        words = len(r["quote"].split())
        if not 8 <= words <= 30:
            problems.append(f"{qid}: quote has {words} words")
        if not any(collapse(r["quote"]) in collapse(t) for t in texts):
            problems.append(f"{qid}: quote not verbatim in a gold section")
        wanted = content_words(r["question"])
        have = content_words(" ".join(texts))
        overlap[kind].append(len(wanted & have) / max(1, len(wanted)))
    counts = defaultdict(int)
    for r in records:
        counts[r["kind"]] += 1
    sys.stdout.write(f"{len(records)} questions: {dict(counts)}\n")
    for kind, shares in sorted(overlap.items()):
        sys.stdout.write(
            f"{kind}: mean share of question content words found in the gold section {sum(shares) / len(shares):.2f}\n"
        )
    for p in problems:
        sys.stdout.write(f"PROBLEM {p}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
