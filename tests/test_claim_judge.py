"""The claim-judge seam: every judge behind ``ClaimJudge`` runs the same labelled cases, and its precision and recall
are pinned. The judges that need a model (a cross-encoder's weights, a chat model) run the same cases in
``tests/test_learned_judges.py`` on a model the tests build or script.

The cases: the old claim-support and polarity examples (provisions in ``tests/data``), and the new claim pairs
(``evaluation/claim_pairs.jsonl``, provisions read from the shared corpus), whose development and held-out parts are
pinned separately. ``benchmarks/claim_judge.py`` prints the same figures with their detail."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from api.composer.judge.gate import gate_model_answer, identity
from api.composer.judge.judge import ClaimJudge, JudgeName, build_claim_judge, reasons
from api.composer.judge.rules import RulesJudge
from api.schemas.events import Citation
from api.settings import GateSettings, Settings

DATA = Path(__file__).parent / "data"
PROVISIONS: dict[str, str] = json.loads((DATA / "provisions.json").read_text())
SUITES = {
    name: [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    for name in ("claim_support", "polarity")
}
PAIRS = [json.loads(line) for line in (Path(__file__).parent.parent / "evaluation" / "claim_pairs.jsonl").read_text()
         .splitlines() if line.strip()]  # fmt: skip
# (precision, recall) per judge and suite, each a floor: a change that lowers either is a regression to explain.
PINNED = {"rules": {"claim_support": (1.0, 1.0), "polarity": (23 / 25, 1.0)}}
# The same on the new claim pairs, as last measured (benchmarks/results/claim_judge.md): 351 development pairs and 117
# held out, after the third round's rules (plain words for the law's, words read in the provision's spelling, claims
# joined in one sentence read one by one). The held-out precision floor was lowered in that round, from 41/62 on the
# 431 pairs of the time to 42/65 on the same pairs (two more of their 58 false sentences passed, one more of their 49
# faithful ones): see that report. Six pairs on suppositions stated as facts were added after it (four development,
# two held out): one new faithful development pair and one new false held-out pair are judged wrongly, which lowers
# those figures with no old pair judged differently.
# 43 pairs on rules stated under a condition (a lead-in's "where"/"in the case of", a penalty limb's "if", a subject
# narrowed by a list) were added with the dropped-condition rule (25 development, 18 held out; written after its first
# version and before it was run on them; it was refined on development errors only). On the 137 held-out pairs the
# rules before it pass 55 of 64 faithful sentences and 35 of 73 false ones (precision 55/90, recall 55/64); with it
# 51 and 31 (51/82, 51/64): four faithful held-out sentences are rejected as dropping a condition, so the held-out
# recall floor is lower than the old one (46/55 on the 119 pairs of the time). On the 380 development pairs the rules
# before it give 167/213 and 167/196, after it 167/207 and 167/196. Seven pairs on what a decision-maker "may include"
# or "may take into account" made a requirement followed (five development, two held out), with the rule that reads
# them (``requires_factor``): all seven are judged as labelled. Eight development pairs on a duty given to the party
# it is owed to followed, with ``gives_to_another``: all eight are judged as labelled, one older false development
# pair is now rejected too, and no faithful pair is judged differently. Eleven development pairs on conditioned rules
# (cp552-cp562) were written last, after the rules: two false ones pass (a condition whose words the sentence
# repeats, a rule the next subsection repeats) and one faithful one is rejected by an older rule.
# Twenty-two pairs on a list's parallel items (cp601-cp622: a sentence that gives one item's case another item's
# rule, kind crossed_items, and faithful sentences about one item) were added with ``limbs.mixed_items``, and ten on a
# party narrowed by a relative clause with a figure (cp623-cp632, "… to a female employee who has served for at least
# one year") with that reading in ``conditions``: the development pairs were written with the rules and used to refine
# them, the held-out ones (other Acts) written before the rules were run on them. Every older pair is judged as
# before. Development: 5 of 8 crossed sentences and 2 of 3 dropped conditions rejected (those passed mix within what
# is said, or name the party by other words), all 9 faithful ones passed. Held out: 3 of 4 crossed and 1 of 2 dropped
# conditions rejected; 5 of 6 faithful passed (the sixth is rejected by the older dropped-condition rule). Eight
# pairs on parallel subsections (cp633-cp640, "(1) Any person who … level five …; (2) Any person who … level six …")
# followed, with ``limbs.mixed_subsections``, the same way: 2 of 2 development crossed sentences rejected, 0 of 2 held
# out, all 4 faithful passed; no earlier pair is judged differently.
# Nineteen pairs on parties (cp660-cp678: a duty, right or order given to the party the provision names, or to
# another) were added with ``parties.wrong_holder``, written before it was run on them; the 15 development ones were
# then read, the 4 held-out ones (two Acts no development pair cites) counted only. On the older pairs the party check
# rejects one more false development sentence (179/220 -> 179/219) and changes no held-out verdict; of the new pairs,
# 6 of 7 false development sentences are rejected (2 before), 7 of 8 faithful ones pass (one is rejected by the older
# dropped-condition rule), and both false held-out ones pass, both faithful ones too. The held-out precision floor is
# lower only because of those two new false sentences (52/83 on the older pairs, unchanged).
# Both sets of rules together, over all 602 pairs (the sums of the two accounts above), then six pairs on leave given
# for what a clause only supposes (cp641-cp646, "a lender may charge interest above the prescribed rate" against "in
# respect of any loan … exceeding the prescribed rate, the lender shall …"), with ``cases.permits_supposed``: the two
# development pairs written with the rule, the four held-out ones (two Acts) before it was run on them; all six are
# judged as labelled (one false held-out pair was already rejected by an older rule), no earlier pair differently.
# Then twelve pairs on a penalty item's figure said without the case the item opens with (cp647-cp658,
# ``conditions.dropped_item_condition``; two earlier unsupported pairs caught too) and twelve on a rule said to hold
# "even if" in the case a proviso takes out of it (cp659, cp679-cp689, ``cases.despite_excepted``), both written after
# the rule's first version was tried on the same sections; then seven on penalties given by the offences' marks
# ("liable, if convicted in terms of— (i) paragraph (a), to …", cp690-cp696, two faithful ones held back by the older
# dropped-condition rule); then eight on a time to act within said as a wait before acting (cp697-cp704,
# ``cases.waits_for_deadline``); then eight on a duty the provision denies ("no person … shall be obliged to …",
# "shall not be required to …") said as one (cp705-cp712; cp208 is caught by the same reading); then seven on a party
# narrowed by an age or a period given to "anyone" (cp713-cp719, three of them misses kept as found); then eight on a
# power to declare a thing of a kind said as the thing being of it (cp720-cp727, ``cases.declared_as_fact``).
# Then ten on ages the law is applied to ("If you are seventeen, …", cp728-cp737, ``facts.applied_ages``), five on
# a general holder described by its dealings with the party a sentence names (cp738-cp742, ``parties._counterpart``)
# and nine on a requirement a sentence's case leaves out (cp743-cp751, ``limbs.dropped_requirement``), each written
# after the rule's first version was tried on the development pairs and before it was run on them
# (benchmarks/results/claim_judge.md gives each step). Then seventeen on a rule said to hold "including" or "even"
# in a case a list's opening or a proviso sets apart (cp752-cp768, ``cases.despite_excepted``), each beside the case
# said faithfully, written before the rule was run on them; then fourteen on an act said to be no offence that the
# provision makes one (cp769-cp782, ``cases.offence_denied``), each beside a faithful sentence; then sixteen on an
# outcome turned round ("continues" for "shall cease", "granted" for "deemed … refused"; cp783-cp798,
# ``cases.outcome_turned``), each beside a faithful sentence.
PINNED_PAIRS = {"rules": {"dev": (241 / 279, 241 / 276), "heldout": (77 / 114, 77 / 97)}}


def scores(judge: ClaimJudge, examples: list[dict[str, object]]) -> tuple[float, float]:
    said = [(judge.judge(str(e["sentence"]), PROVISIONS[str(e["provision"])], topic={}).supported, e["supported"])
            for e in examples]  # fmt: skip
    true_positive = sum(got and label for got, label in said)
    precision = true_positive / max(1, sum(got for got, _ in said))
    recall = true_positive / max(1, sum(bool(label) for _, label in said))
    return precision, recall


@pytest.mark.parametrize("name", ["rules"])
@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_judge_keeps_its_precision_and_recall_on_the_labelled_cases(name: JudgeName, suite: str) -> None:
    examples = SUITES[suite]
    assert sum(bool(e["supported"]) for e in examples) >= 10 and sum(not e["supported"] for e in examples) >= 10
    precision, recall = scores(build_claim_judge(GateSettings(judge=name)), examples)
    assert precision >= PINNED[name][suite][0] and recall >= PINNED[name][suite][1], (suite, precision, recall)


@pytest.fixture(scope="module")
def pair_cases(shared_data: Path) -> dict[str, list[tuple[str, str, str, str, bool]]]:
    """The claim pairs by split, each as the gate would judge it: (sentence, the cited section's text, the section's
    identity, its heading, supported?)."""
    wanted = {(p["law_id"], p["section"]) for p in PAIRS}
    found: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            law = json.loads(line)
            for section in law["sections"]:
                key, text = (law["id"], str(section["section"])), str(section.get("text") or "").strip()
                if key in wanted and text:
                    cited = Citation(
                        index=1,
                        doc_key=law["id"],
                        title=law["title"],
                        section_id=f"{key[0]}#s{key[1]}",
                        section=f"section {key[1]}",
                        heading=section["heading"],
                        chunk_id="",
                        quote="",
                    )
                    found.setdefault(key, []).append((text, identity(cited), section["heading"]))  # fmt: skip
    cases: dict[str, list[tuple[str, str, str, str, bool]]] = {"dev": [], "heldout": []}
    for pair in PAIRS:
        ((text, named, heading),) = found[(pair["law_id"], pair["section"])]  # exactly one section
        cases[pair["split"]].append((pair["sentence"], text, named, heading, pair["supported"]))
    return cases


def test_the_claim_pairs_are_many_varied_and_split_by_act_before_any_fitting() -> None:
    assert len(PAIRS) >= 320 and len({p["id"] for p in PAIRS}) == len(PAIRS)
    assert len({p["law_id"] for p in PAIRS}) >= 30
    assert 0.4 <= sum(p["supported"] for p in PAIRS) / len(PAIRS) <= 0.6
    # The split is fixed by the Act alone, so no held-out pair cites an Act a development pair cites.
    for pair in PAIRS:
        held_out = int(hashlib.sha256(pair["law_id"].encode()).hexdigest(), 16) % 5 == 0
        assert pair["split"] == ("heldout" if held_out else "dev"), pair["id"]
    share = Counter(p["split"] for p in PAIRS)["heldout"] / len(PAIRS)
    assert 0.15 <= share <= 0.3, share
    kinds = Counter(p["kind"] for p in PAIRS if not p["supported"])
    assert {"changed_number", "dropped_condition", "permission", "wrong_party", "negation", "off_topic"} <= set(kinds)


@pytest.mark.parametrize("name", ["rules"])
@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_every_judge_keeps_its_precision_and_recall_on_the_claim_pairs(
    name: JudgeName, split: str, pair_cases: dict[str, list[tuple[str, str, str, str, bool]]]
) -> None:
    judge = build_claim_judge(GateSettings(judge=name))
    said = [(judge.judge(sentence, text, topic={}, identity=named, heading=heading).supported, label)
            for sentence, text, named, heading, label in pair_cases[split]]  # fmt: skip
    true_positive = sum(got and label for got, label in said)
    precision = true_positive / max(1, sum(got for got, _ in said))
    recall = true_positive / max(1, sum(label for _, label in said))
    floor = PINNED_PAIRS[name][split]
    assert precision >= floor[0] and recall >= floor[1], (split, precision, recall)


def test_the_setting_chooses_the_judge_and_the_rules_are_the_default() -> None:
    assert Settings().gate.judge == "rules"
    assert isinstance(build_claim_judge(Settings().gate), RulesJudge)


def test_a_verdict_names_why_it_fails() -> None:
    judge = RulesJudge()
    wrong_age = judge.judge("The minimum age of marriage is 16.", PROVISIONS["marriages_s3"], topic={})
    assert not wrong_age.supported and "missing_fact" in reasons(wrong_age)
    unrelated = judge.judge("The speed limit in urban areas is 60 km/h.", PROVISIONS["liquor_s34"], topic={})
    assert not unrelated.supported and "too_little" in reasons(unrelated)
    assert reasons(judge.judge("Child marriages are prohibited.", PROVISIONS["marriages_s3"], topic={})) == ()


class Refuses:
    """A judge that supports nothing: the gate must follow the judge it is given."""

    blocking = False

    def judge(self, sentence: str, provision: str, *, topic: object, identity: str = "", heading: str = "") -> object:
        return RulesJudge().judge("nothing at all here", provision, topic={})


def test_the_gate_asks_the_judge_it_is_given() -> None:
    citation = Citation(index=1, doc_key="d", title="Marriages Act", section_id="d#s3", section="section 3",
                        chunk_id="d#s3/c0", quote=PROVISIONS["marriages_s3"])  # fmt: skip
    answer = "Child marriages are prohibited [1]."
    assert gate_model_answer(answer, {1: citation}, {}).passed
    assert not gate_model_answer(answer, {1: citation}, {}, judge=Refuses()).passed  # type: ignore[arg-type]
