"""The claim-judge benchmark's account of the LLM judge (``benchmarks/claim_judge.py``), against a loopback model that
speaks the OpenAI protocol: how each verdict was reached, the model's own verdicts, and the fixed development sample
a slow judge runs."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def claim_judge_benchmark() -> Any:
    """``benchmarks/claim_judge.py``, loaded from its file (it imports ``report`` from its own folder)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("claim_judge_benchmark", BENCHMARKS / "claim_judge.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_the_development_sample_is_evenly_spaced_in_id_order() -> None:
    bench = claim_judge_benchmark()
    cases = [bench.Case(f"s{n}", "p", n % 2 == 0, "k", id=f"cp{n:03d}") for n in range(287, 0, -1)]
    kept = bench.sample(cases, 40)
    assert [c.id for c in kept][:4] == ["cp001", "cp008", "cp015", "cp022"]
    assert len(kept) == 40 and len({c.id for c in kept}) == 40 and kept[-1].id == "cp280"
    assert [c.id for c in bench.sample(cases, 0)] == sorted(c.id for c in cases)


def test_the_report_says_how_each_llm_verdict_was_reached(tmp_path: Path) -> None:
    bench = claim_judge_benchmark()
    cases = bench.old_cases("polarity")
    assert len(cases) >= 4
    # First reply: not JSON; second: "supported" with words the provision does not contain; third: no bool; then
    # "supported" with no quote, for every other sentence.
    replies = [Reply(["I think it is supported."]), answer_json({"supported": True, "quote": "words found nowhere"}),
               answer_json({"supported": "yes"})]  # fmt: skip
    replies += [answer_json({"supported": True, "reason": "", "quote": ""}) for _ in cases[3:]]
    upstream = FakeOpenAI([], {"judge": replies})
    with LiveServer(upstream.app) as server:
        args = argparse.Namespace(cross_encoder_path="", cross_encoder_threshold=0.5, llm_url=f"{server.url}/v1",
                                  llm_model="m", llm_timeout=10.0)  # fmt: skip
        calls: dict[tuple[str, str], Any] = {}
        trace = tmp_path / "trace.jsonl"
        with trace.open("w") as out, bench.built_judge("llm", args, calls) as judge:
            lines = bench.report("llm", judge, tmp_path, parts_run=["polarity"], calls=calls, trace=out)
    assert upstream.skills_called == ["judge"] * len(cases)
    text = "\n".join(lines)
    assert "| old: polarity | 49 | 0 | 2 | 1 | 46 |" in text  # hard checks, unusable, quote not found, model
    # The model's own verdicts: every usable reply (all but the first and third) said "supported".
    usable = [cases[1], *cases[3:]]
    good = sum(c.supported for c in usable)
    own = (f"| old: polarity | 47 | {good} | {good / 47:.3f} ({good}/47) | 1.000 ({good}/{good}) | "
           f"0.000 (0/{47 - good}) |")  # fmt: skip
    assert own in text
    assert "49 calls; outcomes: ok 48, unparsable 1." in text
    assert "Not run: old: claim_support, new pairs: dev, new pairs: held-out." in text
    assert len(trace.read_text().splitlines()) == len(cases)
