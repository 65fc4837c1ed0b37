"""What a real small model did in `gweta eval answers` (benchmarks/results/eval_answers_local_llm.md), replayed
through the whole app against the scripted loopback OpenAI-protocol server on the sample corpus."""

from pathlib import Path

from tests.servers import FakeOpenAI, Reply, answer_json
from tests.test_agent import DEPOSIT, QUOTE, codes
from tests.test_stream import assert_contract
from tests.test_wire import ask

SEVERAL_RELEVANT = answer_json({"relevant": [1, 2, 3, 4, 5, 6], "sufficient": True, "rewrite": ""})


async def test_a_model_that_abstains_gets_the_quotes_without_a_wasted_corrective_call(private_data_dir: Path) -> None:
    # Qwen2.5-Coder-1.5B answered gw-dev-001 ("My boss fired me…") with the abstain phrase although section 12B was
    # in its sources; the gate read the empty answer as resting on a single source and spent the corrective step
    # (a minute on CPU) asking again, only for the model to abstain again.
    upstream = FakeOpenAI([Reply(["I could not find this in the documents I have."])], {"grade": [SEVERAL_RELEVANT]})
    ((events, _),) = await ask(upstream, private_data_dir, DEPOSIT)
    final = assert_contract(events)
    assert upstream.skills_called.count("synthesize") == 1 and [s["kind"] for s in final["research"]] == ["research"]
    assert "single_source" not in codes(events) and "model_abstained" in codes(events)
    assert final["verified"] and QUOTE in final["answer"] and not final["abstained"]  # the quotes, never blank
