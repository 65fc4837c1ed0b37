"""Check evaluation/claim_pairs.jsonl against the Zimbabwe legislation corpus.

Every pair must name exactly one section of the corpus by (law_id, section); ids must be unique, and no sentence may
be paired twice with one provision; `kind` must be one of the documented patterns; and `split` must be what the
fixed rule gives (``heldout`` when sha256(law_id) is divisible by 5, so held-out pairs cite Acts no development pair
cites). Prints the counts per split, label and kind.

    python evaluation/verify_claim_pairs.py [--corpus ../shared/data/corpus/zimbabwe_legislation/acts.jsonl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE.parent.parent / "shared" / "data" / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
SUPPORTED_KINDS = {"paraphrase", "applied", "summary"}
UNSUPPORTED_KINDS = {
    "changed_number", "dropped_condition", "permission", "wrong_party", "negation", "off_topic", "supposition",
    "crossed_items",
}  # fmt: skip
FIELDS = {"id", "sentence", "law_id", "section", "supported", "kind", "split"}


def split_of(law_id: str) -> str:
    """The split a pair falls in, fixed by its Act alone (decided before any judge was run on the pairs)."""
    return "heldout" if int(hashlib.sha256(law_id.encode()).hexdigest(), 16) % 5 == 0 else "dev"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--pairs", type=Path, default=HERE / "claim_pairs.jsonl")
    args = parser.parse_args()
    sections: Counter[tuple[str, str]] = Counter()
    with args.corpus.open(encoding="utf-8") as corpus:
        for line in corpus:
            law = json.loads(line)
            sections.update((law["id"], str(s["section"])) for s in law["sections"] if s.get("text", "").strip())
    pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    problems: list[str] = []
    for pair in pairs:
        where = pair.get("id", "?")
        if set(pair) != FIELDS:
            problems.append(f"{where}: fields {sorted(pair)}")
            continue
        if sections[(pair["law_id"], pair["section"])] != 1:
            problems.append(f"{where}: {pair['law_id']} section {pair['section']} names "
                            f"{sections[(pair['law_id'], pair['section'])]} sections")  # fmt: skip
        kinds = SUPPORTED_KINDS if pair["supported"] else UNSUPPORTED_KINDS
        if pair["kind"] not in kinds:
            problems.append(f"{where}: kind {pair['kind']!r} with supported={pair['supported']}")
        if pair["split"] != split_of(pair["law_id"]):
            problems.append(f"{where}: split {pair['split']!r}, the rule gives {split_of(pair['law_id'])!r}")
    # One sentence may be cited to two provisions (the one that states it, and one that does not), never twice to one.
    for name, key in (("id", lambda p: p["id"]), ("pair", lambda p: (p["sentence"], p["law_id"], p["section"]))):
        repeated = [v for v, n in Counter(key(p) for p in pairs).items() if n > 1]
        if repeated:
            problems.append(f"repeated {name}: {repeated}")
    for split in ("dev", "heldout"):
        part = [p for p in pairs if p["split"] == split]
        acts = {p["law_id"] for p in part}
        print(f"{split}: {len(part)} pairs over {len(acts)} Acts, {sum(p['supported'] for p in part)} supported")
        print("  " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(p["kind"] for p in part).items())))
    print(f"all: {len(pairs)} pairs over {len({p['law_id'] for p in pairs})} Acts")
    for problem in problems:
        print("PROBLEM", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
