"""`gweta tune --questions`: pairs from questions labelled with their gold provisions, split by question, BM25's
analyzer and field weights chosen on them and carried into every entry point's settings, and bad files refused with a
clear error."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from api.evaluation.core import load_questions, section_unit
from api.settings import Settings
from api.tools.bm25 import BM25_KEY, LEGACY_BM25_KEY
from api.tools.corpus import Corpus
from api.tools.object_store import build_object_store
from api.tools.token_arrays import artifact_chunk_ids
from api.tools.vector_store import MilvusVectorStore
from api.tuning import TuningState, apply_tuning, load_state, save_state
from ingestion.pairs import Pair, labelled_pairs, split_questions
from ingestion.tuning import FIELD_WEIGHTS, fit_bm25

from .conftest import SAMPLE_CORPUS
from .test_bm25 import CHUNKS

QUESTIONS = Path(__file__).parent / "data" / "sample_questions.jsonl"
FISHERIES_ACT = """<!-- id: sample/act/1999/1; jurisdiction: SAMPLE; note: written for a test, not real law -->
# Fisheries Act, 1999

## Part I – Fishing gear
9. Nets
(1) No person shall fish with a net whose mesh is smaller than fifty millimetres.
(2) A fisheries officer may seize any net used in contravention of subsection (1).
"""


async def _chunks(data_dir: Path) -> Corpus:
    settings = Settings(data_dir=data_dir)
    return await Corpus.load(build_object_store(settings.object_store, settings.data_dir))


async def test_each_question_is_paired_with_its_gold_and_a_provision_that_is_not(sample_data_dir: Path) -> None:
    chunks = list((await _chunks(sample_data_dir)).chunks.values())
    questions, _ = load_questions(QUESTIONS)
    pairs = labelled_pairs(chunks, questions)
    units = {c.embed_text: section_unit(c.section_id) for c in chunks}
    gold_of = {q.text: q.gold for q in questions}
    # every gold the corpus holds gives one pair; the Fisheries Act question names an Act the corpus lacks
    assert len(pairs) == sum(len(q.gold) for q in questions) - 1
    assert "What does the Fisheries Act say about nets?" not in {p.query for p in pairs}
    for pair in pairs:
        assert pair.kind == "labelled" and pair.section_id in gold_of[pair.query]
        assert units[pair.positive] == pair.section_id
        assert units[pair.negative] not in gold_of[pair.query]  # not even the question's other gold (sq-15)

    train, held = split_questions(questions)
    assert train and held and len(train) + len(held) == len(questions)
    assert not {q.text for q in train} & {q.text for q in held}
    assert split_questions(list(reversed(questions)))[1] == list(reversed(held))  # by text, not by position


def test_field_weights_are_chosen_by_the_questions_only_when_offered() -> None:
    # The question's words are the Family Act provision's heading, and only once the text of a Labour Act one.
    asked = [Pair("maintenance of children", "", "", "heading", "m#s3", "generated")]
    fixed = fit_bm25(CHUNKS, asked, asked)
    assert (fixed.title_weight, fixed.heading_weight) == (1, 1) and fixed.mrr_tuned == fixed.mrr_default == 0.5
    chosen = fit_bm25(CHUNKS, asked, asked, field_weights=FIELD_WEIGHTS)
    assert chosen.heading_weight == 2 and chosen.mrr_tuned == 1.0
    assert (chosen.settings.title_weight, chosen.settings.heading_weight) == (chosen.title_weight, 2)


def test_the_chosen_analyzer_reaches_the_settings_and_revert_clears_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert (settings.bm25.stem, settings.bm25.bigrams) == (False, False)
    state = TuningState(k1=0.9, b=0.5, stem=True, bigrams=True, title_weight=2, heading_weight=0, dense_weight=0.5,
                        bm25_weight=1.0)  # fmt: skip
    save_state(tmp_path, state)
    tuned = apply_tuning(settings)
    assert (tuned.bm25.k1, tuned.bm25.b, tuned.bm25.stem, tuned.bm25.bigrams) == (0.9, 0.5, True, True)
    assert (tuned.bm25.title_weight, tuned.bm25.heading_weight) == (2, 0)
    assert tuned.retrieval.dense_weight == 0.5
    save_state(tmp_path, TuningState())
    assert apply_tuning(settings) == settings


async def _vectors_and_chunks(data_dir: Path, collection: str) -> tuple[int, list[str]]:
    """How many vectors ``collection`` holds, and the documents the data dir's corpus holds chunks of."""
    corpus = await _chunks(data_dir)
    store = MilvusVectorStore(Settings(data_dir=data_dir).milvus_uri, collection, 384)
    try:
        return await store.count(), sorted({c.doc_key for c in corpus.chunks.values()})
    finally:
        await store.close()


def test_the_command_tunes_on_labelled_questions_and_refuses_bad_files(private_data_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "GWETA_DATA_DIR": str(private_data_dir)}

    def gweta(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "api.cli", "tune", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)

    missing = gweta("--questions", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text('{"id": "x", "question": "deposit?", "gold": [{"law_id": "sample/act/2024/3"}]}\nnot json\n')
    bad = gweta("--questions", str(garbled))
    assert bad.returncode == 1 and "is not a question file with gold provisions" in bad.stderr
    assert "Traceback" not in bad.stderr and load_state(private_data_dir).version == 0  # nothing switched

    artifact = private_data_dir / "objects" / BM25_KEY
    ingested = artifact_chunk_ids(artifact.read_bytes())
    artifact.unlink()  # as ingested before field weights and token arrays: tuning writes them before it switches
    older = private_data_dir / "objects" / LEGACY_BM25_KEY
    older.write_text(json.dumps({"version": 1, "chunk_ids": ingested, "tokens": [["deposit"]] * len(ingested)}))
    done = gweta("--questions", str(QUESTIONS), "--max-minutes", "0.01", "--batch-size", "4", "--force")
    assert done.returncode == 0, done.stderr
    with np.load(artifact) as arrays:
        assert arrays["fields"].shape == (len(ingested), 2) and arrays["fields"].any()
    assert artifact_chunk_ids(artifact.read_bytes()) == ingested and not older.exists()
    assert re.search(r"pairs from the labelled questions: train (\d+), held_out \d+, labelled \1, generated 0\n",
                     done.stdout)  # fmt: skip
    assert "held-out labelled questions, MRR@10: dense (tuned) " in done.stdout
    # 17 questions are too few to train the learned fusion: the report says so and RRF serves
    assert re.search(r"learned fusion \(\d+ training, \d+ held-out questions\): not kept, \d+ training questions \(at "
                     r"least 30", done.stdout)  # fmt: skip
    assert load_state(private_data_dir).fusion_file == ""
    state = load_state(private_data_dir)
    assert state.version == 1 and state.dense_weight in (0.5, 1.0, 2.0)
    tuned = apply_tuning(Settings(data_dir=private_data_dir))
    assert f"stem={state.stem} bigrams={state.bigrams} title x{state.title_weight} " in done.stdout
    assert (tuned.bm25.stem, tuned.bm25.bigrams) == (state.stem, state.bigrams)
    assert (tuned.bm25.title_weight, tuned.bm25.heading_weight) == (state.title_weight, state.heading_weight)

    # `gweta eval retrieval` on the tuned data dir ingests a new Act with the tuned model into the tuned collection
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    (corpus / "fisheries-act.md").write_text(FISHERIES_ACT)
    command = [sys.executable, "-m", "api.cli", "eval", "retrieval", "--corpus", str(corpus), "--questions",
               str(QUESTIONS), "--data-dir", str(private_data_dir)]  # fmt: skip
    evaluated = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert evaluated.returncode == 0, evaluated.stderr
    vectors, documents = asyncio.run(_vectors_and_chunks(private_data_dir, state.collection))
    assert any(d.startswith("sample/act/1999/1") for d in documents)
    assert vectors == len(asyncio.run(_chunks(private_data_dir)).chunks)  # where the tuned retriever searches
