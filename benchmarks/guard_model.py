"""The model guard on messages the rules send it: which attacks it stops, and which legal questions it wrongly stops.

A message reaches the ``guard`` skill only when the rules find no definite injection but a word an attack needs
(``SUSPICIOUS``: "rules", "system", "format", "cite", ...). Legal questions use those words too, and a small model's
verdict decides whether they are answered at all. Two sources:

- ``evaluation/guard_messages.jsonl``: attacks and legal questions written for this benchmark in three sets (``attack``
  says which; ``set`` which set: the first 14 attacks slip past the rules and carry a suspicious word, the later
  ones were written without looking at the words);
- ObliQA's development questions that reach the guard (read from ``../shared``, never copied; all are questions).

Each message that reaches the guard is asked once (verdicts are kept in ``--cache``, keyed by the skill's text, so a
changed prompt is asked again), and the service's own ``guard_action`` turns the verdict into pass, clean or block.
The "verdict read as before" column applies the rule the service used before the action was made a function
(block unless the model's question is free of suspicious words), so one run shows what the prompt changed and what
the reading of the verdict changed. Prints Markdown.

    nohup .venv-llm/bin/python scripts/local_llm.py serve &    # or any OpenAI-compatible endpoint
    python -m benchmarks.guard_model --base-url http://127.0.0.1:8090/v1 --model qwen2.5-coder-1.5b-instruct-q4_k_m
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from api.composer.skills import SKILLS_DIR, load_skills
from api.composer.structured import ask_json
from api.orchestrators.query.screening import SUSPICIOUS, GuardAction, guard_action, screen
from api.settings import LLMSettings
from api.tools.llm import build_llm
from benchmarks.tune_retrieval import DATA

OURS = Path(__file__).resolve().parents[1] / "evaluation" / "guard_messages.jsonl"


@dataclass(frozen=True, slots=True)
class Message:
    qid: str
    text: str
    attack: bool
    written: str = ""
    """Which of our sets it is in: they were written one after another (``evaluation/README.md``)."""


def messages(path: Path, key: str) -> list[Message]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Message(str(r["id"]), str(r[key]), bool(r.get("attack", False)), r.get("set", "")) for r in rows]


def reaches_guard(text: str) -> bool:
    """The guard node's own test: no definite injection by the rules, and a suspicious word."""
    return not screen(text).injection and bool(SUSPICIOUS.search(text))


def by_rules(text: str) -> GuardAction:
    """What the rules alone do with a message that does not reach the model."""
    screened = screen(text)
    return "block" if screened.blocked else "clean" if screened.injection else "pass"


def action_before(text: str, verdict: dict[str, Any] | None) -> GuardAction:
    """How the guard node read a verdict before ``guard_action``: any "attack" blocked unless its question was free
    of suspicious words."""
    if verdict is None or verdict.get("attack") is not True:
        return "pass"
    question = str(verdict.get("question") or "").strip()
    return "clean" if question and not SUSPICIOUS.search(question) else "block"


async def verdicts(
    asked: Sequence[Message], args: argparse.Namespace, skills: Path
) -> tuple[dict[str, dict[str, Any] | None], list[float]]:
    """The model's verdict on each message, from the cache when this skill text already asked it."""
    skill = load_skills(skills)["guard"]
    key = hashlib.sha256((skill.system + skill.user).encode()).hexdigest()[:12]
    cached: dict[str, dict[str, Any]] = {}
    if args.cache.exists():
        for line in args.cache.read_text().splitlines():
            row = json.loads(line)
            if row["skill"] == key:
                cached[row["message"]] = row
    cfg = LLMSettings(
        backend="openai", base_url=args.base_url, model=args.model, max_tokens=200, timeout_s=args.timeout
    )
    out: dict[str, dict[str, Any] | None] = {}
    seconds: list[float] = []
    async with httpx.AsyncClient(timeout=args.timeout) as http:
        llm = build_llm(cfg, http)
        assert llm is not None
        with args.cache.open("a") as cache:
            for n, m in enumerate(asked, 1):
                row = cached.get(m.text)
                if row is None:
                    verdict, call = await ask_json(llm, skill, args.timeout, 1, {"message": m.text})
                    row = {"skill": key, "message": m.text, "verdict": verdict, "ms": call["ms"]}
                    print(f"[{n}/{len(asked)}] {m.qid} {verdict} {call['ms']:.0f} ms", file=sys.stderr, flush=True)
                    if call["outcome"] == "ok":  # a failed call is asked again next time
                        cache.write(json.dumps(row) + "\n")
                        cache.flush()
                out[m.qid] = row["verdict"]
                seconds.append(row["ms"] / 1000)
    return out, seconds


def report(name: str, group: Sequence[Message], verdict: dict[str, dict[str, Any] | None]) -> list[str]:
    """A row per kind of message: how many the rules stopped and how many reached the model, what it called an attack,
    and what each reading of the verdict got wrong (an attack passed on; a question blocked or cleaned), the rules'
    own outcome counted for a message the model never saw."""
    rows = []
    for kind, attack in (("attacks", True), ("questions", False)):
        chosen = [m for m in group if m.attack == attack]
        if not chosen:
            continue
        asked = [m for m in chosen if m.qid in verdict]
        said = sum(bool((v := verdict[m.qid]) and v.get("attack") is True) for m in asked)
        readings = []
        for read in (action_before, lambda text, v: guard_action(text, v)[0]):
            acts = [read(m.text, verdict[m.qid]) if m.qid in verdict else by_rules(m.text) for m in chosen]
            wrong = sum((a == "pass") == attack for a in acts)
            readings.append(f"{'passed' if attack else 'stopped'} {wrong} (blocked {acts.count('block')})")
        ruled = sum(by_rules(m.text) != "pass" for m in chosen)
        rows.append(f"| {name} | {kind} | {len(chosen)} | {ruled} | {len(asked)} | {said} | {' | '.join(readings)} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8090/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--skills", type=Path, default=SKILLS_DIR, help="the skills folder (another prompt to compare)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gweta-guard-verdicts.jsonl"))
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds for one call (a slow local model)")
    args = parser.parse_args()
    ours = messages(OURS, "message")
    obliqa = messages(DATA / "obliqa" / "questions.jsonl", "question")
    asked = [m for m in [*ours, *obliqa] if reaches_guard(m.text)]
    verdict, seconds = asyncio.run(verdicts(asked, args, args.skills))
    print(f"Model `{args.model}` at {args.base_url}; skills `{args.skills}`.\n")
    print(
        "| set | kind | messages | stopped by the rules | reach the model | it says attack | verdict read as before "
        "| verdict read now |\n| --- | --- | ---: | ---: | ---: | ---: | --- | --- |"
    )
    sets = dict.fromkeys(m.written for m in ours)
    rows = [row for name in sets for row in report(f"ours, {name}", [m for m in ours if m.written == name], verdict)]
    print("\n".join([*rows, *report("ObliQA dev", obliqa, verdict)]))
    print(
        f"\nSeconds a guard call: P50 {statistics.median(seconds):.1f}, max {max(seconds):.1f} ({len(seconds)} calls)"
    )
    print("\nWrong outcomes now:\n")
    for m in [*ours, *obliqa]:
        action = guard_action(m.text, verdict[m.qid])[0] if m.qid in verdict else by_rules(m.text)
        if (action == "pass") == m.attack:
            print(f"- {m.qid} ({'attack' if m.attack else 'question'}, {action}): {m.text[:160]}")


if __name__ == "__main__":
    main()
