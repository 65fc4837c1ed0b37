"""Learned claim judges behind the ``ClaimJudge`` seam: a cross-encoder (NLI or support-scoring) model from a local
folder, and the configured chat model asked through the ``judge`` skill.

Each decides what rules decide worst — whether a sentence says what the provision says, in other words — and each
has the hard checks applied on top, because learned models are weak exactly where rules are sure: every fact of
the sentence (number, amount, date, period, named body, kind of penalty) must be stated in the provision, where the
provision says it, and the question's topic words must be spoken of by the provision (``api.composer.judge.rules``).
A sentence those checks fail is unsupported whatever the model says.

Both are *blocking* judges (``blocking = True``): the gate runs them in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.errors import ConfigError

from ..citations import locate_quote
from .meaning import WINDOW_UNITS, content_terms, provision_units
from .polarity import opposite
from .rules import Support, support, without_heading
from .topic import Topic

log = logging.getLogger(__name__)


def hard_checks(sentence: str, provision: str, *, topic: Topic, identity: str, heading: str) -> Support:
    """The rules' verdict, read for what a learned judge may not override: its missing facts and off-topic words."""
    return support(sentence, provision, identity=identity, topic=topic, heading=heading)


class _LRU:
    """A small thread-safe least-recently-used map: verdicts are asked again when the whole answer is re-checked."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


def _key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


# --- Cross-encoder ----------------------------------------------------------------------------------------------------


class CrossEncoderJudge:
    """A sequence-pair classifier read from a local folder (``transformers``' format): an NLI model (labels named
    entailment / contradiction / neutral: the score is the entailment probability, and a likelier contradiction is
    an opposite meaning) or a one-output support scorer (a BGE-style reranker fine-tuned for support: the score is
    its sigmoid). The provision is read in windows of up to ``WINDOW_UNITS`` consecutive sentences, as the rules read
    it, so the premise stays within the model's length and the best window is the span the citation quotes."""

    blocking = True

    def __init__(self, model_path: Path, threshold: float, max_length: int = 512, max_windows: int = 48) -> None:
        if not (model_path / "config.json").exists():
            raise ConfigError(f"gate.cross_encoder_path {model_path} is not a model folder (no config.json)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:
            raise ConfigError("the cross-encoder judge needs the 'ml' dependency group (docs/development.md)") from exc
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path))
        self.model = AutoModelForSequenceClassification.from_pretrained(str(model_path))
        self.model.eval()
        labels = {int(k): str(v).lower() for k, v in (self.model.config.id2label or {}).items()}
        self.entailment = next((k for k, v in labels.items() if v.startswith("entail")), None)
        self.contradiction = next((k for k, v in labels.items() if v.startswith("contradict")), None)
        if self.model.config.num_labels > 1 and self.entailment is None:
            raise ConfigError(
                f"gate.cross_encoder_path {model_path}: a model with {self.model.config.num_labels} labels must name "
                "one 'entailment' in its config's id2label"
            )
        self.threshold = threshold
        self.max_length = max_length
        self.max_windows = max_windows
        self.name = f"cross-encoder:{model_path.name}"
        self._lock = threading.Lock()  # one forward pass at a time: the model is shared by every answer
        self._cache = _LRU(20_000)

    def _windows(self, sentence: str, provision: str) -> list[tuple[int, int]]:
        units = provision_units(provision) or [(0, len(provision))]
        windows = [
            (units[i][0], units[j][1]) for i in range(len(units)) for j in range(i, min(i + WINDOW_UNITS, len(units)))
        ]
        if len(windows) <= self.max_windows:
            return windows
        # A long provision (a schedule, a long list): the windows that share most of the sentence's words.
        wanted = content_terms(sentence)
        return sorted(windows, key=lambda w: (-len(wanted & content_terms(provision[w[0] : w[1]])), w))[
            : self.max_windows
        ]

    def _scores(self, sentence: str, premises: list[str]) -> list[tuple[float, float]]:
        """(support probability, contradiction probability) of ``sentence`` given each premise."""
        known = {p: self._cache.get(_key(sentence, p)) for p in premises}
        todo = [p for p, v in known.items() if v is None]
        if todo:
            with self._lock, self.torch.inference_mode():
                batch = self.tokenizer(
                    todo, [sentence] * len(todo), truncation=True, max_length=self.max_length, padding=True,
                    return_tensors="pt",
                )  # fmt: skip
                logits = self.model(**batch).logits.float()
            for premise, row in zip(todo, logits.tolist(), strict=True):
                if len(row) == 1:
                    value = (1.0 / (1.0 + math.exp(-row[0])), 0.0)
                else:
                    peak = max(row)
                    exps = [math.exp(x - peak) for x in row]
                    total = sum(exps)
                    assert self.entailment is not None
                    contra = exps[self.contradiction] / total if self.contradiction is not None else 0.0
                    value = (exps[self.entailment] / total, contra)
                self._cache.put(_key(sentence, premise), value)
                known[premise] = value
        return [known[p] for p in premises]

    def judge(self, sentence: str, provision: str, *, topic: Topic, identity: str = "", heading: str = "") -> Support:
        rules = hard_checks(sentence, provision, topic=topic, identity=identity, heading=heading)
        if rules.missing or rules.off_topic or not provision.strip():
            return rules
        windows = self._windows(sentence, provision)
        claim = without_heading(sentence, heading)
        scores = self._scores(claim, [provision[a:b] for a, b in windows])
        best = max(range(len(windows)), key=lambda k: (scores[k][0], -(windows[k][1] - windows[k][0])))
        entail, contra = scores[best]
        return Support(round(entail, 4), windows[best], (), self.threshold, opposite=contra > entail, off_topic=())


# --- The configured chat model ----------------------------------------------------------------------------------------


Ask = Callable[[dict[str, str]], Coroutine[Any, Any, dict[str, Any] | None]]
"""One call of the ``judge`` skill with its variables: the model's JSON object, or None when the call failed."""


@dataclass
class _Budget:
    left: int


class LLMJudge:
    """The configured model judges each (sentence, provision) pair with the ``judge`` skill: supported or not, why,
    and the provision's words that support it (a "supported" without words found verbatim in the provision is left
    to the rules). Calls are cached by sentence and provision (the whole answer is
    checked again once written), limited to ``max_calls`` new calls per answer (``for_answer``), and bounded by the
    structured call's own timeout. Where the model cannot be asked — budget spent, call failed, reply unreadable —
    the rules decide, so a failing model never lets through what the rules would stop.

    The model is asked on the event loop that owns the HTTP client (``loop``); ``judge`` blocks the worker thread it
    runs in until the answer comes, and refuses to run on that loop itself (it would wait on itself)."""

    blocking = True

    def __init__(self, ask: Ask, loop: asyncio.AbstractEventLoop, max_calls: int, timeout_s: float) -> None:
        self.ask = ask
        self.loop = loop
        self.max_calls = max_calls
        self.timeout_s = timeout_s
        self.name = "llm"
        self._cache = _LRU(20_000)
        self._budget = _Budget(max_calls)

    def for_answer(self) -> LLMJudge:
        """This judge for one answer: the same model and cache, a fresh call budget."""
        fresh = LLMJudge.__new__(LLMJudge)
        fresh.__dict__.update(self.__dict__)
        fresh._budget = _Budget(self.max_calls)
        return fresh

    def _verdict(self, sentence: str, provision: str, heading: str) -> dict[str, Any] | None:
        key = _key(sentence, heading, provision)
        cached = self._cache.get(key)
        if cached is not None:
            return dict(cached)
        if self._budget.left <= 0:
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("the LLM judge blocks until the model answers: call it off the event loop")
        self._budget.left -= 1
        values = {"sentence": sentence, "provision": provision, "heading": heading or "(none)"}
        future = asyncio.run_coroutine_threadsafe(self.ask(values), self.loop)
        try:
            reply = future.result(self.timeout_s + 1.0)
        except (FutureTimeout, Exception) as exc:  # any failure: the rules decide
            future.cancel()
            log.warning("judge call failed: %r", exc)
            return None
        if reply is None or not isinstance(reply.get("supported"), bool):
            return None
        self._cache.put(key, dict(reply))
        return dict(reply)

    def judge(self, sentence: str, provision: str, *, topic: Topic, identity: str = "", heading: str = "") -> Support:
        rules = hard_checks(sentence, provision, topic=topic, identity=identity, heading=heading)
        if rules.missing or rules.off_topic or not provision.strip():
            return rules
        reply = self._verdict(sentence, provision, heading)
        if reply is None:
            return rules
        span = rules.span
        quote = str(reply.get("quote") or "").strip()
        if reply["supported"]:
            spans = locate_quote(quote, provision) if quote else None
            if not spans:
                # A "supported" that shows no words of the provision (none given, or words the provision lacks):
                # the model's reading cannot be checked, so the rules decide.
                return rules
            return Support(1.0, (spans[0][0], spans[-1][1]), (), 0.5)
        # Not supported. Whether it is an opposite meaning is read by the polarity rules, not taken from the model's
        # reason: small models give "opposite" for nearly every rejection, and an opposite meaning stops the gate
        # from trying the sentence on other provisions.
        flipped = opposite(without_heading(sentence, heading), provision[span[0] : span[1]])
        return Support(0.0, span, (), 0.5, opposite=flipped, off_topic=())
