"""The learned fusion: trees trained with scikit-learn and served as plain arrays score exactly as scikit-learn does;
they learn what RRF cannot see and are kept only when they beat it on held-out questions; `gweta tune --questions`
trains them, the data dir's state carries them into the retriever, and `--revert` removes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from api.errors import ConfigError
from api.evaluation.core import section_unit
from api.schemas.documents import Chunk
from api.services import open_services
from api.settings import BM25Settings, Settings
from api.tools.bm25 import Bm25sIndex
from api.tools.corpus import Corpus
from api.tools.fusion import FEATURES, Candidates, load_trees
from api.tools.object_store import build_object_store
from api.tools.vector_store import Hit
from api.tuning import TuningState, load_state, save_state
from ingestion.learned_fusion import MIN_QUESTIONS, Asked, choose, fit, ranker, tree_file
from ingestion.tuning import TuneOptions, revert, tune


async def _corpus(data_dir: Path) -> Corpus:
    settings = Settings(data_dir=data_dir)
    return await Corpus.load(build_object_store(settings.object_store, settings.data_dir))


def _asked(chunks: list[Chunk], gold_at: int) -> list[Asked]:
    """Two questions per provision, in its heading's words, whose gold chunk both lists put at ``gold_at``, the same
    20 chunks of other provisions around it: RRF cannot lift it; the question's words in it can."""
    firsts = list({c.section_id: c for c in reversed(chunks)}.values())[::-1]
    asked = []
    for i, chunk in enumerate(firsts):
        unit = section_unit(chunk.section_id)
        others = [c for c in chunks if section_unit(c.section_id) != unit]
        shown = [others[(7 * i + j) % len(others)] for j in range(20)]
        ranked = [c.chunk_id for c in shown]
        ranked.insert(gold_at - 1, chunk.chunk_id)
        for text in (f"What does the law say about {chunk.section_heading}?", f"{chunk.section_heading}: the rules"):
            asked.append(
                Asked.of(
                    text,
                    [Hit(cid, 0.9 - 0.01 * r) for r, cid in enumerate(ranked)],
                    [Hit(cid, 20.0 - r) for r, cid in enumerate(ranked)],
                    1.0,
                    frozenset({unit}),
                )  # fmt: skip
            )
    return asked


@pytest.fixture
async def sample(sample_data_dir: Path) -> tuple[Candidates, list[Chunk], dict[str, str]]:
    corpus = await _corpus(sample_data_dir)
    chunks = list(corpus.chunks.values())
    candidates = Candidates(chunks, Bm25sIndex.of_chunks(chunks, BM25Settings()))
    return candidates, chunks, {c.chunk_id: section_unit(c.section_id) for c in chunks}


def test_served_trees_score_exactly_as_scikit_learn(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, len(FEATURES)))
    y = (x[:, 0] + x[:, 5] ** 2 - x[:, 12] > 0.5).astype(int)
    model = ranker().fit(x, y)
    path = tmp_path / "fusion.json"
    path.write_text(tree_file(model, 7).model_dump_json())
    trees = load_trees(path)
    assert trees is not None and len(trees.roots) == model.n_iter_ and trees.depth > 1
    probe = rng.normal(size=(500, len(FEATURES)))
    assert np.allclose(trees.score(probe), model.decision_function(probe), atol=1e-9)


def test_a_missing_or_damaged_tree_file_is_a_clear_error(tmp_path: Path) -> None:
    assert load_trees(None) is None
    with pytest.raises(ConfigError, match="does not exist"):
        load_trees(tmp_path / "gone.json")
    tree = {"feature": [0, 0, 0], "threshold": [0.5, 0, 0], "left": [1, -1, -1], "right": [2, -1, -1],
            "value": [0, -1.0, 1.0]}  # fmt: skip
    good = {"features": list(FEATURES), "baseline": 0.0, "trees": [tree]}
    path = tmp_path / "fusion.json"
    path.write_text(json.dumps(good))
    trees = load_trees(path)
    assert trees is not None and trees.score(np.array([[0.0] * len(FEATURES), [1.0] * len(FEATURES)])).tolist() == [
        -1.0, 1.0
    ]  # fmt: skip
    for damaged, why in (
        ({**good, "features": ["dense_rank"]}, "this version computes"),
        ({**good, "trees": [{**tree, "right": [7, -1, -1]}]}, "children must be nodes"),
        ({**good, "trees": [{**tree, "left": [0, -1, -1]}]}, "no cycles"),
        ({**good, "trees": [{**tree, "left": [2, -1, -1]}]}, "no cycles"),  # one node, two parents' slots
        ({**good, "trees": [{**tree, "feature": [99, 0, 0]}]}, "does not compute"),
        ({**good, "trees": []}, "at least 1"),
    ):
        path.write_text(json.dumps(damaged))
        with pytest.raises(ConfigError, match=why):
            load_trees(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="is invalid"):
        load_trees(path)


def test_features_read_the_lists_the_document_and_the_question_words(
    sample: tuple[Candidates, list[Chunk], dict[str, str]],
) -> None:
    candidates, chunks, _ = sample
    question = _asked(chunks, 3)[0]
    x = candidates.features(question.text, question.rankings, question.fused)
    column = {name: x[:, i] for i, name in enumerate(FEATURES)}
    gold = next(i for i, cid in enumerate(question.fused) if cid == question.rankings["dense"][2].chunk_id)
    assert column["dense_rank"][gold] == column["bm25_rank"][gold] == 3
    shared, by_rarity = column["words_shared"], column["words_shared_by_rarity"]  # "law", "say", "about", heading
    assert shared[gold] == shared.max() > shared.mean() and by_rarity[gold] == by_rarity.max() > 0
    assert column["fused_rank"].tolist() == list(range(1, len(question.fused) + 1))
    first, second = chunks[0].chunk_id, chunks[1].chunk_id  # the corpus's first two chunks, of one document
    only_bm25 = {"dense": [Hit(first, 0.5)], "bm25": [Hit(first, 2.0), Hit(second, 1.0)]}
    x = candidates.features("deposit", only_bm25, [first, second])
    assert x[1, FEATURES.index("dense_rank")] == 61  # a chunk a list lacks ranks past both lists
    assert x[0, FEATURES.index("before_1")] == x[0, FEATURES.index("before_2")] == 3 * 61  # nothing precedes it
    assert x[0, FEATURES.index("after_1")] == 2 and x[1, FEATURES.index("before_1")] == 1  # neighbours' fused ranks
    assert x[:, FEATURES.index("bm25_score_of_best")].tolist() == [1.0, 0.5]
    assert x[:, FEATURES.index("document_in_top")].tolist() == [2, 2]
    # BM25's scores read deeper than its list, when given, are the ones read (the retriever's come 300 deep)
    deeper = candidates.features("deposit", only_bm25, [first, second], {first: 4.0, second: 1.0})
    assert deeper[:, FEATURES.index("bm25_score")].tolist() == [4.0, 1.0]
    assert deeper[:, FEATURES.index("bm25_score_of_best")].tolist() == [1.0, 0.25]


def test_trees_learn_what_rrf_cannot_see_and_serve_only_when_they_beat_it(
    sample: tuple[Candidates, list[Chunk], dict[str, str]],
) -> None:
    candidates, chunks, unit = sample
    buried = _asked(chunks, 6)
    train, held = buried[::3] + buried[1::3], buried[2::3]
    assert len(train) >= MIN_QUESTIONS
    choice = choose(candidates, train, held, unit)
    assert choice.kept and choice.trees is not None and choice.trees.questions == len(train)
    assert choice.scores["rrf MRR@10"] == pytest.approx(1 / 6, abs=0.02)
    assert choice.scores["learned MRR@10"] > 0.5 and choice.scores["learned R@10"] >= choice.scores["rrf R@10"]

    on_top = _asked(chunks, 1)  # RRF already puts every gold first: nothing to beat
    plain = choose(candidates, on_top[::3] + on_top[1::3], on_top[2::3], unit)
    assert plain.trees is not None and not plain.kept and "no better than RRF" in plain.reason
    assert plain.scores["rrf MRR@10"] == 1.0

    few = choose(candidates, train[: MIN_QUESTIONS - 1], held, unit)
    assert few.trees is None and not few.kept and f"at least {MIN_QUESTIONS}" in few.reason


async def test_the_retriever_orders_by_the_data_dirs_trees_and_revert_removes_them(
    private_data_dir: Path, sample: tuple[Candidates, list[Chunk], dict[str, str]]
) -> None:
    candidates, chunks, unit = sample
    trees = fit(candidates, _asked(chunks, 6), unit)
    assert trees is not None
    path = private_data_dir / "tuning" / "fusion-v1.json"
    path.parent.mkdir(parents=True)
    path.write_text(trees.model_dump_json())
    save_state(private_data_dir, TuningState(dense_weight=1.0, bm25_weight=1.0, fusion_file="tuning/fusion-v1.json"))
    settings = Settings(data_dir=private_data_dir)
    moved = 0
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        for question in ("How much deposit can a landlord ask for?", "How many days of maternity leave do I get?",
                         "Can my employer deduct money from my salary?"):  # fmt: skip
            result = await retriever.retrieve(question, rerank=False)
            learned = [cid for cid, _ in result.stages["learned"]]
            assert sorted(learned) == sorted(cid for cid, _ in result.stages["fused"])
            assert [h.chunk.chunk_id for h in result.hits] == learned[: len(result.hits)]
            assert [h.ranks["learned"] for h in result.hits] == list(range(1, len(result.hits) + 1))
            scores = [s for _, s in result.stages["learned"]]
            assert scores == sorted(scores, reverse=True) and "learned_fusion" in result.timings
            assert len(result.stages["bm25"]) <= settings.retrieval.candidates  # scored deeper, fused as many
            moved += learned != [cid for cid, _ in result.stages["fused"]]
            rrf = await retriever.retrieve(question, rerank=False, learned=False)  # what `gweta eval` sets beside it
            assert "learned" not in rrf.stages and [h.chunk.chunk_id for h in rrf.hits] == [
                cid for cid, _ in result.stages["fused"][: len(rrf.hits)]
            ]  # fmt: skip
            alone = await retriever.retrieve(question, mode="bm25")  # the trees learned from both lists
            assert "learned" not in alone.stages and all("learned" not in h.ranks for h in alone.hits)
    assert moved  # the trees reorder what RRF fused

    off = Settings(data_dir=private_data_dir, retrieval={"learned_fusion": False})  # GWETA_RETRIEVAL__LEARNED_FUSION
    async with open_services(off) as services:
        result = await services.orchestrator.deps.retriever.retrieve("How much deposit can a landlord ask for?")
        assert "learned" not in result.stages and "fused" in result.stages
    await revert(settings)
    assert not path.exists() and load_state(private_data_dir).fusion_file == ""


async def test_tune_with_labelled_questions_trains_the_trees_and_keeps_them_only_if_they_win(
    private_data_dir: Path, tmp_path: Path
) -> None:
    corpus = await _corpus(private_data_dir)
    firsts = {c.section_id: c for c in corpus.chunks.values()}
    lines = []
    for n, chunk in enumerate(firsts.values()):
        gold = [{"law_id": chunk.doc_key, "section": chunk.section_id.split("#", 1)[1]}]
        for k, text in enumerate((f"What does the {chunk.title} say about {chunk.section_heading.lower()}?",
                                  f"The rules on {chunk.section_heading.lower()} in the {chunk.title}")):  # fmt: skip
            lines.append(json.dumps({"id": f"t{n}-{k}", "question": text, "gold": gold}))
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(lines) + "\n")
    settings = Settings(data_dir=private_data_dir)
    report = await tune(settings, TuneOptions(questions=questions, max_minutes=0.01, batch_size=4, force=True))
    fusion = report.fusion
    assert fusion is not None and fusion.questions >= MIN_QUESTIONS and fusion.held_out > 0
    assert fusion.questions + fusion.held_out == len(lines)
    assert {"rrf R@10", "rrf MRR@10", "learned R@10", "learned MRR@10"} == set(fusion.scores)
    state = load_state(private_data_dir)
    kept = private_data_dir / "tuning" / f"fusion-v{state.last_version}.json"
    if fusion.kept:
        assert state.fusion_file == f"tuning/fusion-v{state.last_version}.json" and load_trees(kept) is not None
        assert fusion.scores["learned MRR@10"] > fusion.scores["rrf MRR@10"]
    else:
        assert state.fusion_file == "" and not kept.exists()
        assert fusion.scores["learned MRR@10"] <= fusion.scores["rrf MRR@10"] or (
            fusion.scores["learned R@10"] < fusion.scores["rrf R@10"]
        )
