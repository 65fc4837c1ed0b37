"""Questions that each reach a different provision: "What does the <Act> say about <its section's heading>?", one per
section of an ingested data dir, in a seeded random order, as JSONL for ``benchmarks/load.py --questions``.

The development questions repeat in turn under load, so after the first round every provision they reach is one a
process has answered from before; these stand for a crowd asking about many things (the long tail of a corpus). Only
the corpus is read; nothing is written to the data dir.

    .venv/bin/python benchmarks/heading_questions.py --data-dir .bench-data --count 4000 --out /tmp/headings.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from api.settings import Settings  # noqa: E402
from api.tools.corpus import Corpus  # noqa: E402
from api.tools.object_store import build_object_store  # noqa: E402

# Headings that nearly every Act has say nothing about what the Act is for.
GENERIC = frozenset({"interpretation", "short title", "short title and commencement", "commencement", "repeal"})


async def main_async(args: argparse.Namespace) -> int:
    settings = Settings(data_dir=args.data_dir)
    corpus = await Corpus.load(build_object_store(settings.object_store, settings.data_dir))
    sections = {c.section_id: c for c in sorted(corpus.chunks.values(), key=lambda c: c.chunk_id)}
    chosen = [c for c in sections.values() if len(c.section_heading) > 8 and c.section_heading.lower() not in GENERIC]
    random.Random(args.seed).shuffle(chosen)
    asked = [(f"What does the {c.title} say about {c.section_heading.lower()}?", c.section_id) for c in chosen]
    lines = [json.dumps({"question": question, "gold": gold}) for question, gold in asked[: args.count]]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} questions from {len(sections)} sections of {len(corpus.manifest.documents)} documents")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--count", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, required=True)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
