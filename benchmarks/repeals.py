"""Which laws of a corpus another law of the same corpus repeals: how often answers could quote repealed law.

Reads the shared Zimbabwe legislation (one JSON record per Act, its sections and its chapter number) and finds every
sentence of a section that says a named Act "is repealed" / "are repealed" / "is hereby repealed", then matches
the Acts it names to the corpus's own Acts by chapter number ("[Chapter 5:11]") or by title. The corpus carries no
repeal status of its own, so each match is a law the service answers from as if it were in force.

    .venv/bin/python benchmarks/repeals.py --out benchmarks/results/repeals.md

Nothing here changes the service; it measures the size of a problem for a later change.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path
from typing import Any

from report import SHARED, publish

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
# One sentence that repeals: "The Marriage Act [Chapter 5:11] is repealed.", "... and the X Act are hereby repealed."
_REPEALS = re.compile(r"\b(?:is|are)\s+(?:hereby\s+)?repealed\b", re.I)
_SENTENCE = re.compile(r"(?<=[.;])\s+(?=\(?[A-Z0-9])")
_CHAPTER = re.compile(r"\[Chapter\s*(\d+:\d+)\]")
_PART = re.compile(r"\b(?:sections?|subsections?|paragraphs?|schedules?|parts?|definitions?|amended|inserting)\b", re.I)
_NAMED_ACT = re.compile(r"((?:[A-Z][\w'’()-]*\s+)+?(?:and\s+)?(?:[A-Z][\w'’()-]*\s+)*Act)\b")


def sections(act: dict[str, Any]) -> list[dict[str, Any]]:
    raw = act.get("sections") or []
    return raw if isinstance(raw, list) else ast.literal_eval(raw)


def normal_title(title: str) -> str:
    return " ".join(re.sub(r"[^a-z ]", " ", title.lower().replace("the ", " ")).split())


def find_repeals(acts: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """(repealed act id, how it was matched, repealing act id, its section, the sentence) for every match."""
    by_chapter: dict[str, list[str]] = {}
    by_title: dict[str, list[str]] = {}
    for act in acts:
        chapter = (act.get("chapter") or "").replace("Chapter", "").strip()
        if chapter:
            by_chapter.setdefault(chapter, []).append(act["id"])
        by_title.setdefault(normal_title(act["title"]), []).append(act["id"])
    found = []
    for act in acts:
        for section in sections(act):
            for sentence in _SENTENCE.split(section.get("text", "")):
                if not (verb := _REPEALS.search(sentence)):
                    continue
                # The Acts named before the verb with nothing between that makes a part of one the subject
                # ("section 5 of the X Act is repealed" repeals a section, not the Act).
                subject = sentence[: verb.start()]
                subject = subject[max((m.end() for m in _PART.finditer(subject)), default=0) :]
                named = {(target, "chapter") for c in _CHAPTER.findall(subject) for target in by_chapter.get(c, [])}
                for name in _NAMED_ACT.findall(_CHAPTER.sub(" ", subject)):
                    for part in re.split(r"\s+and\s+", name):
                        named |= {(target, "title") for target in by_title.get(normal_title(part), [])}
                for target, how in sorted(named):
                    if target != act["id"]:
                        found.append((target, how, act["id"], section.get("ref", ""), " ".join(sentence.split())))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acts", type=Path, default=ACTS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    acts = [json.loads(line) for line in args.acts.read_text().splitlines() if line.strip()]
    titles = {a["id"]: a["title"] for a in acts}
    found = find_repeals(acts)
    repealed: dict[str, list[tuple[str, str, str, str]]] = {}
    for target, how, source, ref, sentence in found:
        repealed.setdefault(target, []).append((how, source, ref, sentence))
    lines = [
        "# Laws the corpus itself repeals",
        "",
        f"- corpus: {args.acts} ({len(acts)} laws); command: `python benchmarks/repeals.py`",
        f"- laws named as repealed by another law of the corpus: {len(repealed)}",
        "",
        "| repealed law | matched by | repealed by | sentence |",
        "| --- | --- | --- | --- |",
    ]
    for target in sorted(repealed):
        how, source, ref, sentence = sorted(repealed[target])[0]
        hows = ", ".join(sorted({h for h, *_ in repealed[target]}))
        quoted = sentence[:160].replace("|", "/") + ("…" if len(sentence) > 160 else "")
        lines.append(f"| {titles[target]} ({target}) | {hows} | {titles[source]} ({source} {ref}) | {quoted} |")
    publish(lines, args.out)


if __name__ == "__main__":
    main()
