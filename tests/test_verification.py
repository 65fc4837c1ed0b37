import json
from pathlib import Path

import pytest

from api.composer.citations import (
    find_references,
    first_span,
    locate_quote,
    locate_span,
    quote_spans,
    resolve_reference,
)
from api.composer.judge.choice import ExtractiveAnswer, choose_final, corrective_query
from api.composer.judge.facts import bodies, facts, missing_facts
from api.composer.judge.gate import gate_model_answer, verify_answer
from api.composer.judge.rules import support
from api.schemas.events import Citation
from api.text.sentences import split_sentences

SECTION = "3. Deposits\n(1) A landlord shall not require a deposit that exceeds the rent payable for two months."
OFFERED = {
    1: Citation(index=1, doc_key="d", title="T", section_id="d#s3", section="section 3", chunk_id="d#s3/c0",
                quote="(1) A landlord shall not require a deposit"),
}  # fmt: skip


def test_a_verbatim_quote_passes_whatever_the_spacing() -> None:
    answer = "The Act says: “A landlord shall not require a deposit that  exceeds the rent payable” [1]."
    result = verify_answer(answer, OFFERED, {"d#s3": SECTION})
    assert result.passed and result.quotes_checked == 1


def test_an_invented_quote_fails() -> None:
    answer = "The Act says: “A landlord may require any deposit the tenant agrees to pay” [1]."
    result = verify_answer(answer, OFFERED, {"d#s3": SECTION})
    assert not result.passed and result.quotes_failed == ["A landlord may require any deposit the tenant agrees to pay"]


def test_a_paragraph_without_a_citation_and_an_unknown_marker_fail() -> None:
    answer = "Deposits are limited to two months of rent [1].\n\nYou can also always sue your landlord for any reason."
    assert verify_answer(answer, OFFERED, {"d#s3": SECTION}).uncited_paragraphs == 1
    assert verify_answer("Deposits are capped [4].", OFFERED, {}).unknown_markers == [4]


def test_straight_quotation_marks_in_a_heading_and_a_provision_leave_a_verbatim_quote_verified() -> None:
    """The Companies Act's s222 is headed 'Meaning of " member " and " company "' and names sections in straight
    marks; the quote-only answer quoting it verbatim was flagged: the heading's last straight mark paired with one
    inside the quote and made a "quote" of the lead's own words."""
    section = (
        '222. Meaning of " member " in sections 223 to 225\nIn sections 223 ("Order on application of member") and 224 '
        '("Order on application of Registrar")— " member " includes a person to whom shares have been transmitted.'
    )
    offered = {1: Citation(index=1, doc_key="c", title="Companies Act", section_id="c#s222", section="section 222",
                           chunk_id="c#s222/c0", quote="In sections 223")}  # fmt: skip
    answer = (
        'Section 222 of the Companies Act (Meaning of " member " in sections 223 to 225) provides: “In sections 223 '
        '("Order on application of member") and 224 ("Order on application of Registrar")— " member " includes a '
        "person to whom shares have been transmitted.” [1]"
    )
    result = verify_answer(answer, offered, {"c#s222": section})
    assert result.quotes_checked >= 1 and result.quotes_failed == [] and result.passed
    invented = answer.replace("have been transmitted", "may be sold")
    assert verify_answer(invented, offered, {"c#s222": section}).quotes_failed


def test_short_quotes_are_not_checked() -> None:
    assert verify_answer("It says “two months” [1].", OFFERED, {"d#s3": SECTION}).quotes_checked == 0


# --- The sentence-level AttributionGate and the final-answer decision, on realistic small-model outputs ---------------

PROVISIONS: dict[str, str] = json.loads((Path(__file__).parent / "data" / "provisions.json").read_text())
SECTION_IDS = {
    "marriages_s3": "zw/act/2022/1#s3", "marriages_s36_4": "zw/act/2022/1#s36", "labour_s16": "zw/act/1985/16#s16",
    "liquor_s34": "zw/act/1984/6#s34", "liquor_s80": "zw/act/1984/6#s80", "tenancy_s3": "sample/act/2024/3#s3",
    "marriages_s30": "zw/act/2022/1#s30", "sample_consumer_s5": "sample/act/2022/11#s5",
    "sample_data_s3": "sample/act/2021/5#s3", "sample_marriage_s3": "sample/act/2022/9#s3",
    "sample_marriage_s8": "sample/act/2022/9#s8", "sample_consumer_s3": "sample/act/2022/11#s3",
    "sample_consumer_s4": "sample/act/2022/11#s4",
}  # fmt: skip
TITLES = {"marriages": "Marriages Act", "labour": "Labour Act", "liquor": "Liquor Act", "tenancy": "Residential "
          "Tenancies Act, 2024"}  # fmt: skip
TEXTS = {SECTION_IDS[key]: text for key, text in PROVISIONS.items()}


def offer(*keys: str) -> dict[int, Citation]:
    """Citations as the context bundle offers them: [1], [2], … in the order given."""
    offered = {}
    for index, key in enumerate(keys, 1):
        section_id = SECTION_IDS[key]
        number = section_id.rsplit("#s", 1)[1]
        offered[index] = Citation(
            index=index, doc_key=section_id.split("#")[0], title=TITLES[key.split("_")[0]], section_id=section_id,
            provision_id=section_id, section=f"section {number}", chunk_id=f"{section_id}/c0",
            quote=PROVISIONS[key][:200] + "\n…\n" + PROVISIONS[key][-120:],
        )  # fmt: skip
    return offered


def assert_quotes_verbatim(citations: list[Citation]) -> None:
    for citation in citations:
        assert citation.quote and citation.quote in TEXTS[citation.section_id], citation.quote
        assert "…" not in citation.quote


EXTRACTIVE = ExtractiveAnswer(
    "Section 3 of the Marriages Act provides: “No person under the age of eighteen years may contract a marriage” [1].",
    list(offer("marriages_s3").values()),
    False,
)
ABSTENTION = "I could not find this in the documents. I searched for: speed limit."


def test_a_verbatim_quote_with_a_natural_citation_and_no_marker_passes_and_gets_its_citation() -> None:
    # The README question, as the real model answered it: correct, quoted word for word, but no [n] marker.
    answer = ("The minimum age of marriage in Zimbabwe is 18 years. According to section 3 of the Marriages Act, "
              "“No person under the age of eighteen years may contract a marriage or enter into an unregistered "
              "customary law marriage or a civil partnership.”")  # fmt: skip
    gate = gate_model_answer(answer, offer("liquor_s34", "marriages_s3"), TEXTS)
    assert gate.passed, [(s.text, s.verdict, s.missing_facts) for s in gate.sentences]
    assert [c.index for c in gate.citations] == [2]
    assert [s.how for s in gate.claims] == ["located", "reference"]
    assert gate.answer.count("[2]") == 2 and "[1]" not in gate.answer
    assert gate.citations[0].quote.startswith("No person under the age of eighteen years may contract a marriage")
    assert_quotes_verbatim(gate.citations)
    assert gate.summary()["citations_from_references"] == 1 and gate.summary()["quotes_failed"] == 0


def test_a_paraphrased_quote_fails_and_is_removed() -> None:
    answer = ("Child marriages are prohibited [1]. The Act says “No one below eighteen years of age can get married "
              "in Zimbabwe” [1].")  # fmt: skip
    gate = gate_model_answer(answer, offer("marriages_s3"), TEXTS)
    assert not gate.passed
    assert [s.verdict for s in gate.claims] == ["supported", "unverified_quote"]
    assert "below eighteen" not in gate.answer and gate.answer == "Child marriages are prohibited [1]."
    assert gate.summary()["quotes_failed"] == 1


def test_a_wrong_marker_is_reattributed_to_the_provision_that_supports_the_claim() -> None:
    answer = "The marriage officer must send a duplicate register to the Registrar within thirty days [1]."
    gate = gate_model_answer(answer, offer("liquor_s80", "marriages_s36_4"), TEXTS)
    assert gate.passed and gate.claims[0].how == "reattributed"
    assert [c.index for c in gate.citations] == [2] and gate.answer.endswith("thirty days [2].")
    assert_quotes_verbatim(gate.citations)


def test_a_claim_without_markers_is_located_in_the_evidence() -> None:
    answer = ("When a business is sold, the employees' employment is transferred to the new owner.\n\n"
              "I hope this helps.")  # fmt: skip
    gate = gate_model_answer(answer, offer("tenancy_s3", "labour_s16"), TEXTS)
    assert gate.passed and [s.how for s in gate.claims] == ["located"]
    assert gate.answer.startswith("When a business is sold, the employees' employment is transferred to the new "
                                  "owner [2].")  # fmt: skip
    assert gate.answer.endswith("I hope this helps.")  # not a statement about the law: kept, uncited
    assert_quotes_verbatim(gate.citations)


def test_an_invented_numeric_limit_citing_an_unrelated_provision_fails_and_falls_back() -> None:
    # The road-traffic question the corpus cannot answer; the model cited a liquor-licensing provision.
    answer = "In Zimbabwe, the speed limit in urban areas is 60 km/h [1]."
    gate = gate_model_answer(answer, offer("liquor_s34"), TEXTS)
    assert not gate.passed and not gate.usable
    assert gate.claims[0].verdict == "unsupported" and gate.claims[0].missing_facts == ["60 km"]
    assert gate.answer == "" and gate.citations == []
    final = choose_final(gate, ExtractiveAnswer("", [], True), ABSTENTION)
    assert final.source == "abstention" and final.answer == ABSTENTION and final.abstained and final.verified
    assert [code for code, _ in final.warnings] == ["model_answer_unverified"]


def test_an_invented_penalty_next_to_a_true_statement_is_removed_and_the_rest_kept() -> None:
    answer = (
        "No person under the age of eighteen years may contract a marriage [1]. Child marriages are "
        "prohibited [1]. A person who arranges a child marriage faces imprisonment for up to ten years [1]."
    )
    gate = gate_model_answer(answer, offer("marriages_s3"), TEXTS)
    assert not gate.passed and gate.usable
    assert gate.failed[0].missing_facts == ["10 year"]
    final = choose_final(gate, EXTRACTIVE, ABSTENTION)
    assert final.source == "model_trimmed" and final.verified and "ten years" not in final.answer
    assert [code for code, _ in final.warnings] == ["statements_removed"]
    assert_quotes_verbatim(final.citations)


def test_an_uncited_sentence_about_the_law_that_nothing_supports_is_not_shown() -> None:
    answer = ("A landlord cannot ask for a deposit of more than two months' rent [1]. Tenants may also withhold rent "
              "when repairs are not made.")  # fmt: skip
    gate = gate_model_answer(answer, offer("tenancy_s3"), TEXTS)
    assert [s.verdict for s in gate.claims] == ["supported", "uncited"]
    assert "withhold" not in gate.answer and gate.summary()["claims_uncited"] == 1


def test_an_elided_quote_is_two_verbatim_spans() -> None:
    quote = "No person under the age of eighteen years … may contract a marriage"
    assert quote_spans(quote) == ["No person under the age of eighteen years", "may contract a marriage"]
    assert locate_quote(quote, PROVISIONS["marriages_s3"]) is not None
    assert locate_quote("may contract a marriage … No person under the age", PROVISIONS["marriages_s3"]) is None
    answer = f"Section 3 of the Marriages Act states: “{quote}” [1]."
    gate = gate_model_answer(answer, offer("marriages_s3"), TEXTS)
    assert gate.passed and gate.summary()["quotes_checked"] == 1
    assert_quotes_verbatim(gate.citations)


def test_locating_a_span_ignores_spacing_case_and_quote_style_and_returns_the_provision_text() -> None:
    text = "(1) A landlord  shall not\nrequire a deposit that exceeds the rent’s value."
    start, end = locate_span("a landlord shall not require a deposit that exceeds the rent's", text) or (0, 0)
    assert text[start:end] == "A landlord  shall not\nrequire a deposit that exceeds the rent’s"
    assert locate_span("a landlord may require a deposit", text) is None
    assert first_span("(1) first span\n…\n(3) second span") == "(1) first span"


def test_natural_citations_resolve_to_the_offered_provision() -> None:
    offered = list(offer("labour_s16", "marriages_s3", "tenancy_s3").values())
    (reference,) = find_references("as section 3 of the Marriages Act provides")
    assert reference.title == "Marriages Act" and resolve_reference(reference, offered) == [2]
    (reference,) = find_references("Under s 3(1), no person under eighteen may marry.")
    assert reference.number == "3" and reference.subsections == ("1",)
    # Two offered Acts have a section 3: the answer's other words name the Act, or the reference stays unresolved.
    assert resolve_reference(reference, offered, "the Marriages Act") == [2]
    assert resolve_reference(reference, offered) == []
    (reference,) = find_references("section 16(1) says so")
    assert resolve_reference(reference, offered) == [1]
    assert find_references("The Act took effect on 3 May.") == []


SPLITS = [
    ("Under s. 3 no child may marry [1]. See also No. 5 of 2001 [2].\n- A list item\nLast one",
     ["Under s. 3 no child may marry [1].", "See also No. 5 of 2001 [2].", "- A list item", "Last one"]),
    # A cited sentence ends at its marker, whatever the next opens with: a list item copied from a provision.
    ("Every employee shall rest each week [1]. (a) the termination is in terms of a code [2]. As held. [3] (b) no",
     ["Every employee shall rest each week [1].", "(a) the termination is in terms of a code [2].", "As held. [3]",
      "(b) no"]),
    # Brackets that are not a sentence's citation do not end it...
    ("See [1] and [2] for both rules.", ["See [1] and [2] for both rules."]),
    ("Under [Chapter 5:13]. the Act applies [1].", ["Under [Chapter 5:13]. the Act applies [1]."]),
    ("It is so [1].  [1]", ["It is so [1].  [1]"]),
    # ... and a line break still ends whatever it follows.
    ("It provides: “the rule” [1]\n\nSection 13 provides: “the other” [2]\n[amended by Act 7 ]\n(2) On it [3].",
     ["It provides: “the rule” [1]", "Section 13 provides: “the other” [2]", "[amended by Act 7 ]", "(2) On it [3]."]),
    # A quoted passage of several sentences is one statement, in curly or straight marks ...
    ("Section 22 provides: “A member shall retire at seventy. (4) A member shall retire at fifty.” [2] Next one.",
     ["Section 22 provides: “A member shall retire at seventy. (4) A member shall retire at fifty.” [2]", "Next one."]),
    ('It says: "No child may marry. Such a marriage is void." Both hold [1].',
     ['It says: "No child may marry. Such a marriage is void."', "Both hold [1]."]),
    ('It provides: “Each shall declare: "I know of no impediment." Each shall then say: "I take you."” [1] Next.',
     ['It provides: “Each shall declare: "I know of no impediment." Each shall then say: "I take you."” [1]', "Next."]),
    # ... but a mark never closed in its line holds nothing: what follows it is judged a sentence at a time.
    ("It says: “No child may marry. Any parent may consent [1].\nNext line. Last.",
     ["It says: “No child may marry.", "Any parent may consent [1].", "Next line.", "Last."]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "sentences"), SPLITS)
def test_sentences_split_where_a_reader_would_split_them(text: str, sentences: list[str]) -> None:
    assert [s for s, _ in split_sentences(text)] == sentences


def test_a_provisions_rule_and_proviso_copied_word_for_word_are_not_its_opposite() -> None:
    """A paced model's answer copied a subsection and its proviso verbatim and was rejected: read against the proviso
    alone, the rule's "only" looked like a prohibition the proviso does not state."""
    section = (
        "12. Registers of unions\n(1) A registrar shall keep a register of unions. (2) The registrar shall keep two "
        "register books, one for civil unions only and one for religious unions only: Provided that until such time "
        "as the form of the religious union register book is prescribed, the registrar shall clearly distinguish in "
        "his or her register book between the entries relating to civil unions and those relating to religious "
        'unions, by inscribing the words "religious union" in the entries relating to such unions.'
    )
    offered = {1: Citation(index=1, doc_key="u", title="Unions Act", section_id="u#s12", section="section 12",
                           chunk_id="u#s12/c0", quote=section[:40])}  # fmt: skip
    copy = section[section.index("(2)") : -1] + " [1]."
    assert [s.verdict for s in gate_model_answer(copy, offered, {"u#s12": section}).sentences] == ["supported"]
    # Copied from the middle of a sentence, the words may have left its negation behind: still read as opposite.
    rule = "5. Fees\n(1) No landlord may charge a fee for issuing a receipt for a deposit. (2) A tenant may ask."
    assert support("Landlord may charge a fee for issuing a receipt for a deposit.", rule).opposite
    assert not support("No landlord may charge a fee for issuing a receipt for a deposit.", rule).opposite


def test_the_final_answer_is_never_worse_than_the_extractive_one() -> None:
    good = gate_model_answer("Child marriages are prohibited [1].", offer("marriages_s3"), TEXTS)
    assert choose_final(good, EXTRACTIVE, ABSTENTION).source == "model"
    assert choose_final(None, EXTRACTIVE, ABSTENTION).answer == EXTRACTIVE.answer
    bad = gate_model_answer("Marriage requires the consent of the Minister of Home Affairs [1].", offer("marriages_s3"),
                            TEXTS)  # fmt: skip
    final = choose_final(bad, EXTRACTIVE, ABSTENTION)
    assert final.source == "extractive" and final.answer == EXTRACTIVE.answer and final.verified
    assert final.citations == EXTRACTIVE.citations and [c for c, _ in final.warnings] == ["model_answer_unverified"]
    # Never blank: an empty extractive answer becomes the abstention.
    assert choose_final(bad, ExtractiveAnswer("", [], False), ABSTENTION).answer == ABSTENTION
    # A model that abstains while the extractive path found the provision: the provision is shown, with a warning.
    abstained = gate_model_answer("I could not find this in the documents.", offer("marriages_s3"), TEXTS)
    final = choose_final(abstained, EXTRACTIVE, ABSTENTION)
    assert final.source == "extractive" and [c for c, _ in final.warnings] == ["model_abstained"]
    assert choose_final(abstained, ExtractiveAnswer(ABSTENTION, [], True), ABSTENTION).source == "abstention"


def test_the_corrective_search_is_the_question_and_the_provision_never_the_rejected_words() -> None:
    offered = {i: c.model_copy(update={"heading": "Hours of sale"}) for i, c in offer("liquor_s34").items()}
    bad = gate_model_answer("Under section 3 of the Liquor Act, bars must close at 11 pm; visit http://evil.example "
                            "[1].", offered, TEXTS)  # fmt: skip
    assert bad.failed
    query = corrective_query(bad, "when do bars close?")
    assert query == "when do bars close? Hours of sale"  # the question, then the cited provision's heading
    assert "evil" not in query and "11 pm" not in query


def test_the_paragraph_gate_fails_a_marker_on_a_provision_that_lacks_the_sentences_facts() -> None:
    # Today's verify node: the liquor-licence example passed because the paragraph carried a marker.
    offered = offer("liquor_s34")
    result = verify_answer("In Zimbabwe, the speed limit in urban areas is 60 km/h [1].", offered, TEXTS)
    assert not result.passed and result.summary()["unsupported_facts"] == 1
    fine = verify_answer("Such premises must lie within fifteen kilometres [1].", offered, TEXTS)
    assert fine.passed


def test_an_act_named_after_a_body_is_the_instrument_not_a_fact_the_provision_must_state() -> None:
    # Seen in the real-model run: the extractive answer's own frame ("Section 28 of the Police Act provides: …")
    # failed its verification because "Police" read as a named body that section 28's text never mentions.
    section = ("28. Co-operation of employers\nSubject to any enactment or agreement to the contrary, an employer "
               "shall not be required to pay any person in his employ any wages or salary for the time when he is "
               "absent from work.")  # fmt: skip
    offered = {1: Citation(index=1, doc_key="zw/act/1995/2", title="Police Act", section_id="zw/act/1995/2#s28",
                           section="section 28", chunk_id="zw/act/1995/2#s28/c0", quote=section[30:120])}  # fmt: skip
    framed = ("Section 28 of the Police Act (Co-operation of employers) provides: “Subject to any enactment or "
              "agreement to the contrary, an employer shall not be required to pay any person in his employ any "
              "wages or salary” [1]")  # fmt: skip
    assert verify_answer(framed, offered, {"zw/act/1995/2#s28": section}).passed
    assert bodies("the Reserve Bank of Zimbabwe Act and the Magistrates Court (Amendment) Act") == set()
    # Seen on the full 385 Acts: the extractive frames of other Acts failed the same way.
    assert bodies("Section 10A of the Bank Use Promotion Act and the State Service (Pensions) Act") == set()
    amendment = Citation(
        index=1,
        doc_key="zw/act/2013/1",
        title="Constitution of Zimbabwe Amendment (No. 20) Act, 2013",
        section_id="zw/act/2013/1#s65",
        section="section 65",
        heading="Labour rights",
        chunk_id="zw/act/2013/1#s65/c0",
        quote="Women employees have a right to fully paid maternity",
    )
    right = "Women employees have a right to fully paid maternity leave for a period of at least three months."
    framed_65 = (f"Section 65 of the Constitution of Zimbabwe Amendment (No. 20) Act, 2013 (Labour rights) provides: "
                 f"“{right}” [1]")  # fmt: skip
    assert verify_answer(framed_65, {1: amendment}, {"zw/act/2013/1#s65": right}).passed
    # The title's numbers are the citation's, not the law's: a period the provision does not state still fails.
    wrong = verify_answer("Women employees get 20 months of maternity leave [1].", {1: amendment},
                          {"zw/act/2013/1#s65": right})  # fmt: skip
    assert not wrong.passed
    # A body the sentence says acts is still a fact the provision must state.
    police = verify_answer("The Police must pay the employee's wages [1].", offered, {"zw/act/1995/2#s28": section})
    assert not police.passed and police.summary()["unsupported_facts"] == 1


def test_a_sentence_naming_its_provision_is_supported_by_that_provision_or_not_at_all() -> None:
    # The real model, on gw-dev-001 (dismissed without a hearing): "Yes, the employer is allowed to fire you … under
    # Section 12B of the Labour Act." Section 12B was not among its sources; the gate found the sentence's words in
    # another provision and attached it, so a wrong statement of the law went out verified.
    claim = ("Under section 12B of the Labour Act, the employment of persons employed in an undertaking that is "
             "transferred is deemed to be transferred to the transferee.")  # fmt: skip
    gate = gate_model_answer(claim, offer("labour_s16", "marriages_s3"), TEXTS)
    (sentence,) = gate.claims
    assert sentence.verdict == "unsupported" and not sentence.cited and not gate.passed
    # Without the reference, the same words are located in section 16, which states them.
    unnamed = gate_model_answer(claim.replace("Under section 12B of the Labour Act, the", "The"),
                                offer("labour_s16", "marriages_s3"), TEXTS)  # fmt: skip
    assert unnamed.passed and [c.section_id for c in unnamed.citations] == ["zw/act/1985/16#s16"]
    # Named rightly, it is supported by the provision it names, even under another marker.
    named = gate_model_answer(claim.replace("12B", "16") + " [1]", offer("marriages_s3", "labour_s16"), TEXTS)
    assert named.passed and named.claims[0].how == "reference" and named.claims[0].cited == [2]


def test_a_numbered_list_item_is_one_sentence_and_its_number_no_claim() -> None:
    # The real model's lists ("1. **Formal Declaration**: …") came back from the gate as "1 [1]. **Formal …**": the
    # bare "1." was split off as a sentence, read as a claim stating the number 1, and cited.
    answer = ("1. **Transfer**: the employment of the persons employed is deemed to be transferred to the "
              "transferee of the undertaking.\n"
              "2. **Terms**: the terms and conditions are not less favourable than those which applied immediately "
              "before the transfer.")  # fmt: skip
    gate = gate_model_answer(answer, offer("marriages_s3", "labour_s16"), TEXTS)
    assert [s.text[:3] for s in gate.claims] == ["1. ", "2. "] and gate.passed
    assert "1 [" not in gate.answer and "2 [" not in gate.answer
    assert "transferee of the undertaking [2].\n2. **Terms**" in gate.answer


def test_a_sentence_applying_a_provision_to_a_topic_it_never_mentions_is_unsupported() -> None:
    # gw-dev-062 with the real model over the 385 Acts: asked "What interest is charged on government student loans?",
    # it copied the rate of a section on loans to local authorities, every word but "student", and the gate passed it.
    answer = "A university shall not require a deposit from a student that exceeds the rent payable for two months [1]."
    without = gate_model_answer(answer, offer("tenancy_s3"), TEXTS)
    assert without.passed  # the words and the facts are all the provision's: only the topic tells them apart
    topic = {"university": frozenset[str](), "student": frozenset[str]()}
    gate = gate_model_answer(answer, offer("tenancy_s3"), TEXTS, topic)
    assert not gate.passed and gate.claims[0].verdict == "unsupported"
    assert gate.claims[0].off_topic == ["university", "student"] and gate.summary()["claims_off_topic"] == 1
    assert gate.answer == "" and gate.citations == []
    # The same sentence about what the provision is about passes with the same topic check in place.
    landlord = gate_model_answer("A landlord shall not require a deposit over two months' rent [1].",
                                 offer("tenancy_s3"), TEXTS, {"landlord": frozenset[str]()})  # fmt: skip
    assert landlord.passed and landlord.claims[0].off_topic == []


# --- What an adversarial review of the gate found (crafted model answers on the sample corpus) ------------------------

DEPOSITS = ("3. Deposits\n(1) A landlord shall not require a deposit that exceeds the rent payable for two months.\n"
            "(2) A landlord shall keep every deposit in an interest-bearing account with a registered bank.\n"
            "(3) Within fourteen days after the lease ends, the landlord shall refund the deposit with the interest "
            "earned.\n(4) A landlord who contravenes subsection (1) or (3) shall be guilty of an offence and liable to "
            "a fine not exceeding level 5.")  # fmt: skip
RENT = "4. Rent increases\n(2) A landlord shall give a tenant written notice of at least three months before any " \
       "increase in rent."  # fmt: skip
REGISTRATION = "8. Registration\n(1) A marriage officer who solemnises a marriage shall register it within seven days."


def sample_offer(*sections: tuple[str, str, str]) -> tuple[dict[int, Citation], dict[str, str]]:
    """Offered citations [1], [2], … for (title, section number, text), and the provision texts by section id."""
    offered, texts = {}, {}
    for index, (title, number, text) in enumerate(sections, 1):
        section_id = f"{title.lower().replace(' ', '-')}#s{number}"
        offered[index] = Citation(
            index=index, doc_key=section_id.split("#")[0], title=title, section_id=section_id,
            section=f"section {number}", chunk_id=f"{section_id}/c0", quote=text[:80],
        )  # fmt: skip
        texts[section_id] = text
    return offered, texts


TENANCIES = "Residential Tenancies Act, 2024"


def test_a_claim_its_cited_provision_contradicts_is_not_moved_to_one_that_shares_its_figure() -> None:
    offered, texts = sample_offer((TENANCIES, "3", DEPOSITS), (TENANCIES, "4", RENT))
    gate = gate_model_answer("A landlord may require a deposit of up to three months rent [1].", offered, texts)
    assert gate.claims[0].verdict == "unsupported" and gate.claims[0].missing_facts == ["3 month"] and not gate.answer
    # A marker slip is still mended where the sentence's verbatim quote shows where its words come from.
    quoted = "The Act says “A landlord shall give a tenant written notice of at least three months” [1]."
    slip = gate_model_answer(quoted, offered, texts)
    assert slip.passed and slip.claims[0].how == "reattributed" and [c.index for c in slip.citations] == [2]


def test_the_words_beside_a_true_quote_must_be_supported_too() -> None:
    offered, texts = sample_offer((TENANCIES, "3", DEPOSITS))
    beside = ("Pets are banned in all rented flats, smoking indoors is a crime, and tenants must repaint their rooms, "
              "as “A landlord shall keep every deposit” [1].")  # fmt: skip
    assert gate_model_answer(beside, offered, texts).claims[0].verdict == "unsupported"
    framed = "The Act provides that “A landlord shall keep every deposit in an interest-bearing account” [1]."
    assert gate_model_answer(framed, offered, texts).passed


def test_an_elision_may_not_leave_out_a_negation_a_condition_or_a_number() -> None:
    assert locate_quote("A landlord shall … require a deposit that exceeds the rent payable", DEPOSITS) is None
    assert locate_quote("the landlord shall refund the deposit … earned", DEPOSITS) is not None  # "with the interest"
    assert locate_quote("Within … days after the lease ends", DEPOSITS) is None  # "fourteen"
    offered, texts = sample_offer((TENANCIES, "3", DEPOSITS))
    gate = gate_model_answer("The Act says “A landlord shall … require a deposit that exceeds the rent payable for "
                             "two months” [1].", offered, texts)  # fmt: skip
    assert gate.claims[0].verdict == "unverified_quote"


def test_a_sign_off_does_not_excuse_the_claim_beside_it_and_a_bare_verdict_is_not_shown_as_checked() -> None:
    offered, texts = sample_offer((TENANCIES, "3", DEPOSITS))
    answer = (
        "**Yes, legally.** This is not legal advice, but a landlord may spend every deposit whenever the rent "
        "is late. A landlord shall keep every deposit in an interest-bearing account [1]. I hope this helps."
    )
    gate = gate_model_answer(answer, offered, texts)
    verdicts = [(s.text[:20], s.verdict) for s in gate.sentences]
    assert verdicts == [("**Yes, legally.**", "uncited"), ("This is not legal ad", "uncited"),
                        ("A landlord shall kee", "supported"), ("I hope this helps.", "not_a_claim")]  # fmt: skip
    assert gate.answer.startswith("A landlord shall keep every deposit") and "Yes" not in gate.answer


def test_the_kind_of_penalty_and_a_body_named_in_lower_case_are_facts() -> None:
    fine_only = DEPOSITS.split("\n")[-1]
    assert missing_facts("A landlord who keeps the deposit is liable to imprisonment.", fine_only) == ["imprisonment"]
    assert missing_facts("A landlord who keeps the deposit is liable to a fine.", fine_only) == []
    labour = "(3) An employee who alleges unfair dismissal may refer the dispute to a labour officer."
    assert missing_facts("The employee may refer the dispute to the labour court.", labour) == ["court"]
    assert missing_facts("The employee may take the dispute to a labour officer.", labour) == []


def test_an_act_named_in_words_pins_the_sentence_to_that_act_and_a_mentioned_section_does_not_excuse_it() -> None:
    consumer = "5. Prices\n(2) A consumer is not obliged to pay a price higher than the price displayed."
    offered, texts = sample_offer((TENANCIES, "3", DEPOSITS), ("Consumer Protection Act, 2022", "5", consumer))
    wrong = "The Consumer Protection Act provides that a landlord shall not require a deposit that exceeds the rent " \
            "payable for two months [1]."  # fmt: skip
    assert gate_model_answer(wrong, offered, texts).claims[0].verdict == "unsupported"
    right = wrong.replace("Consumer Protection", "Residential Tenancies")
    assert gate_model_answer(right, offered, texts).passed
    # Section 2's "designated under section 6" does not make every "under section 6" a quotation of section 2.
    interpretation = '2. Interpretation\n"officer" means a marriage officer designated under section 6.'
    marriage = "Marriage Act, 2022"
    offered, texts = sample_offer((marriage, "8", REGISTRATION), (marriage, "2", interpretation))
    pinned = "Under section 6, a marriage officer who solemnises a marriage shall register it within seven days [1]."
    assert not gate_model_answer(pinned, offered, texts).passed


def test_a_sentence_that_points_to_a_section_for_a_subject_needs_the_subject_where_the_section_is_named() -> None:
    """A real model wrote "The penalty for unlawful entry into premises is specified in section 159", and the gate
    found it in the Criminal Law Code's schedule, whose table, flattened into one run of text, lists "Unlawful entry
    into premises Section 131" and, many rows away, "Permitting premises to be used for … drugs Section 159"."""
    rows = [("Assault", 89), ("Bigamy", 104), ("Bribery", 170), ("Criminal trespass", 132), ("Extortion", 134),
            ("Forgery", 137), ("Fraud", 136), ("Murder", 47), ("Perjury", 183), ("Permitting premises to be used for "
            "the unlawful dealing in or use of dangerous drugs", 159), ("Public violence", 36), ("Robbery", 126),
            ("Stock theft", 114), ("Theft", 113), ("Treason", 20), ("Unauthorised borrowing or use of property", 116),
            ("Undermining police authority", 177), ("Unlawful dealing in dangerous drugs", 156),
            ("Unlawful possession or use of dangerous drugs", 157), ("Unlawful termination of pregnancy", 60),
            ("Violating corpses", 111), ("Violating graves", 110), ("Intimidation", 45), ("Infanticide", 48),
            ("Kidnapping or unlawful detention", 93), ("Unlawful entry into premises", 131)]  # fmt: skip
    schedule = (
        "284. Savings\n(1) The repeal shall not affect any penalty incurred before the fixed date. Second Schedule "
        "(section 2(2)) Correspondence of references to crimes to provisions of code defining such crimes Crime "
        "Provision in Code defining it " + " ".join(f"{crime} Section {number}" for crime, number in rows)
    )
    drugs = (
        "159. Permitting premises to be used for the unlawful dealing in or use of dangerous drugs\nAny person who, "
        "being the occupier of any premises, permits those premises to be used for the unlawful sale of a dangerous "
        "drug shall be guilty of permitting premises to be used for the unlawful dealing in or use of dangerous drugs "
        "and liable to a fine not exceeding level fourteen or imprisonment for a period not exceeding ten years."
    )
    code = "Criminal Law Code"
    offered, texts = sample_offer((code, "284", schedule), (code, "159", drugs))
    wrong = "The penalty for unlawful entry into premises is specified in section 159 [1]."
    assert gate_model_answer(wrong, offered, texts).claims[0].verdict == "unsupported"
    # Nor does section 159 itself, which shares half its words ("unlawful", "premises", the penalty's "fine").
    assert gate_model_answer(wrong.replace("[1]", "[2]"), offered, texts).claims[0].verdict == "unsupported"
    right = (
        "The penalty for permitting premises to be used for dealing in dangerous drugs is set out in section 159 [2]"
    )
    assert gate_model_answer(right + ".", offered, texts).passed
    right = "Unlawful entry into premises is the crime defined in section 131 [1]."
    assert gate_model_answer(right, offered, texts).passed
    # In prose, the sentence that mentions the section is where the provision speaks of it.
    contravention = (
        "12. Offences\n(1) No person shall sell liquor without a licence. (2) A person who contravenes subsection (1) "
        "shall be liable to the penalty specified in section 159."
    )
    offered, texts = sample_offer(("Liquor Act", "12", contravention))
    assert gate_model_answer("A person who sells liquor without a licence is liable to the penalty specified in "
                             "section 159 [1].", offered, texts).passed  # fmt: skip


def test_a_number_in_brackets_after_a_reference_or_as_a_multiple_is_a_quantity() -> None:
    assert missing_facts("Within (30) days after the lease ends the landlord shall refund the deposit.", DEPOSITS)
    assert missing_facts("Under section 3(3), 30 days after the lease ends the deposit is refunded.", DEPOSITS)
    assert not missing_facts("Under sections 3, 4 and 5 the deposit is refunded.", DEPOSITS)  # references only
    overtime = "(2) Overtime shall be paid at not less than one and a half times the ordinary rate."
    assert missing_facts("Overtime is paid at double the ordinary rate.", overtime) == ["2 times"]
    # A period with an article is one ("within a month" against fourteen days); "once a month" is not a period.
    assert missing_facts("Within a month after the lease ends the landlord shall refund the deposit.", DEPOSITS) == [
        "1 month"]  # fmt: skip
    assert missing_facts("The rent is paid once a month.", "The rent shall be paid monthly.") == []


def test_a_word_that_mixes_scripts_is_read_as_a_reader_reads_it() -> None:
    offered, texts = sample_offer(("Marriage Act, 2022", "8", REGISTRATION))
    flipped = "A marriage officer who solemnises a marriage shall n\u043et register it [1]."  # a Cyrillic о
    gate = gate_model_answer(flipped, offered, texts)
    assert gate.claims[0].verdict == "unsupported" and gate.claims[0].opposite


def test_a_term_given_another_terms_definition_is_unsupported() -> None:
    interpretation = (
        '2. Interpretation\nIn this Act—\n"employee" means a person who works for another person for remuneration '
        'under a contract of employment;\n"employer" means a person who employs an employee;'
    )
    offered, texts = sample_offer(("Employment Standards Act, 2023", "2", interpretation))
    swapped = (
        "'Employer' means a person who works for another person for remuneration under a contract of employment [1]."
    )
    gate = gate_model_answer(swapped, offered, texts)
    assert gate.claims[0].verdict == "unsupported"
    assert "another term" in " ".join(gate.claims[0].missing_facts)
    assert gate_model_answer(swapped.replace("'Employer'", "'Employee'"), offered, texts).passed
    # A term the section does not define, given one of its definitions word for word, is the same slip.
    assert not gate_model_answer(swapped.replace("'Employer'", "A contractor"), offered, texts).passed
    assert gate_model_answer(
        "Under section 2, an employer means a person who employs an employee [1].", offered, texts
    ).passed
    # A pronoun is not a term: "This means …" restates what came before it.
    this = "This means a person who works for another person for remuneration under a contract of employment [1]."
    assert gate_model_answer(this, offered, texts).passed


def test_a_figure_is_read_where_the_provision_says_it_of_the_same_subject_or_limb() -> None:
    notice = (
        "5. Notice to vacate\n(1) A landlord who wishes to terminate a lease of indefinite duration shall give the "
        "tenant written notice of not less than three months.\n(2) A tenant who wishes to terminate a lease of "
        "indefinite duration shall give the landlord written notice of not less than one month."
    )
    tenant = "A tenant who wishes to terminate a lease of indefinite duration shall give the landlord written notice "
    assert missing_facts(tenant + "of not less than one month.", notice) == []
    assert not support(tenant + "of not less than one month.", notice).missing
    swapped = support(tenant + "of not less than three months.", notice)  # the landlord's period
    assert swapped.missing == ("3 month (said of something else)",)
    # A list's limbs: the figure of one limb is not the figure of an item in another.
    periods = (
        "15. Periods The period of prescription of a debt shall be— (a) thirty years, in the case of— (i) a debt "
        "secured by mortgage bond; (ii) a judgment debt; (b) fifteen years, in the case of a debt owed to the State "
        "and arising out of a loan of money by the State; (c) six years in the case of any other debt."
    )
    assert support("The period of prescription of a judgment debt is fifteen years.", periods).missing
    assert not support("The period of prescription of a judgment debt is thirty years.", periods).missing
    assert not support("A debt owed to the State for a loan of money prescribes after fifteen years.", periods).missing


def test_a_quote_copied_with_its_sections_number_and_heading_passes() -> None:
    entry = (
        "131. Unlawful entry into premises (1) Any person who, without permission from the lawful occupier of the "
        "premises, enters the premises shall be guilty of unlawful entry into premises and liable to a fine not "
        "exceeding level ten or imprisonment for a period not exceeding ten years, or both."
    )
    offered, texts = sample_offer(("Criminal Law (Codification and Reform) Act", "131", entry))
    copied = entry.removesuffix(".") + " [1]."
    assert gate_model_answer(copied, offered, texts).passed
    # Its number where a sentence starts after another's end is the heading's too.
    after = "Entering premises without the occupier's permission is unlawful entry [1]. " + copied
    assert [c.verdict for c in gate_model_answer(after, offered, texts).claims] == ["supported", "supported"]
    # The section's number is not a figure the provision states: a claim cannot borrow it.
    assert missing_facts("Unlawful entry is crime number 131 on the list.", entry) == ["131"]
    assert missing_facts("Unlawful entry is punished by imprisonment for 131 years.", entry) == ["131 year"]


def test_a_sentence_that_names_its_section_by_a_heading_that_forbids_is_read_without_it() -> None:
    pledging = (
        "11. Pledging of girls and women in marriage prohibited (1) Any agreement in which a person, whether for "
        "consideration or otherwise, pledges or promises a girl or woman in marriage to a man shall be of no effect."
    )
    offered, texts = sample_offer(("Customary Marriages Act", "11", pledging))
    offered[1] = offered[1].model_copy(update={"heading": "Pledging of girls and women in marriage prohibited"})
    named = (
        "Section 11 of the Customary Marriages Act (Pledging of girls and women in marriage prohibited) provides "
        "that any agreement in which a person pledges a girl in marriage to a man shall be of no effect [1]."
    )
    assert gate_model_answer(named, offered, texts).passed
    assert gate_model_answer(pledging.removesuffix(".") + " [1].", offered, texts).passed  # copied with its heading
    # Its own words still count: the heading names the section, it does not make the opposite claim true.
    valid = named.replace("shall be of no effect", "shall be valid")
    assert gate_model_answer(valid, offered, texts).claims[0].opposite


def test_a_citation_is_labelled_with_the_subsection_its_quote_is_in() -> None:
    answer = "The deposit must be refunded within fourteen days after the end of the lease [1]."
    gate = gate_model_answer(answer, offer("tenancy_s3"), TEXTS)
    assert gate.passed and "fourteen days" in gate.citations[0].quote
    # The quote is in subsection (2), although the provision (and the chunk offered) starts at (1).
    assert gate.citations[0].section == "section 3(2)"
    assert gate.citations[0].provision_id == "sample/act/2024/3#s3(2)"
    first = gate_model_answer("A landlord shall not require a deposit that exceeds two months' rent [1].",
                              offer("tenancy_s3"), TEXTS)  # fmt: skip
    assert first.citations[0].section == "section 3(1)"


def test_an_answer_that_only_says_where_the_answer_is_gives_way_to_the_quotes() -> None:
    offered = offer("tenancy_s3")
    pointer = gate_model_answer("This is stated in section 3 of the Residential Tenancies Act [1].", offered, TEXTS)
    extractive = ExtractiveAnswer("Section 3 provides: “A landlord shall not require …” [1]", [offered[1]], False)
    final = choose_final(pointer, extractive, "nothing found")
    assert final.source == "extractive" and final.answer == extractive.answer
    # With a sentence that states the rule, the pointer stays beside it.
    both = gate_model_answer("A landlord shall not require a deposit that exceeds two months' rent [1]. This is "
                             "stated in section 3 of the Residential Tenancies Act [1].", offered, TEXTS)  # fmt: skip
    assert choose_final(both, extractive, "nothing found").source in ("model", "model_trimmed")


def test_a_marker_inside_the_closing_quotation_mark_cites_the_quote_and_is_not_part_of_it() -> None:
    section = (
        "3. Minimum age of marriage (1) No person under the age of eighteen years may contract a marriage or enter "
        "into an unregistered customary law marriage or a civil partnership ."
    )
    cited = Citation(index=1, doc_key="d", title="Marriages Act", section_id="d#s3", section="section 3",
                     chunk_id="d#s3/c0", quote=section)  # fmt: skip
    for answer in (
        "Section 3 provides: “No person under the age of eighteen years may contract a marriage or enter into an "
        "unregistered customary law marriage or a civil partnership [1].”",
        "Section 3 provides: “No person under the age of eighteen years may contract a marriage [1]”.",
    ):
        gate = gate_model_answer(answer, {1: cited}, {"d#s3": section})
        assert gate.passed and not gate.claims[0].quotes_failed, answer
    # A quote that is not the provision's words still fails, marker inside or not.
    invented = "Section 3 provides: “Any person over sixteen years may contract a marriage [1].”"
    assert not gate_model_answer(invented, {1: cited}, {"d#s3": section}).passed


INSURANCE = "Insurance Act"
POLICY = (
    "In this Act— “policy” means a written insurance contract, whatever the form in which the rights and obligations "
    "of the parties to the contract are expressed or created, and includes a sinking fund policy, but does not include "
    "an insurance contract in which a person assumes the obligations of an insurer in a class of insurance business "
    "declared to be exempt from this Act."
)
INFORMATION = (
    "“information” includes but is not limited to any original or copy of documentary material irrespective of its "
    "physical characteristics, such as records, correspondence, memorandum, data, map or photograph, and any other "
    "tangible or intangible material, regardless of the form or medium in which it is held, in the possession or "
    "under the control of the entity to which a request is made under this Act."
)


def test_a_verbatim_quote_cannot_say_the_opposite_of_the_provision_it_comes_from() -> None:
    # The quoted words are the provision's own, checked verbatim: read one clause at a time, a quote that runs over a
    # rule and its exception ("includes …, but does not include …", "regardless of …") can seem to say the opposite of
    # either clause. Only the words around the quotes can turn its meaning round.
    offered, texts = sample_offer((INSURANCE, "3", POLICY), ("Freedom of Information Act", "2", INFORMATION))
    policy = POLICY.split("“policy” ")[1].rstrip(".")
    defined = f"Section 3 of the Insurance Act defines “policy”: “{policy}” [1]."
    assert gate_model_answer(defined, offered, texts).passed
    information = INFORMATION.split("“information” ")[1].rstrip(".")
    framed = f"Section 2 of the Freedom of Information Act, 2020 defines “information”: “{information}” [2]."
    assert gate_model_answer(framed, offered, texts).passed
    # The words around a true quote still count: denying what the provision says is the opposite of it.
    denied = f"Section 3 of the Insurance Act does not provide that “{policy}” [1]."
    assert gate_model_answer(denied, offered, texts).claims[0].verdict != "supported"


AMENDMENT = "Constitution of Ruritania Amendment (No. 20) Act, 2013"
DEFINITIONS = (
    "332. Definitions\nIn this Constitution— “Act of Parliament” means an enactment passed by Parliament and signed "
    "by the President; “appoint” includes re-appoint or appoint to act; “Cabinet” means the body of Ministers chaired "
    "by the President; “disciplined force” means the police, the prison service or the defence forces; “public "
    "office” means a paid office in the civil service; “Ruritania” means the Republic of Ruritania; “State” includes "
    "the Government and every provincial council; “writing” includes printing, photography and typewriting."
)


def test_the_words_that_only_name_a_quoted_provision_are_no_claim_beside_its_quote() -> None:
    # A title's own number ("(No. 20)") is not a figure the provision must state, and "No." there denies nothing.
    offered, texts = sample_offer((AMENDMENT, "332", DEFINITIONS))
    defined = f"Section 332(1) of the {AMENDMENT} defines “Ruritania”: “means the Republic of Ruritania” [1]."
    assert gate_model_answer(defined, offered, texts).passed
    # Words beside the quote that say more than its name still have to be supported.
    beside = f"Under the {AMENDMENT} every citizen may vote at eighteen, as “means the Republic of Ruritania” [1]."
    assert gate_model_answer(beside, offered, texts).claims[0].verdict != "supported"
    denied = f"Section 332 of the {AMENDMENT} does not say that “means the Republic of Ruritania” [1]."
    assert gate_model_answer(denied, offered, texts).claims[0].verdict != "supported"


MAINTENANCE = (
    "2. Interpretation\n(1) In this Act— “applicant” means a person who makes an application; “application” means an "
    "application in terms of section three; “dependant” means a spouse or minor child of the deceased; “estate” means "
    "the property of a deceased person left after the payment of debts; “Master” means the Master of the High Court."
)


def test_a_provision_numbered_in_words_is_a_reference_not_a_figure() -> None:
    offered, texts = sample_offer(("Family Maintenance Act", "2", MAINTENANCE))
    defined = (
        "Section 2(1) of the Family Maintenance Act defines “application”: “means an application in terms of section "
        "three” [1]."
    )
    assert gate_model_answer(defined, offered, texts).passed
    assert facts("an application in terms of section three or subsection two").empty
    # A figure beside it is still a figure the provision must state.
    figure = "An application in terms of section three must be made within three months of the death [1]."
    assert "3 month" in gate_model_answer(figure, offered, texts).claims[0].missing_facts


def test_a_sentence_about_what_its_sources_leave_out_is_never_supported() -> None:
    # Words that are there cannot show an absence; here the provision states exactly what the sentence says it lacks.
    package = (
        "12C. Retrenchment\n(2) Unless better terms are agreed, the employer shall pay the employees a minimum "
        "retrenchment package of not less than one month's salary or wages for every two years of service."
    )
    offered, texts = sample_offer(("Labour Act", "12C", package))
    for absent in (
        "The minimum retrenchment package under the Labour Act is not explicitly stated in the given sources [1].",
        "The Labour Act does not specify the minimum retrenchment package [1].",
        "The Labour Act, section 12C does not provide a specific retrenchment package for employees [1].",
        "The Act makes no provision for a minimum retrenchment package [1].",
        "A minimum retrenchment package is not provided for in the Labour Act [1].",
        # "it", joined to a sentence whose subject is the Act, is the Act.
        "The Act protects employees who are retrenched, but it does not address the minimum retrenchment package [1].",
    ):
        check = gate_model_answer(absent, offered, texts).claims[0]
        assert check.verdict == "unsupported" and check.missing_facts[0].startswith("what the sources do not say")
    # A negation about the law's subject matter is a claim like any other, judged against the provision.
    terms = (
        "Unless better terms are agreed, the employer must pay one month's wages for every two years of service [1]."
    )
    assert gate_model_answer(terms, offered, texts).passed
    ruled = "Where the agreement does not specify better terms, the minimum retrenchment package applies [1]."
    # "does not provide" of a party or a document is the law's subject matter, judged as any claim.
    for subject_matter in (
        "Where the agreement does not provide better terms, the minimum retrenchment package applies [1].",
        "Section 12C is clear: if the agreement does not provide better terms, the minimum package applies [1].",
    ):
        missing = gate_model_answer(subject_matter, offered, texts).claims[0].missing_facts
        assert not any("sources do not say" in m for m in missing), subject_matter
    # An "it" in a sentence about something else (here the package) is a claim about the law, judged as any other.
    package_it = "The package is paid on retrenchment and it is not less than one month's wages for two years [1]."
    missing = gate_model_answer(package_it, offered, texts).claims[0].missing_facts
    assert not any("sources do not say" in m for m in missing)
    assert not any("sources do not say" in m for m in gate_model_answer(ruled, offered, texts).claims[0].missing_facts)


def test_a_sentence_that_names_a_subsection_is_judged_against_that_subsection_only() -> None:
    interest = (
        "8. Maximum rate of interest (1) No lender shall stipulate for, demand or receive interest at a rate greater "
        "than the prescribed rate of interest. (2) Any lender who contravenes subsection (1) shall be guilty of an "
        "offence and liable to a fine not exceeding level six."
    )
    offered, texts = sample_offer(("Moneylending Act", "8", interest))
    prohibition = "lenders may not demand or receive interest at a rate greater than the prescribed rate [1]."
    # Named as the subsection that says it, or as the whole section, it is supported.
    for named in ("Section 8(1) provides that ", "Section 8 provides that "):
        assert gate_model_answer(named + prohibition, offered, texts).passed
    # Named as the penalty subsection, it says that subsection provides what it does not.
    assert not gate_model_answer("Section 8(2) provides that " + prohibition, offered, texts).passed
    # A subsection the provision does not have is a pinpoint no reader can follow.
    assert not gate_model_answer("Section 8(5) provides that " + prohibition, offered, texts).passed
    # A provision written without numbered subsections is judged whole ("(1)" may only number its one paragraph).
    offered, texts = sample_offer(("Moneylending Act", "8", interest.replace("(1) ", "").replace("(2) ", "")))
    assert gate_model_answer("Section 8(1) provides that " + prohibition, offered, texts).passed


def test_the_gate_removes_a_sentence_that_drops_the_condition_of_its_cited_rule() -> None:
    # Section 11(1) of the Births and Deaths Registration Act: the others' duty arises only on the death or inability
    # of both parents.
    text = (
        "(1) Subject to section twelve, it shall be the duty of the father or the mother of a child and, in the case "
        "of the death or inability of the father and the mother, the duty of— (a) the occupier of the house in which "
        "the birth or still-birth occurred, where he had knowledge of such birth or still-birth ; or (b) the person in "
        "charge of any hospital or other institution in which the birth or still-birth occurred; to give notice of the "
        "birth or still-birth in the prescribed form to the registrar of the district in which the birth or "
        "still-birth , as the case may be, occurred."
    )
    offered = {1: Citation(index=1, doc_key="zw/act/1986/11", title="Births and Deaths Registration Act",
                           section_id="zw/act/1986/11#s11", section="section 11", chunk_id="zw/act/1986/11#s11/c0",
                           quote=text[:120])}  # fmt: skip
    provisions = {"zw/act/1986/11#s11": text}
    dropped = gate_model_answer("The person in charge of the hospital where a child is born must give notice of the "
                                "birth [1].", offered, provisions)  # fmt: skip
    assert not dropped.passed and dropped.summary()["claims_dropped_condition"] == 1
    assert dropped.claims[0].dropped == ["death", "inability"]
    kept = gate_model_answer("If both parents have died or cannot give notice, the person in charge of the hospital "
                             "where the child was born must give notice [1].", offered, provisions)  # fmt: skip
    assert kept.passed and kept.summary()["claims_dropped_condition"] == 0


def test_a_verdict_on_the_askers_situation_pointed_at_is_no_claim_a_provision_can_show() -> None:
    # A provision that speaks of a crime, but not of what the asker did: a verdict that only points at the asker's
    # situation ("this action") names nothing it could state, either way round.
    incest = (
        "75. Sexual intercourse within a prohibited degree of relationship (1) In this section— “first cousin”, in "
        "relation to any person, means the child or any descendant of the child of the uncle or aunt of such person; "
        "(2) Any person who has sexual intercourse with a relative within a prohibited degree shall be guilty of a "
        "crime under the law."
    )
    offered, texts = sample_offer(("Criminal Law Code", "75", incest))
    for verdict in (
        "Therefore, this action is not a crime under the law [1].",
        "This is a crime under the law [1].",
        "That would be illegal [1].",
    ):
        check = gate_model_answer(verdict, offered, texts).sentences[0]
        assert check.verdict == "unsupported", (verdict, check.verdict)
    # The rule itself, stated, is judged against the provision as any claim is.
    rule = "Sexual intercourse with a relative within a prohibited degree is a crime [1]."
    assert gate_model_answer(rule, offered, texts).passed


def test_a_sentence_pointing_back_at_one_left_out_is_left_out_too() -> None:
    register = (
        "17. Registration of customary law marriages (1) The parties to an unregistered customary law marriage shall "
        "register the marriage within three months of the date of the union."
    )
    offered, texts = sample_offer(("Marriages Act", "17", register))
    answer = (
        "The parties must register the marriage within six months of the union [1]. "
        "This is a mandatory requirement for the parties to the marriage [1]."
    )
    result = gate_model_answer(answer, offered, texts)
    assert [check.verdict == "supported" for check in result.claims] == [False, False]
    assert result.answer == ""
    # After a sentence that passes, the same words point at what the reader sees, and stay.
    kept = gate_model_answer(answer.replace("six months", "three months"), offered, texts)
    assert kept.passed and "This is a mandatory requirement" in kept.answer


def test_a_subsection_named_loosely_is_found_by_its_ending_when_only_one_provision_ends_so() -> None:
    interest = (
        "8. Maximum rate of interest (1) No lender shall demand interest at a rate greater than the prescribed rate. "
        "(2) The Minister may prescribe— (a) the maximum rate of interest for loans of money; (b) forms."
    )
    offered, texts = sample_offer(("Moneylending Act", "8", interest))
    loose = "Section 8(a) lets the Minister prescribe the maximum rate of interest for loans of money [1]."
    assert gate_model_answer(loose, offered, texts).passed
    # A verdict "under" words that name no law is no verdict on facts alone: it is judged as a claim.
    from api.composer.judge.gate import _uncheckable

    assert not _uncheckable("This is illegal under any law that protects tenants from eviction by landlords.", [])


def test_a_long_run_of_capitalised_words_after_a_reference_is_read_in_one_pass() -> None:
    from api.composer.citations import find_references

    # Each capitalised word ending in "-on" could once be split two ways ("Foundati" + "on"), doubling the work with
    # every word: this sentence took minutes. Read whole, it is one pass.
    text = "section 4 of the " + "Foundation " * 24 + "is cited here."
    assert [(r.number, r.title) for r in find_references(text)] == [("4", "")]


def test_a_condition_stated_in_the_next_sentence_completes_the_rule_before_it() -> None:
    maternity = (
        "5. Maternity leave (1) A female employee who has served for at least one year is entitled to maternity "
        "leave of ninety-eight days on full pay. (2) No employer shall dismiss an employee by reason of her pregnancy."
    )
    offered, texts = sample_offer(("Employment Standards Act", "5", maternity))
    rule = "A female employee gets ninety-eight days of maternity leave on full pay [1]."
    alone = gate_model_answer(rule, offered, texts)
    assert not alone.passed and alone.sentences[0].dropped
    both = gate_model_answer(f"{rule} She qualifies once she has served for at least one year [1].", offered, texts)
    assert both.passed and "gets ninety-eight days" in both.answer and both.citations
    # A next sentence that only shares a number word with the condition does not state it.
    three = gate_model_answer(f"{rule} She can take it at most three times with any one employer [1].", offered, texts)
    assert "gets ninety-eight days" not in three.answer
    # Another claim after it states no condition: the rule stays out, the other claim is kept.
    other = gate_model_answer(f"{rule} Her employer may not dismiss her because she is pregnant [1].", offered, texts)
    assert "gets ninety-eight days" not in other.answer and "dismiss" in other.answer


def test_a_could_not_find_beside_claims_that_pass_is_not_shown() -> None:
    deposit = "5. Deposits (1) A landlord shall not require a deposit that exceeds the rent payable for two months."
    offered, texts = sample_offer(("Residential Tenancies Act", "5", deposit))
    answer = (
        "I could not find this in the documents I have. A landlord may not ask for more than two months' rent as a "
        "deposit [1]."
    )
    result = gate_model_answer(answer, offered, texts)
    assert result.passed and "could not find" not in result.answer and "two months" in result.answer
    # Alone, it is the answer: nothing else is shown.
    alone = gate_model_answer("I could not find this in the documents I have.", offered, texts)
    assert "could not find" in alone.answer


def test_a_quote_cut_from_the_negation_before_it_is_not_supported() -> None:
    """A verbatim quote that starts after "No" says the opposite of its provision; the same words quoted with the
    negation, or a quote after any other word, pass."""
    school = (
        "10A. Restriction on employment of children (1) No person shall employ for gain or reward a child of "
        "school-going age at a time when the child might reasonably be expected to attend school."
    )
    offered, texts = sample_offer(("Children's Act", "10A", school))
    cut = 'It also provides: "person shall employ for gain or reward a child of school-going age" [1].'
    check = gate_model_answer(cut, offered, texts).claims[0]
    assert check.verdict == "unsupported" and check.opposite
    whole = 'It provides: "No person shall employ for gain or reward a child of school-going age" [1].'
    assert gate_model_answer(whole, offered, texts).passed
    later = 'It provides that no one may employ "for gain or reward a child of school-going age" at school times [1].'
    assert gate_model_answer(later, offered, texts).passed
    # The sentence says the negation itself around the quote.
    said = 'Nobody may "employ for gain or reward a child of school-going age" at school times [1].'
    assert gate_model_answer(said, offered, texts).passed
    # Another place the words start, after no negation, is the one quoted; and a negation ends with its sentence.
    licence = ("(1) A licensee shall not sell liquor after midnight. (2) Despite subsection (1), on the thirty-first "
               "day of December a licensee may sell liquor after midnight.")  # fmt: skip
    offered, texts = sample_offer(("Liquor Act", "40", licence))
    assert gate_model_answer('On the last day of December a licensee may "sell liquor after midnight" [1].', offered,
                             texts).passed  # fmt: skip
    deduct = "The contribution is due whether he has consented or not. The employer shall deduct it from the wages."
    offered, texts = sample_offer(("Pensions Act", "9", deduct))
    assert gate_model_answer('The Act says "The employer shall deduct it from the wages" [1].', offered, texts).passed
