"""One seam for judging a claim: a sentence and the provision it cites in, a verdict out.

``ClaimJudge`` is what the gate (``api.composer.verification.SentenceGate``) asks about each sentence and each
provision it may rest on. ``RulesJudge``, the default, is the hand-written rules of ``api.composer.support`` (facts,
meaning coverage, polarity, topic); another judge (a cross-encoder, an LLM) takes its place behind the same
Protocol, chosen by ``Settings.gate.judge``.
"""

from __future__ import annotations

from typing import Literal, Protocol

from .support import Support, Topic, support

Reason = Literal["missing_fact", "opposite_meaning", "off_topic", "too_little"]
JudgeName = Literal["rules"]


class ClaimJudge(Protocol):
    def judge(self, sentence: str, provision: str, *, topic: Topic, identity: str = "", heading: str = "") -> Support:
        """Whether ``provision`` supports ``sentence`` (a claim about the law, written for a question whose topic
        words are ``topic``): the verdict, its score, the span that supports it, and what is wrong if not."""
        ...


class RulesJudge:
    """The rules: every fact of the sentence stated in the provision, enough of its meaning covered, the same
    polarity, and no topic of the question the provision never mentions."""

    def judge(self, sentence: str, provision: str, *, topic: Topic, identity: str = "", heading: str = "") -> Support:
        return support(sentence, provision, identity=identity, topic=topic, heading=heading)


def reasons(verdict: Support) -> tuple[Reason, ...]:
    """Why a verdict is not "supported", in the seam's terms."""
    found: list[Reason] = []
    if verdict.missing:
        found.append("missing_fact")
    if verdict.opposite:
        found.append("opposite_meaning")
    if verdict.off_topic:
        found.append("off_topic")
    if verdict.score < verdict.threshold:
        found.append("too_little")
    return tuple(found)


def build_claim_judge(name: JudgeName) -> ClaimJudge:
    match name:
        case "rules":
            return RulesJudge()
