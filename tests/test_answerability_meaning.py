"""The evidence judge's meaning features and its third answer, the closest provisions (``related``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from api.composer.answerability import (
    DEFAULT_PATH,
    FEATURES,
    AnswerabilityModel,
    evidence_features,
    load_answerability_model,
)
from api.errors import ConfigError
from api.orchestrators.query.evidence import FittedJudge
from api.services import open_services
from api.settings import Settings

ANSWERABLE = "How much deposit can a landlord ask for?"
UNANSWERABLE = "Is bitcoin mining with cryptocurrency rigs legal?"


async def test_meaning_features_from_a_real_retrieval(private_data_dir: Path) -> None:
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        good = await retriever.retrieve(ANSWERABLE)
        bad = await retriever.retrieve(UNANSWERABLE)
        yes = evidence_features(ANSWERABLE, good, retriever.lexical, retriever.thesaurus)
        no = evidence_features(UNANSWERABLE, bad, retriever.lexical, retriever.thesaurus)
    assert {"dense_best", "dense_margin", "heading_named"} <= set(yes) == set(FEATURES)
    # Section 3 is headed "Deposits": the provision is about the question's subject; nothing is headed "bitcoin".
    assert yes["heading_named"] == 1.0 and no["heading_named"] == 0.0
    for features in (yes, no):
        assert 0 < features["dense_best"] <= features["dense_top"] and features["dense_margin"] >= 0
    assert yes["dense_best"] > no["dense_best"]


async def test_the_fitted_judge_marks_evidence_related(private_data_dir: Path) -> None:
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        result = await retriever.retrieve(UNANSWERABLE)
        packaged = load_answerability_model()
        never = FittedJudge(AnswerabilityModel(*_fields(packaged, related_threshold=1.0)), retriever.lexical)
        always = FittedJudge(AnswerabilityModel(*_fields(packaged, related_threshold=1e-9)), retriever.lexical)
        assert not never(UNANSWERABLE, result, None).related
        verdict = always(UNANSWERABLE, result, None)
    assert verdict.related and not verdict.answerable


def _fields(model: AnswerabilityModel, related_threshold: float) -> tuple[object, ...]:
    return (model.version, model.features, model.mean, model.scale, model.weights, model.bias, model.threshold,
            model.grade_weight, model.veto, related_threshold)  # fmt: skip


def test_a_related_threshold_above_the_answer_threshold_is_refused(tmp_path: Path) -> None:
    text = DEFAULT_PATH.read_text()
    lines = [line for line in text.splitlines() if not line.startswith("related_threshold")]
    broken = tmp_path / "model.toml"
    broken.write_text("\n".join([*lines, "related_threshold = 0.99"]) + "\n")
    with pytest.raises(ConfigError, match="related_threshold"):
        load_answerability_model(broken)
    assert 0 < load_answerability_model().related_threshold <= load_answerability_model().threshold


def test_a_model_file_without_a_related_threshold_loads_with_the_answer_threshold(tmp_path: Path) -> None:
    lines = [line for line in DEFAULT_PATH.read_text().splitlines() if not line.startswith("related_threshold")]
    older = tmp_path / "model.toml"
    older.write_text("\n".join(lines) + "\n")
    model = load_answerability_model(older)
    assert model.related_threshold == model.threshold == load_answerability_model().threshold


async def test_act_focus_is_the_share_of_the_best_hits_from_the_leading_law(private_data_dir: Path) -> None:
    """Ten best hits all from the leading hit's law: 1; one of them from it and nine from other laws: 0.1."""
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        result = await retriever.retrieve(ANSWERABLE)
        lead = result.hits[0].chunk.chunk_id
        law = lead.split("#", 1)[0]
        others = [cid for cid in services.corpus.chunks if not cid.startswith(f"{law}#")][:9]
        assert len(others) == 9
        focused = replace(result, stages={**result.stages, "fused": [(lead, 1.0)] * 10})
        scattered = replace(result, stages={**result.stages, "fused": [(lead, 1.0)] + [(c, 0.5) for c in others]})
        one = evidence_features(ANSWERABLE, focused, retriever.lexical, retriever.thesaurus)
        many = evidence_features(ANSWERABLE, scattered, retriever.lexical, retriever.thesaurus)
    assert one["act_focus"] == 1.0 and many["act_focus"] == pytest.approx(0.1)
