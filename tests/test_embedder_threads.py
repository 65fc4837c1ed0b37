"""The local embedder under concurrency: counting tokens on the event loop while the model pool encodes batches."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from api.tools.embeddings import SentenceTransformerEmbedder, load_sentence_transformer


def test_counting_tokens_does_not_break_batches_being_encoded() -> None:
    # A fast tokenizer keeps its padding setting in shared state: a count (no padding) on one thread used to switch
    # padding off under another thread's batch, which then failed (41 failures in 4 s of this before the fix; two
    # `error` events under 50 paced streams).
    model = load_sentence_transformer()
    with ThreadPoolExecutor(1) as pool:
        embedder = SentenceTransformerEmbedder(model, pool)
        question = "How much deposit can a landlord ask for?"
        expected = len(model.tokenizer(question, add_special_tokens=False)["input_ids"])
        stop = time.monotonic() + 3.0
        failures: list[Exception] = []
        encoded = [0]

        def encode() -> None:
            while time.monotonic() < stop:
                try:
                    vectors = embedder._encode(["a", "b c d e f g h i j k l m n o p"])
                    assert vectors.shape == (2, embedder.dimensions)
                    encoded[0] += 1
                except ValueError as exc:
                    failures.append(exc)

        threads = [threading.Thread(target=encode) for _ in range(3)]
        for thread in threads:
            thread.start()
        counts = set()
        while time.monotonic() < stop:
            counts.add(embedder.count_tokens(question))
        for thread in threads:
            thread.join()
    assert failures == [] and encoded[0] > 10
    assert counts == {expected}  # the counting tokenizer counts as the model's own does
