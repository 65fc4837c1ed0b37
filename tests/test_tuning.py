"""`gweta tune`: pairs mined from the corpus, BM25 and fusion fit on them, a tuned model saved and loaded offline,
its collection switched to, the corpus version changed, and `gweta tune --revert` back to the packaged model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from api.schemas.documents import Chunk
from api.services import open_services
from api.settings import Settings
from api.tools.corpus import Corpus
from api.tools.embeddings import load_sentence_transformer
from api.tools.object_store import build_object_store
from api.tools.onnx_embedder import export_folder
from api.tools.sentence_vectors import StoredSentences
from api.tools.vector_store import MilvusVectorStore
from api.tuning import apply_tuning, load_state
from ingestion.pairs import mine_pairs, split_pairs
from ingestion.tuning import TuneOptions, choose_fusion, fuse, revert, tune

from .conftest import SAMPLE_CORPUS, ingest_into
from .test_tuning_labelled import FISHERIES_ACT


async def _chunks(data_dir: Path) -> Corpus:
    settings = Settings(data_dir=data_dir)
    return await Corpus.load(build_object_store(settings.object_store, settings.data_dir))


async def _dense_search(settings: Settings, question: str) -> tuple[str, list[str]]:
    """The served embedder's name and the documents of its dense hits for ``question``, as the service opens."""
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        result = await retriever.retrieve(question, mode="dense", rerank=False)
        return retriever.embedder.name, [hit.chunk.doc_key for hit in result.hits]


async def test_pairs_come_from_the_corpus_with_negatives_from_other_provisions(sample_data_dir: Path) -> None:
    corpus = await _chunks(sample_data_dir)
    chunks = list(corpus.chunks.values())
    pairs = mine_pairs(chunks, 40)
    assert len(pairs) >= 10
    assert {p.kind for p in pairs} >= {"heading", "sentence"}
    by_section: dict[str, str] = {}
    for c in chunks:
        by_section[c.section_id] = by_section.get(c.section_id, "") + c.text
    for p in pairs:
        assert p.negative and p.negative not in by_section[p.section_id]
        if p.kind == "sentence":  # inverse cloze: the query is a sentence of the provision, removed from the positive
            assert p.query in by_section[p.section_id] and p.query not in p.positive
    train, held = split_pairs(pairs)
    assert train and held and not {p.section_id for p in train} & {p.section_id for p in held}
    assert mine_pairs(chunks, 40) == pairs  # seeded: the same corpus gives the same pairs


def test_a_heading_becomes_a_query_only_when_it_names_one_provision() -> None:
    def chunk(n: int, title: str, heading: str) -> Chunk:
        text = f"Paragraph {n} sets a rule about licence fees number {n} and their payment by the licence holder."
        return Chunk(chunk_id=f"c{n}", doc_key=title, section_id=f"{title}#{n}", section_number=str(n),
                     section_heading=heading, title=title, text=text, ordinal=0)  # fmt: skip

    # One guidance document heading every paragraph with its own name and a number (as ObliQA's do): each query
    # would point to all of them, so none is asked; headings that differ are asked, numbers and case aside.
    shared = [chunk(n, "Guidance on Fees", f"Guidance – Fees {n})") for n in range(1, 6)]
    distinct = [chunk(n, "Licensing Act", h) for n, h in ((6, "Annual licence fees"), (7, "Refund of fees"))]
    mixed = [chunk(8, "Licensing Act", "Refund of fees 2"), *distinct]  # "Refund of fees" twice over: neither named
    headings = lambda chunks: {p.query for p in mine_pairs(chunks, 100) if p.kind == "heading"}  # noqa: E731
    assert headings(shared) == set()
    assert headings(shared + distinct) == {"Licensing Act: Annual licence fees", "Licensing Act: Refund of fees"}
    assert headings(shared + mixed) == {"Licensing Act: Annual licence fees"}
    assert {p.kind for p in mine_pairs(shared, 100)} == {"sentence"}  # the paragraphs still give their sentences


def test_fusion_weight_follows_the_better_ranking() -> None:
    gold = ["a", "b", "c"]
    good = [["q", "a"], ["q", "b"], ["q", "c"]]  # gold second
    bad = [["x"], ["x"], ["x"]]  # gold absent
    assert choose_fusion(good, bad, gold) == 2.0  # dense right, BM25 wrong: dense weighs most
    assert choose_fusion(bad, good, gold) == 1.0  # the other way: mined pairs favour BM25 anyway, so never below equal
    assert fuse(["a", "b"], ["b", "c"], 1.0)[0] == "b"  # found by both beats found by one


async def test_tune_switches_to_a_tuned_model_and_revert_restores_the_packaged_one(
    private_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The data dir's own folder for exported graphs, not the suite's shared one: other tests' tuned models export
    # theirs too (the sentence vectors are embedded by the query path's runtime), and this test counts its own.
    monkeypatch.delenv("GWETA_EMBEDDINGS__ONNX_DIR")
    settings = Settings(data_dir=private_data_dir)
    before = (await _chunks(private_data_dir)).version
    # force: one step on 12 pairs moves the model too little to be sure it ranks better; the switch is what is tested
    report = await tune(settings, TuneOptions(max_pairs=12, max_minutes=0.01, batch_size=4, force=True))

    state = load_state(private_data_dir)
    assert state.version == report.version == 1 and report.train is not None and report.train.steps >= 1
    model_dir = private_data_dir / state.model_dir
    assert (model_dir / "config.json").is_file() and (model_dir / "model.safetensors").is_file()
    tuned_vector = load_sentence_transformer(str(model_dir)).encode(["deposit"])[0]  # offline, from the data dir
    packaged_vector = load_sentence_transformer().encode(["deposit"])[0]
    assert abs(tuned_vector - packaged_vector).max() > 1e-5  # the weights did change
    assert report.corpus_version_before == before != report.corpus_version_after
    tuned_collection = state.collection
    assert tuned_collection == "gweta_chunks__minilm_tuned_v1_384" and state.base_collection == "gweta_chunks"
    assert state.k1 is not None and state.dense_weight is not None

    tuned = apply_tuning(settings)
    assert tuned.embeddings.model == str(model_dir) and tuned.embeddings.name == "minilm-tuned-v1"
    assert (tuned.bm25.k1, tuned.retrieval.dense_weight) == (state.k1, state.dense_weight)
    async with open_services(settings) as services:
        assert services.corpus.version == report.corpus_version_after  # caches keyed on it drop
        retriever = services.orchestrator.deps.retriever
        assert retriever.embedder.name == "minilm-tuned-v1"
        assert isinstance(retriever.embedder, StoredSentences)  # answers read the tuned model's sentence vectors
        assert retriever.embedder.stored is not None and retriever.embedder.stored.label == "minilm-tuned-v1:384"
        assert getattr(retriever.vectors, "collection", "") == state.collection
        assert await retriever.vectors.count() == len(services.corpus)
        result = await retriever.retrieve("How much deposit can a landlord ask for?", mode="dense", rerank=False)
        assert result.hits and result.hits[0].chunk.doc_key.startswith("sample/")

    exported = list(export_folder(settings.embeddings, private_data_dir).glob("minilm-tuned-v1-*.onnx"))
    assert len(exported) == 1  # the query path's graph of the tuned weights

    again = await tune(settings, TuneOptions(max_pairs=12, max_minutes=0.01, batch_size=4, force=True))
    assert again.version == 2 and (private_data_dir / again.model_dir / "config.json").is_file()
    assert not model_dir.exists()  # the weights no longer served are dropped with their collection
    assert not exported[0].exists()  # and so is the graph exported from them
    indexes = private_data_dir / "objects" / "indexes"
    kept = {"sentences-minilm_384.npz", "sentences-minilm-tuned-v2_384.npz"}  # v1's went with its model
    assert {p.name for p in indexes.glob("sentences-*")} == kept
    model_dir = private_data_dir / again.model_dir

    reverted = await revert(settings)  # in this process: Milvus Lite lets one process open a data dir
    assert (reverted.corpus_version_before, reverted.corpus_version_after) == (again.corpus_version_after, before)
    state = load_state(private_data_dir)
    assert state.version == 0 and state.last_version == 2 and apply_tuning(settings) == settings
    assert (await _chunks(private_data_dir)).version == before
    store = MilvusVectorStore(settings.milvus_uri, "gweta_chunks", 384)
    try:
        assert not store.client.has_collection(tuned_collection)  # the tuned vectors are dropped, and its weights
        assert not store.client.has_collection("gweta_chunks__minilm_tuned_v2_384")
        assert not model_dir.exists() and (private_data_dir / "models").is_dir()
        assert [p.name for p in indexes.glob("sentences-*")] == ["sentences-minilm_384.npz"]
        assert await store.count() == len((await _chunks(private_data_dir)).chunks)
    finally:
        await store.close()


async def test_a_tuned_model_that_ranks_worse_than_the_packaged_one_is_not_switched_to(private_data_dir: Path) -> None:
    settings = Settings(data_dir=private_data_dir)
    before = await _chunks(private_data_dir)
    # A learning rate 5,000 times the default wrecks the model in a few steps; BM25 and fusion are still fit.
    report = await tune(settings, TuneOptions(max_pairs=40, max_minutes=5, batch_size=8, learning_rate=0.1))

    assert report.kept == "packaged" and report.version == 0 and report.train is not None
    assert report.held_out_mrr["dense (tuned)"] < report.held_out_mrr["dense (packaged)"]
    state = load_state(private_data_dir)
    assert (state.version, state.last_version, state.model_dir, state.collection) == (0, 1, "", "")
    assert state.k1 is not None and state.dense_weight is not None  # BM25 and fusion as fit
    assert not (private_data_dir / "models" / "tuned-v1").exists()
    assert report.corpus_version_after == before.version == (await _chunks(private_data_dir)).version
    tuned = apply_tuning(settings)
    assert tuned.embeddings == settings.embeddings and tuned.bm25.k1 == state.k1
    store = MilvusVectorStore(settings.milvus_uri, "gweta_chunks", 384)
    try:
        assert not store.client.has_collection("gweta_chunks__minilm_tuned_v1_384")
        assert await store.count() == len(before.chunks)
    finally:
        await store.close()
    embedder, found = await _dense_search(settings, "How much deposit can a landlord ask for?")
    assert embedder == "minilm"
    assert found and found[0].startswith("sample/")


async def test_keeping_the_packaged_model_after_new_documents_embeds_them_for_it(
    private_data_dir: Path, tmp_path: Path
) -> None:  # fmt: skip
    settings = Settings(data_dir=private_data_dir)
    await tune(settings, TuneOptions(max_pairs=12, max_minutes=0.01, batch_size=4, force=True))  # v1 serves
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    (corpus / "fisheries-act.md").write_text(FISHERIES_ACT)
    await ingest_into(apply_tuning(settings), corpus)  # the new Act goes into v1's collection only

    report = await tune(settings, TuneOptions(max_pairs=40, max_minutes=5, batch_size=8, learning_rate=0.1))
    assert report.kept == "packaged" and (load_state(private_data_dir).version, report.version) == (0, 0)
    chunks = (await _chunks(private_data_dir)).chunks
    store = MilvusVectorStore(settings.milvus_uri, "gweta_chunks", 384)
    try:
        assert await store.ids() == set(chunks)  # the base collection holds the new Act's chunks too
        assert not any(store.client.has_collection(f"gweta_chunks__minilm_tuned_v{n}_384") for n in (1, 2))
    finally:
        await store.close()
    embedder, found = await _dense_search(settings, "mesh size of fishing nets")
    assert embedder == "minilm"
    assert found[0] == "sample/act/1999/1"


def test_the_command_checks_its_options_and_reverts_an_untuned_data_dir(tmp_path: Path) -> None:
    env = {**os.environ, "GWETA_DATA_DIR": str(tmp_path / "data")}

    def gweta(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "api.cli", "tune", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)

    bad = gweta("--batch-size", "1")
    assert bad.returncode == 2 and "--batch-size over 1" in bad.stderr
    no_rate = gweta("--learning-rate", "0")
    assert no_rate.returncode == 2 and "--learning-rate, --generate-minutes" in no_rate.stderr
    empty = gweta("--max-pairs", "10")
    assert empty.returncode == 1 and "run 'gweta ingest' first" in empty.stderr
    reverted = gweta("--revert")
    assert reverted.returncode == 0, reverted.stderr
    assert "reverted: corpus version empty -> empty, collection gweta_chunks" in reverted.stdout
