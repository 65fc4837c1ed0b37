"""Quote-only answers that read well: a plain opening sentence from the quoted provision's own heading, the provisions
that answer most directly first, and every sentence (the opening one included) through the same gate as a model's.

The provisions are the sample corpus's own words (sample_corpus/), as ingestion chunks them.
"""

from __future__ import annotations

import pytest

from api.composer.citations import MARKER, list_case
from api.composer.extractive import candidate_units, compose_extractive, heading_phrase
from api.composer.judge.gate import gate_model_answer, verify_answer
from api.schemas.documents import Chunk
from api.schemas.events import Citation
from api.tools.retrieval import Retrieved

MARRIAGE_S3 = (
    "(1) No person under the age of eighteen years shall be capable of contracting a valid marriage.\n"
    "(2) A marriage solemnised in contravention of subsection (1) shall be void.\n"
    "(3) Any person who solemnises, arranges or takes part in the marriage of a person under the age of eighteen "
    "years shall be guilty of an offence and liable to a fine not exceeding level 10 or to imprisonment for a period "
    "not exceeding two years or to both such fine and such imprisonment."
)
EMPLOYMENT_S5 = (
    "(1) A female employee who has served for at least one year is entitled to maternity leave of ninety-eight days "
    "on full pay.\n(2) No employer shall dismiss an employee by reason of her pregnancy or while she is on maternity "
    "leave."
)
EMPLOYMENT_S7 = (
    "(1) Every employee has the right not to be unfairly dismissed.\n(2) A dismissal is unfair unless the employer "
    "shows that it was for a fair reason relating to the conduct or capacity of the employee, or to the operational "
    "requirements of the employer, and that a fair procedure was followed.\n(3) An employee who alleges unfair "
    "dismissal may refer the dispute to a labour officer within ninety days after the dismissal."
)


def hit(doc: str, title: str, number: str, heading: str, text: str, rank: int) -> Retrieved:
    section = f"{doc}#s{number}"
    chunk = Chunk(chunk_id=f"{section}/c0", doc_key=doc, section_id=section, section_number=number,
                  section_heading=heading, title=title, text=text, ordinal=0, provision_id=f"{section}(1)")  # fmt: skip
    return Retrieved(chunk, 1.0 / (1 + rank), {"dense": rank})


def offer(
    doc: str, title: str, number: str, heading: str, text: str, quote: str, section: str = "", cited_heading: str = "-"
) -> tuple[list[Retrieved], Citation]:
    """One section offered (``hit``) and a citation of it quoting ``quote`` (labelled ``section``, else by its number;
    its heading ``cited_heading`` where that differs from the section's)."""
    citation = Citation(index=1, doc_key=doc, title=title, section=section or f"section {number}",
                        section_id=f"{doc}#s{number}", heading=heading if cited_heading == "-" else cited_heading,
                        chunk_id="c0", quote=quote)  # fmt: skip
    return [hit(doc, title, number, heading, text, 0)], citation


def gated(text: str, citations: list[Citation], hits: list[Retrieved]) -> list[str]:
    """The sentences of ``text`` the gate does not pass, checked against the full provisions they cite."""
    offered = {c.index: c for c in citations}
    provisions = {h.chunk.section_id: h.chunk.text for h in hits}
    result = gate_model_answer(text, offered, provisions)
    return [check.text for check in result.failed]


MARRIAGE = [hit("sample/act/2022/9", "Marriage Act, 2022", "3", "Minimum age of marriage", MARRIAGE_S3, 0)]


def test_a_quote_only_answer_opens_with_a_plain_sentence_from_the_heading_that_passes_the_gate() -> None:
    text, citations = compose_extractive("What is the minimum age of marriage?", candidate_units(MARRIAGE))
    first = text.split("\n\n")[0]
    assert first.startswith("Section 3 of the Marriage Act, 2022 sets the minimum age of marriage: “No person under")
    assert "(Minimum age of marriage) provides" not in text
    assert gated(text, citations, MARRIAGE) == []
    # The opening is checked like any sentence: one that stated a fact no quote holds would not be sent.
    invented = text.replace("sets the minimum age of marriage:", "sets the minimum age of marriage at sixteen:", 1)
    assert gated(invented, citations, MARRIAGE) == [invented.split("\n\n")[0]]


def test_the_provision_whose_heading_names_what_is_asked_comes_first() -> None:
    # The search ranked the maternity-leave section first (its words: "employer", "dismiss", "reason"); the section
    # headed "Unfair dismissal" answers the question directly, and the answer opens with it.
    hits = [
        hit("sample/act/2023/7", "Employment Standards Act, 2023", "5", "Maternity leave", EMPLOYMENT_S5, 0),
        hit("sample/act/2023/7", "Employment Standards Act, 2023", "7", "Unfair dismissal", EMPLOYMENT_S7, 1),
    ]
    question = "Can my employer dismiss me without a reason?"
    text, citations = compose_extractive(question, candidate_units(hits))
    paragraphs = text.split("\n\n")
    assert paragraphs[0].startswith("Section 7 of the Employment Standards Act, 2023 deals with unfair dismissal: “")
    assert any(p.startswith("Section 5 of the Employment Standards Act, 2023 (Maternity leave) provides: “")
               for p in paragraphs[1:])  # fmt: skip
    # Markers are numbered in the order the reader meets them.
    assert [int(m) for m in MARKER.findall(text)] == [c.index for c in citations] == list(range(1, len(citations) + 1))
    assert citations[0].section_id.endswith("#s7")
    assert gated(text, citations, hits) == []


def test_a_heading_the_question_does_not_name_is_not_made_its_opening() -> None:
    # Asked about a deposit's size, the definitions section is quoted as where its words come from, not said to be
    # what the answer is about.
    definition = '"deposit" means any money paid by a tenant to a landlord as security for the performance of a lease;'
    hits = [hit("sample/act/2024/3", "Residential Tenancies Act, 2024", "2", "Interpretation", definition, 0)]
    text, citations = compose_extractive("What is a deposit?", candidate_units(hits))
    assert text.startswith("Section 2 of the Residential Tenancies Act, 2024 (Interpretation) provides: “")
    assert gated(text, citations, hits) == []


@pytest.mark.parametrize(
    ("heading", "phrase"),
    [
        ("Minimum age of marriage", "sets the minimum age of marriage"),
        ("Period of notice.", "sets the period of notice"),
        ("Notice of termination", "deals with notice of termination"),
        ("HIV testing", "deals with HIV testing"),
        ("McKenzie friends", "deals with McKenzie friends"),
        ("", ""),
    ],
)
def test_a_heading_becomes_what_the_provision_does_in_its_own_words(heading: str, phrase: str) -> None:
    assert heading_phrase(heading) == phrase


def test_a_quote_cut_short_ends_in_an_ellipsis_and_still_passes_both_checks() -> None:
    # A unit longer than a quote may be is cut at a clause: the reader must see that the rule goes on.
    limbs = " ".join(
        f"(item {n}) where the employer fails to follow the procedure set out in the code," for n in range(9)
    )
    long_rule = f"An employee is unfairly dismissed {limbs} and the employer shall comply with the model code."
    hits = [hit("sample/act/1985/16", "Labour Act", "12B", "Dismissal", long_rule, 0)]
    text, citations = compose_extractive(
        "When is an employee unfairly dismissed under the Labour Act?", candidate_units(hits)
    )
    assert text.endswith(" …” [1]") and citations[0].quote in long_rule and "…" not in citations[0].quote
    assert gated(text, citations, hits) == []
    assert verify_answer(text, {c.index: c for c in citations}, {h.chunk.section_id: long_rule for h in hits}).passed
    # A whole sentence is quoted as it is.
    whole, _ = compose_extractive("What is the minimum age of marriage?", candidate_units(MARRIAGE))
    assert "…" not in whole


PRESCRIPTION_S15 = (
    "15. Periods of prescription of debts The period of prescription of a debt shall be— (a) thirty years, in the "
    "case of— (i) a debt secured by mortgage bond; (ii) a judgment debt ; (iii) a debt in respect of taxation imposed "
    "or levied by or under any enactment; (b) six years in the case of— (i) a debt arising from a bill of exchange; "
    "(ii) a debt owed to the State; unless a longer period applies in terms of paragraph (a); (c) except where any "
    "enactment provides otherwise, three years, in the case of any other debt ."
)


def test_a_list_item_too_short_to_stand_alone_is_quoted_with_its_lead_in_and_labelled_where_it_sits() -> None:
    heading = "Periods of prescription of debts"
    hits = [hit("sample/act/1975/31", "Prescription Act", "15", heading, PRESCRIPTION_S15, 0)]
    hits[0].chunk.provision_id = ""
    question = "What is the period of prescription of a judgment debt?"
    text, citations = compose_extractive(question, candidate_units(hits))
    # The item the question names is quoted with the words that give it its period, not left out for being short.
    first = text.split("\n\n")[0]
    assert "(a) thirty years, in the case of— (i) a debt secured by mortgage bond; (ii) a judgment debt ;”" in first
    assert gated(text, citations, hits) == []
    # A paragraph after "paragraph (a);" starts a new paragraph; "(ii)" under a paragraph is its subparagraph.
    other = compose_extractive("How long before any other debt prescribes?", candidate_units(hits))[1]
    cited = {c.quote.split()[0]: c.provision_id.partition("#")[2] for c in other}
    assert cited.get("except") == "s15(c)"
    assert provision_ids(PRESCRIPTION_S15)[-4:] == ["s15(b)", "s15(b)(i)", "s15(b)(ii)", "s15(c)"]


def provision_ids(text: str) -> list[str]:
    from api.text.provisions import provision_starts

    return [p.partition("#")[2] for _, p in provision_starts(text, "x#s15")]


def test_a_roman_numeral_that_is_the_next_letter_is_a_paragraph_not_a_subparagraph() -> None:
    text = "1. Words In this Act— (g) one thing; (h) another; (i) a third; (j) a fourth— (i) its first part;"
    assert provision_ids(text) == ["s15(g)", "s15(h)", "s15(i)", "s15(j)", "s15(j)(i)"]
    # A list numbered in roman directly under a subsection: its items are siblings, not each inside the first.
    powers = "(1) The Minister may— (i) make rules; (ii) fix fees; (iii) appoint officers. (2) Next."
    assert provision_ids(powers) == ["s15(1)", "s15(1)(i)", "s15(1)(ii)", "s15(1)(iii)", "s15(2)"]


def test_a_lettered_subsection_and_the_items_of_a_list_joined_by_or_are_provisions() -> None:
    text = (
        "13. Wages (1) Whether any person— (a) is dismissed from his employment; or (b) resigns; or (c) dies; he "
        "shall be entitled to the wages due to him. (1a) Subsection (1) does not apply to paragraph (a) or (b) of "
        "subsection (2). (2) The employer shall pay."
    )
    assert provision_ids(text) == ["s15(1)", "s15(1)(a)", "s15(1)(b)", "s15(1)(c)", "s15(1a)", "s15(2)"]


def test_a_short_item_joined_to_its_lead_in_keeps_the_texts_own_spacing() -> None:
    from api.text.units import quotable_units

    text = (
        "(2) The following debts prescribe after thirty years:  (i) a debt secured by mortgage bond;\u00a0(ii) a "
        "judgment debt;"
    )
    chunk = hit("d", "Prescription Act", "5", "Debts", text, 0).chunk
    units = quotable_units(chunk)
    assert any(unit.endswith("a judgment debt;") for unit in units)
    assert all(unit in text for unit in units)


def test_a_marker_that_opens_a_sentence_starts_a_provision_even_after_a_reference() -> None:
    text = "(6) He has the powers referred to in section 120 (2) (7) Where the Minister accepts it, he shall act."
    assert provision_ids(text) == ["s15(6)", "s15(7)"]
    # A reference's next label is followed by its own words in lower case: no provision starts there.
    assert provision_ids("(1) Subject to section 120 (2) (b) of the Act, he shall act.") == ["s15(1)"]


BURIAL_S60 = (
    "60. Days of grace, paid-up policies and non-forfeiture provisions: burial policies (1) If a premium under a "
    "burial policy has not been paid on its due date, the insurer liable under the policy shall, despite any agreement "
    "to the contrary, keep the policy in force for the full value of the benefits— (a) if the insurer is bound to send "
    "a person to the owner of the policy to collect the premiums, for a period of one month from the due date of the "
    "first unpaid premium; (b) if paragraph (a) does not apply, for a period ending on the date given in a written "
    "notice which the insurer has served on the owner of the policy at least fourteen days before that date. (2) If a "
    "premium referred to in subsection (1) is paid within the period given in paragraph (a) or (b), the insurer shall "
    "renew the policy. (3) If, in the case of a burial policy on which premiums have been paid for five years or more, "
    "a premium is not paid within the period given in subsection (1), the policy shall remain in force for the period "
    "fixed in terms of subsection (6) without further premiums. (4) If an insurer's liability under a burial policy is "
    "contingent upon the death of two or more persons and the policy provides a benefit on the death of a person who "
    "is under the age of twenty-one years, no benefit shall be claimable on that person's death if it occurs after he "
    "or she has turned twenty-one. (5) If an insurer's liability under a burial policy is contingent upon the death "
    "of one person only, who was under nine years of age when the policy was issued, the period fixed in terms of "
    "subsection (6) shall be computed as if the policy had been issued on the anniversary of its issue when that "
    "person was between nine and ten years of age. (6) A burial policy shall remain in force for the period set out "
    "in the Schedule."
)


BURIAL_HEADING = "Days of grace, paid-up policies and non-forfeiture provisions: burial policies"


def burial(quote: str = "") -> tuple[list[Retrieved], Citation, str]:
    """The burial-policy section offered, a citation of it, and the quote (by default its subsection (5))."""
    if not quote:
        start = BURIAL_S60.index("If an insurer's liability under a burial policy is contingent upon the death of one")
        quote = BURIAL_S60[start : BURIAL_S60.index(" (6) A burial")]
    hits, citation = offer("sample/act/1987/27", "Insurance Act", "60", BURIAL_HEADING, BURIAL_S60, quote)
    return hits, citation, quote


def test_a_quote_framed_only_by_where_it_comes_from_is_judged_as_the_quote() -> None:
    # The opening built from the heading ("deals with days of grace, …") names the provision; read as the sentence's
    # own case, its "days" pointed at another item of the provision, and the verbatim quote was refused.
    hits, citation, quote = burial()
    framed = f"Section 60 of the Insurance Act deals with days of grace, paid-up policies and non-forfeiture provisions: burial policies: “{quote}” [1]"  # noqa: E501
    assert gated(framed, [citation], hits) == []
    # Words of its own around a quote are still judged with it: a denial, a case the quote does not name.
    assert gated(f"Section 60 of the Insurance Act does not provide: “{quote}” [1]", [citation], hits)
    # The quote is judged as quoted: the law's own words, never read as the sentence giving a right to a party.
    right = (
        "The parent or guardian of a person sentenced to correction in terms of this section shall have the right to "
        "be present when the correction is inflicted, and the court shall advise the parent or guardian, if present "
        "when the sentence is imposed, of his right to be present when it is inflicted."
    )
    text = f"(1) A court may sentence a person under eighteen to moderate correction. (2) {right}"
    hits = [hit("sample/act/1899/4", "Procedure Act", "353", "Correction of juveniles", text, 0)]
    citation = citation.model_copy(update={"section_id": "sample/act/1899/4#s353", "heading": "", "quote": right})
    assert gated(f"It also provides: “{right}” [1]", [citation], hits) == []


def test_a_note_or_the_next_provisions_lead_in_is_never_quoted_as_part_of_a_sentence() -> None:
    from api.text.units import quotable_units

    text = (
        "(3b) A member who has served on shall retire on attaining the age of seventy years. [subsection (3b) "
        "inserted by section 3 of Act 2 of 2024 ] (4) A member appointed before the fixed date shall have a "
        "pensionable age of fifty years. (5) A consumer may cancel the transaction within five business days after "
        "the goods were delivered to the consumer. (6) A supplier must— (a) return any payment received within "
        "fifteen business days; (b) not charge for the return."
    )
    units = quotable_units(hit("d", "Police Act", "22", "Retirement", text, 0).chunk)
    assert units[:3] == [
        "A member who has served on shall retire on attaining the age of seventy years.",
        "A member appointed before the fixed date shall have a pensionable age of fifty years.",
        "A consumer may cancel the transaction within five business days after the goods were delivered to the "
        "consumer.",
    ]
    assert not any("inserted by" in unit for unit in units)


def test_a_paragraph_that_goes_on_from_a_quote_left_out_names_its_provision() -> None:
    from api.composer.extractive import standalone

    citation = Citation(index=2, doc_key="d", title="Insurance Act", section="section 60(4)", section_id="d#s60",
                        heading="Burial policies", chunk_id="c0", quote="q")  # fmt: skip
    assert standalone("It also provides: “q …” [2]", citation) == (
        "Section 60(4) of the Insurance Act (Burial policies) provides: “q …” [2]"
    )
    assert standalone("Section 3 of the Act provides: “q” [2]", citation) == "Section 3 of the Act provides: “q” [2]"


def test_a_definition_is_quoted_without_the_next_parts_heading_or_an_editors_note() -> None:
    from api.composer.definitions import meaning_of
    from api.tools.links import Definition

    def meaning(text: str) -> str:
        return meaning_of(Definition(term="member", doc_key="d", provision_id="d#s2", text=text))

    last = "“member” means a member of the Force . Part II – Command [Part amended by Act 5 of 2011 to read “Chief”]"
    assert meaning(last) == "means a member of the Force ."
    assert meaning("“chief” means the chief appointed under section 9; [definition amended by Act 5 ]") == (
        "means the chief appointed under section 9;"
    )
    assert meaning("“board” means the board established under Part II of this Act;") == (
        "means the board established under Part II of this Act;"
    )


def test_words_beside_a_true_quote_are_judged_on_their_own() -> None:
    hits, citation, quote = burial()
    # Read with the quote, a false claim beside it is a few words among the many the quote shares with the provision.
    false = f"Under section 60 a burial policy lapses immediately when a premium is late: “{quote}” [1]"
    assert gated(false, [citation], hits) == [false]
    # Words that only say where the quote comes from, or that another provision refers to it, claim nothing.
    last = "A burial policy shall remain in force for the period set out in the Schedule."
    reference = citation.model_copy(update={"quote": last, "section": "section 60(6)"})
    named = f"Section 60(6) of the Insurance Act, 1987, referred to above (in terms of section 60(6)): “{last}” [1]"
    assert gated(named, [reference], hits) == []
    uses = "uses “burial policy”, which the same law defines by the provision cited above"
    assert gated(f"Section 60(5) of the Insurance Act {uses}: “{quote}” [1]", [citation], hits) == []


def test_a_provisions_own_quotation_marks_inside_a_quote_are_part_of_it() -> None:
    vows = (
        "(1) In solemnising any marriage the marriage officer shall cause each of the parties to make the following "
        'declaration: "I solemnly declare that I know of no lawful impediment to this marriage." and each of the '
        'parties shall say to the other: "I take you to be my lawful wedded spouse."'
    )
    quote = vows[4:]
    hits, citation = offer("sample/act/2022/9", "Marriages Act, 2022", "31", "Marriage formula", vows, quote,
                           cited_heading="")  # fmt: skip
    text = f"Section 31 of the Marriages Act, 2022, referred to above (in terms of section 31): “{quote}” [1]"
    assert gated(text, [citation], hits) == []


@pytest.mark.parametrize(
    "framing",
    ["Section 60 of the Insurance Act gives 30 days of grace", "In 2010 section 60 of the Insurance Act provided"],
)
def test_a_figure_beside_a_quote_is_a_claim_of_its_own(framing: str) -> None:
    # A number is no content word, yet it is the sentence's own claim: judged as the quote alone, a figure the
    # provision never states would pass.
    hits, citation, last = burial("A burial policy shall remain in force for the period set out in the Schedule.")
    sentence = f"{framing}: “{last}” [1]"
    assert gated(sentence, [citation], hits) == [sentence]


REFUNDS = (
    "(1) A buyer may cancel an online sale without reason within seven days after receiving the goods. (2) Where the "
    "buyer has paid, the seller shall refund the payment within fourteen days of the cancellation. (3) Nothing in "
    "this section limits any other right of the buyer."
)


def refunds() -> tuple[list[Retrieved], Citation]:
    return offer("sample/act/2019/5", "Consumer Act", "53", "Cooling-off period", REFUNDS, REFUNDS[4:60])


def test_a_quote_of_several_sentences_is_judged_a_sentence_at_a_time_as_its_provision_states_them() -> None:
    # Each figure is where the quote says it is: read as one statement, "seven days" and "fourteen days" would have
    # to be stated together in one place of the provision.
    hits, citation = refunds()
    quote = REFUNDS[4 : REFUNDS.index(" (3) Nothing")]
    assert gated(f"Section 53 of the Consumer Act provides: “{quote}” [1]", [citation], hits) == []


def test_a_quotation_mark_never_closed_does_not_carry_the_sentences_after_it() -> None:
    hits, citation = refunds()
    false = "The seller may keep the payment for ninety days [1]."
    for mark in ("“", '"'):
        text = f"Under section 53 a buyer may cancel within seven days [1]. It also says {mark}the seller shall refund. {false}"  # noqa: E501
        assert false in gated(text, [citation], hits), mark


async def streamed(text: str, citation: Citation, hits: list[Retrieved], step: int) -> str:
    """``text`` fed to verified streaming ``step`` characters at a time: what the reader is sent."""
    from api.composer.judge.gate import SentenceGate
    from api.composer.judge.streaming import GatedTracker

    offered = {citation.index: citation}
    provisions = {h.chunk.section_id: h.chunk.text for h in hits}
    tracker = GatedTracker(offered, lambda event: None, SentenceGate(offered, provisions))
    for k in range(0, len(text), step):
        tracker.feed(text[k : k + step])
        await tracker.settle()
    await tracker.close(True)
    return tracker.shown


async def test_a_quotation_streamed_is_judged_as_it_is_judged_whole() -> None:
    # While a quotation is open the sentences inside it wait: once it closes it is one statement, and a mark that
    # is never closed leaves each sentence to be judged on its own, streamed or whole.
    hits, citation = refunds()
    quote = REFUNDS[4 : REFUNDS.index(" (3) Nothing")]
    answers = [
        f"Section 53 of the Consumer Act provides: “{quote}” [1] So the seller must refund the buyer within "
        "fourteen days [1].",
        "Under section 53 a buyer may cancel within seven days [1]. It also says “the seller shall refund. The seller "
        "may keep the payment for ninety days [1].\nA buyer may cancel an online sale without reason within seven "
        "days [1].",
    ]
    for text in answers:
        whole = gate_model_answer(text, {1: citation}, {h.chunk.section_id: h.chunk.text for h in hits}).answer
        for step in (1, 4, 9):
            assert " ".join((await streamed(text, citation, hits, step)).split()) == " ".join(whole.split()), step
    assert "ninety" not in whole


def test_the_next_parts_heading_is_never_quoted_as_a_sentence() -> None:
    from api.text.units import quotable_units

    text = (
        "(10) A nursing mother shall be entitled to the benefits under subsection (8) for six months. [section "
        "substituted by section 13 of Act 17 of 2002 ] Part V – Advisory councils and wage control [heading amended "
        "by section 37 of Act 7 of 2005]"
    )
    units = quotable_units(hit("sample/act/1985/16", "Labour Act", "18", "Maternity leave", text, 0).chunk)
    assert units == ["A nursing mother shall be entitled to the benefits under subsection (8) for six months."]


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        ("“violence” means the application of force to a person’s body. B – Theft, stock theft and making off",
         "means the application of force to a person’s body."),
        ("“Act” means the Criminal Procedure Act [Chapter 9:07]", "means the Criminal Procedure Act [Chapter 9:07]"),
    ],
)  # fmt: skip
def test_a_definition_keeps_its_own_brackets_and_drops_a_sub_parts_heading(text: str, meaning: str) -> None:
    from api.composer.definitions import meaning_of
    from api.tools.links import Definition

    assert meaning_of(Definition(term="x", doc_key="d", provision_id="d#s2", text=text)) == meaning


def test_a_figure_beside_a_quote_that_the_quote_itself_states_is_no_claim_of_its_own() -> None:
    rule = (
        "A person who has ceased to be a citizen in terms of section nine or thirteen may apply to the Minister in "
        "the prescribed form for the restoration of his citizenship."
    )
    hits, citation = offer("sample/act/1984/23", "Citizenship Act", "14", "Restoration of citizenship", f"(1) {rule}",
                           rule, section="section 14(1)")  # fmt: skip
    text = f"Section 14(1) of the Citizenship Act refers to the provision cited above (in terms of section nine or thirteen): “{rule}” [1]"  # noqa: E501
    assert gated(text, [citation], hits) == []


def test_a_definition_quoted_with_the_term_it_defines_passes() -> None:
    text = (
        "2. Interpretation In this Act— “breeder” means a person who breeds a new variety of plant; “farmer” means a "
        "person who normally derives his sole or principal means of livelihood from agriculture carried on by him;"
    )
    meaning = "means a person who normally derives his sole or principal means of livelihood from agriculture"
    hits, citation = offer("sample/act/1973/53", "Plant Breeders Act", "2", "Interpretation", text, meaning)
    assert gated(f"Section 2 of the Plant Breeders Act defines “farmer”: “{meaning}” [1]", [citation], hits) == []


def test_a_quote_must_be_in_the_subsection_the_sentence_places_it_in() -> None:
    hits, citation, quote = burial()  # subsection (5)'s words
    assert gated(f"Section 60(5) of the Insurance Act provides: “{quote}” [1]", [citation], hits) == []
    # Subsection (3) speaks of the same policy remaining in force: the words are found, the place is wrong.
    hits, citation, last = burial("A burial policy shall remain in force for the period set out in the Schedule.")
    assert gated(f"Section 60(6) of the Insurance Act provides: “{last}” [1]", [citation], hits) == []
    misplaced = f"Section 60(3) of the Insurance Act provides: “{last}” [1]"
    assert gated(misplaced, [citation], hits) == [misplaced]


def test_words_that_relate_two_quotes_must_be_the_provisions_own() -> None:
    hits, citation = refunds()
    cancel = "A buyer may cancel an online sale without reason within seven days after receiving the goods"
    refund = "the seller shall refund the payment within fourteen days of the cancellation"
    # Each quote is verbatim; "only when" and "and then" are the sentence's own claims of how the rules relate.
    for joined in (f"“{cancel}” only when “{refund}” [1]", f"“{cancel}” and then “{refund}” [1]"):
        sentence = f"Section 53 of the Consumer Act provides that {joined}"
        assert gated(sentence, [citation], hits) == [sentence]
    # Side by side, each is simply the provision's; and a relation the provision states between them stands.
    assert gated(f"Section 53 of the Consumer Act provides “{cancel}” and “{refund}” [1]", [citation], hits) == []
    hits, citation, keep = burial("keep the policy in force for the full value of the benefits")
    bound = "the insurer is bound to send a person to the owner of the policy to collect the premiums"
    unpaid = "If a premium has not been paid on its due date, the insurer must"
    assert gated(f"{unpaid} “{keep}” if “{bound}” [1]", [citation], hits) == []


def test_a_quote_that_stops_before_its_clauses_exception_leaves_the_exception_out() -> None:
    rule = (
        "(1) No boy under the age of eighteen years and no girl under the age of sixteen years shall be capable of "
        "contracting a valid marriage except with the written permission of the Minister: Provided that the Minister "
        "shall not grant permission unless the parents consent."
    )
    cut = "no girl under the age of sixteen years shall be capable of contracting a valid marriage"
    hits, citation = offer("sample/act/1964/3", "Marriage Act", "22", "Marriage of persons under certain ages", rule,
                           cut, cited_heading="")  # fmt: skip
    stopped = f"Section 22 of the Marriage Act provides: “{cut}” [1]"
    assert gated(stopped, [citation], hits) == [stopped]
    # Marked as going on, or with the exception in the sentence's own words, the quote hides nothing.
    assert gated(f"Section 22 of the Marriage Act provides: “{cut} …” [1]", [citation], hits) == []
    said = f"Except with the Minister's written permission, “{cut}” [1]"
    assert gated(said, [citation], hits) == []
    # A quote that ends on the colon opening a proviso shows that the provision goes on.
    whole = f"{cut} except with the written permission of the Minister:"
    assert gated(f"Section 22 of the Marriage Act provides: “{whole}” [1]", [citation], hits) == []


def test_a_law_named_by_another_year_is_another_law() -> None:
    rule = "No person under the age of eighteen years may contract a marriage."
    hits, citation = offer("sample/act/2022/9", "Marriages Act, 2022", "3", "Minimum age of marriage", f"(1) {rule}",
                           rule)  # fmt: skip
    assert gated(f"Section 3 of the Marriages Act, 2022 provides: “{rule}” [1]", [citation], hits) == []
    assert gated(f"Section 3 of the Marriages Act provides: “{rule}” [1]", [citation], hits) == []
    older = f"Section 3 of the Marriages Act, 1964 provides: “{rule}” [1]"
    assert gated(older, [citation], hits) == [older]


TENANCY = (
    "9. Ending a lease (1) Subject to subsection (5), a lease runs for the term the parties agree. (5) Where a tenant "
    "has paid no rent for three months, the landlord may end the lease by written notice. (6) The notice shall— (a) "
    "if the rent is paid within seven days, lapse and have no effect; or (b) in any other case, take effect after "
    "one month. (7) No tenant shall keep animals on the land. (8) For the purposes of this section, a month is "
    "thirty days. (9) Except as otherwise provided in this Act, a tenant shall pay the rates. (10) Subject to "
    "subsection (8), no landlord shall enter the land without notice."
)


def tenancy(quote: str) -> tuple[list[Retrieved], Citation]:
    return offer("sample/act/2003/2", "Tenancy Act", "9", "Ending a lease", TENANCY, quote, cited_heading="")


@pytest.mark.parametrize(
    ("cut", "whole"),
    [
        ("the landlord may end the lease by written notice",
         "Where a tenant has paid no rent for three months, the landlord may end the lease by written notice"),
        ("take effect after one month", "in any other case, take effect after one month"),
        ("lapse and have no effect", "if the rent is paid within seven days, lapse and have no effect"),
    ],
)  # fmt: skip
def test_a_quote_cut_from_the_case_its_clause_opens_with_states_a_rule_the_provision_does_not(
    cut: str, whole: str
) -> None:
    hits, citation = tenancy(cut)
    stripped = f"Section 9 of the Tenancy Act provides: “{cut}” [1]"
    assert gated(stripped, [citation], hits) == [stripped]
    # Quoted with its case, the clause says what the provision says.
    assert gated(f"Section 9 of the Tenancy Act provides: “{whole}” [1]", [citation], hits) == []


def test_a_quote_after_its_case_passes_when_the_sentence_states_the_case_or_the_case_is_only_drafting() -> None:
    cut = "the landlord may end the lease by written notice"
    hits, citation = tenancy(cut)
    said = f"If the tenant has paid no rent for three months, “{cut}” [1]"
    assert gated(said, [citation], hits) == []
    # "For the purposes of this section," limits nothing a reader needs.
    hits, citation = tenancy("a month is thirty days")
    assert gated("Section 9 of the Tenancy Act provides: “a month is thirty days” [1]", [citation], hits) == []


def test_a_case_stated_before_the_quote_in_its_paragraph_or_in_other_words_is_stated() -> None:
    cut = "the landlord may end the lease by written notice"
    hits, citation = tenancy(cut)
    # In the sentence before, in the same paragraph.
    then = f"Then “{cut}” [1]."
    assert then not in gated(f"Section 9 covers a tenant who has paid no rent for three months [1]. {then}",
                             [citation], hits)  # fmt: skip
    # Put in a case by the sentence's own words ("where …"), a third of the case's words state it; else half.
    assert gated(f"Where the rent is months late, “{cut}” [1].", [citation], hits) == []
    loose = f"With the rent months late the Act says “{cut}” [1]."
    assert gated(loose, [citation], hits) == [loose]
    # A sentence in another paragraph states nothing of this one's case.
    apart = f"Section 9 covers a tenant who has paid no rent for three months [1].\n\n{then}"
    assert then in gated(apart, [citation], hits)


def test_a_saving_for_what_else_the_law_provides_and_a_mark_that_names_a_subsection_make_no_case() -> None:
    hits, citation = tenancy("a tenant shall pay the rates")
    assert gated("Section 9 of the Tenancy Act provides: “a tenant shall pay the rates” [1]", [citation], hits) == []
    # "(5)" in "Subject to subsection (5), " names a subsection: the clause still opens with "Subject to".
    hits, citation = tenancy("a lease runs for the term the parties agree")
    assert gated("Section 9(1) provides: “a lease runs for the term the parties agree” [1]", [citation], hits) == []
    # A subsection's own mark after the section's heading starts its clause: no heading word is read as a case.
    hits, citation = tenancy("No tenant shall keep animals on the land")
    assert gated("Section 9(7) provides: “No tenant shall keep animals on the land” [1]", [citation], hits) == []


ABANDONED = (
    "10. Abandoned premises (1) If the tenant abandons the premises and the landlord has given notice of it in the "
    "prescribed form— (a) the lease shall end on the day the notice is given; and (b) the goods left behind shall "
    "become the property of the landlord to be sold as he may direct. (2) If a lease is lost and its terms are proved "
    "before a magistrate . the landlord shall give the tenant a certified copy of the record of the lease. (3) A "
    "landlord shall— (a) keep the common areas of the building clean; and (b) repair the roof of the building within "
    "a reasonable time after being told of the damage. (4) If— (a) the tenant is a minor; or (b) the tenant is "
    "outside the country; and the lease would, but for this subsection, end within one month after the tenant "
    "returns, the lease shall not end before the expiration of three months after that date. (5) This section does "
    "not apply to a lease— (a) of a room in the landlord's own dwelling for less than one month; or (b) granted by "
    "the State for a public purpose. (6) The following rules apply to every lease, except a lease of farm land— (a) "
    "the rent shall be paid monthly in advance by the tenant; and (b) the landlord shall issue a receipt for every "
    "payment of rent. (7) A tenant may, for a period not exceeding one month— (a) sublet the premises to a member of "
    "his family living with him there. (8) Where a tenant of a dwelling house— (a) damages the premises; or (b) fails "
    "to pay the rent; the landlord may end the lease by written notice to the tenant. (9) A landlord shall— (a) repair "
    "the roof; and (b) paint the walls; the tenant may inspect the repairs at any reasonable time. (10) If— (a) the "
    "tenant has died and no heir occupies the premises; or (b) the premises have been destroyed by fire; the lease "
    "shall end."
)


def abandoned(quote: str) -> tuple[list[Retrieved], Citation]:
    return offer("sample/act/2003/2", "Tenancy Act", "10", "Abandoned premises", ABANDONED, quote)


def held_unless_stated(quote: str, subsection: str, stated: str) -> None:
    """Quoted alone from section 10``subsection``, ``quote`` is held back; in ``stated``, which states its case, not."""
    hits, citation = abandoned(quote)
    stripped = f"Section 10{subsection} of the Tenancy Act provides: “{quote}” [1]"
    assert gated(stripped, [citation], hits) == [stripped]
    assert gated(stated, [citation], hits) == []


def test_a_list_item_quoted_without_the_case_its_list_opens_with_states_a_rule_the_provision_does_not() -> None:
    item = "the goods left behind shall become the property of the landlord to be sold as he may direct"
    held_unless_stated(item, "", f"If the tenant abandons the premises and the landlord gives notice, “{item}” [1].")
    # Under an opening that states no case ("A landlord shall—"), an item quoted alone keeps its rule.
    duty = "repair the roof of the building within a reasonable time after being told of the damage"
    hits, citation = abandoned(duty)
    assert gated(f"Under section 10 of the Tenancy Act a landlord shall “{duty}” [1].", [citation], hits) == []


def test_a_quote_only_answer_shows_a_list_item_after_the_opening_that_states_its_case() -> None:
    # The item's chunk starts after the list's opening; the section's whole text has it.
    section = "sample/act/2003/2#s10"
    item_chunk = ABANDONED[ABANDONED.index("(b)") : ABANDONED.index("(2)")]
    hits = [hit("sample/act/2003/2", "Tenancy Act", "10", "Abandoned premises", item_chunk, 0)]
    asked = "What happens to goods left behind in the premises?"
    text, citations = compose_extractive(asked, candidate_units(hits), sections={section: ABANDONED})
    opening = "If the tenant abandons the premises and the landlord has given notice of it in the prescribed form—"
    item = "the goods left behind shall become the property of the landlord to be sold as he may direct"
    assert f"“{opening}” … “{item}" in text and citations[0].quote.startswith(item)
    assert gate_model_answer(text, {c.index: c for c in citations}, {section: ABANDONED}).passed
    # Without it, the item alone gives as a rule what holds only in that case: the gate holds it back.
    alone, cited = compose_extractive(asked, candidate_units(hits))
    assert opening not in alone
    assert not gate_model_answer(alone, {c.index: c for c in cited}, {section: ABANDONED}).passed


def test_what_follows_a_conditional_lists_last_item_with_and_is_part_of_its_case() -> None:
    rule = "the lease shall not end before the expiration of three months after that date"
    stated = f"Where the tenant is outside the country and the lease would end within one month, “{rule}” [1]."
    held_unless_stated(rule, "(4)", stated)


def test_a_list_item_under_an_opening_that_denies_every_item_is_what_the_rule_is_not() -> None:
    item = "of a room in the landlord's own dwelling for less than one month"
    hits, citation = abandoned(item)
    applied = f"Section 10 of the Tenancy Act protects a tenant under a lease “{item}” [1]."
    assert gated(applied, [citation], hits) == [applied]
    # Said as what the section leaves out, it is what the provision says.
    for said in (f"Section 10 does not apply to a lease “{item}” [1].",
                 f"A lease “{item}” is excluded from section 10 of the Tenancy Act [1]."):  # fmt: skip
        assert gated(said, [citation], hits) == []
    # Quote-only answers show such an item after the opening that denies it.
    assert list_case(item, ABANDONED) == "This section does not apply to a lease—"
    assert list_case("keep the common areas of the building clean", ABANDONED) == ""
    # An exception the opening makes to itself, or a bound ("not exceeding"), denies no item.
    receipt = "the landlord shall issue a receipt for every payment of rent"
    assert list_case(receipt, ABANDONED) == ""
    assert list_case("sublet the premises to a member of his family living with him there", ABANDONED) == ""
    hits, citation = abandoned(receipt)
    assert gated(f"Under section 10 of the Tenancy Act “{receipt}” [1].", [citation], hits) == []


WATER = (
    "5. Water account (3) Money in the account may be expended only on— (a) rent; (b) wages; (c) fuel; (d) repairs; "
    "(e) meters; (f) pipes; (g) if there is a deficit in the water account, a share of that deficit: Provided that no "
    "share is paid in bulk; (h) overheads; (i) the cost of the audit of the account. (4) If the licence is granted— "
    "(a) the holder shall publish— (i) a notice; (ii) a plan; (iii) a map; (iv) a fee table; (v) a rate table; (vi) "
    "a tariff; (vii) a budget; (viii) an audit; (ix) a report; (x) a code; (xi) the name of the holder in the Gazette; "
    "and (b) the holder shall keep the plan at his office. (5) If the licence is cancelled— (a) the holder shall "
    "return it; (b) no refund is due. (6) The fees referred to in section 12(1)(a) shall be paid into the Fund. (7) If "
    "the goods are seized— (a) they shall be stored; (b) they shall be listed. (8) The owner shall pay the storage "
    "fee; and the auctioneer, having sold the goods, shall remit the proceeds to the owner. (9) If, on a sale by "
    "auction, the buyer fails to pay the price— (a) the seller may sell the goods again; and (b) the buyer's deposit "
    "shall be forfeited to the seller."
)


def test_a_list_items_opening_is_read_only_from_its_own_list() -> None:
    def passes(quote: str, sentence: str) -> bool:
        hits, citation = offer("sample/act/2003/2", "Water Act", "5", "Water account", WATER, quote)
        return gated(sentence, [citation], hits) == []

    # "(i)" after "(h)" is a letter: its list opens at "may be expended only on—", which states no case, not at a
    # colon inside item (g).
    audit = "the cost of the audit of the account"
    assert list_case(audit, WATER) == "" and passes(audit, f"Section 5(3) of the Water Act provides: “{audit}” [1]")
    # "(xi)" is roman: its list is "the holder shall publish—", though "(a)" opens under "If the licence is granted—".
    assert list_case("the name of the holder in the Gazette", WATER) == ""
    # A mark right after another ("section 12(1)(a)") names a provision; it starts no item.
    assert passes("shall be paid into the Fund", "The fees referred to in section 12(1)(a) “shall be paid into the "
                  "Fund” [1].")  # fmt: skip
    # "; and" after a sentence's end goes on from that sentence, not from a list in the subsection before.
    remit = "shall remit the proceeds to the owner"
    assert passes(remit, f"The auctioneer, having sold the goods, “{remit}” [1].")
    # The case past an aside after "If": "If the buyer fails to pay the price".
    forfeited = "the buyer's deposit shall be forfeited to the seller"
    assert list_case(forfeited, WATER) == "If, on a sale by auction, the buyer fails to pay the price—"
    assert not passes(forfeited, f"Section 5(9) of the Water Act provides: “{forfeited}” [1]")
    assert passes(forfeited, f"If the buyer fails to pay the price, “{forfeited}” [1].")


def test_the_rule_after_a_list_under_a_bare_case_holds_in_that_case() -> None:
    rule = "the landlord may end the lease by written notice to the tenant"
    held_unless_stated(rule, "(8)", f"Where a tenant of a dwelling house fails to pay the rent, “{rule}” [1].")
    # After a list under an opening that states no case, the clause is a rule of its own.
    inspect = "the tenant may inspect the repairs at any reasonable time"
    hits, citation = abandoned(inspect)
    assert gated(f"Section 10(9) of the Tenancy Act provides: “{inspect}” [1]", [citation], hits) == []


def test_an_item_of_a_list_opened_by_if_alone_is_part_of_a_case_not_a_rule() -> None:
    fire = "the premises have been destroyed by fire"
    hits, citation = abandoned(fire)
    fact = f"Under section 10 of the Tenancy Act “{fire}” [1]."
    assert gated(fact, [citation], hits) == [fact]
    assert gated(f"Under section 10 of the Tenancy Act the lease ends if “{fire}” [1].", [citation], hits) == []
    assert list_case(fire, ABANDONED) == "If—"


def test_a_case_ended_by_a_stop_printed_for_a_comma_is_still_the_case_of_the_rule_after_it() -> None:
    rule = "the landlord shall give the tenant a certified copy of the record of the lease"
    held_unless_stated(rule, "(2)", f"If a lease is lost and its terms are proved before a magistrate, “{rule}” [1].")


def test_a_quote_cut_from_the_negated_subject_of_its_verb_says_the_opposite() -> None:
    hits, citation = tenancy("shall keep animals on the land")
    cut = "Section 9 of the Tenancy Act provides that a tenant “shall keep animals on the land” [1]"
    assert gated(cut, [citation], hits) == [cut]
    assert gated("Under section 9 of the Tenancy Act, no tenant “shall keep animals on the land” [1]", [citation],
                 hits) == []  # fmt: skip
    # Behind words that set the rule's scope ("Subject to subsection (8), no landlord shall …").
    hits, citation = tenancy("shall enter the land without notice")
    behind = "Section 9 of the Tenancy Act provides that a landlord “shall enter the land without notice” [1]"
    assert gated(behind, [citation], hits) == [behind]


def test_quotes_from_two_sections_named_together_are_each_judged_in_their_own_and_both_cited() -> None:
    deposit = "A landlord shall keep a deposit in a separate account."
    notice = "A tenant shall give one month's notice before leaving."
    hits = [hit("sample/act/2003/2", "Tenancy Act", "3", "Deposits", f"(1) {deposit}", 0),
            hit("sample/act/2003/2", "Tenancy Act", "4", "Notice", f"(1) {notice}", 1)]  # fmt: skip
    citations = [
        Citation(index=n, doc_key="sample/act/2003/2", title="Tenancy Act", section=f"section {n + 2}",
                 section_id=f"sample/act/2003/2#s{n + 2}", heading=h, chunk_id="c0", quote=q)
        for n, h, q in ((1, "Deposits", deposit), (2, "Notice", notice))
    ]  # fmt: skip
    both = f"Sections 3 and 4 of the Tenancy Act provide: “{deposit[:-1]}” [1] and “{notice[:-1]}” [2]."
    result = gate_model_answer(both, {c.index: c for c in citations}, {h.chunk.section_id: h.chunk.text for h in hits})
    assert result.failed == [] and result.sentences[0].cited == [1, 2]
    # A quote that is in neither named section is not verified by the other's words.
    wrong = f"Sections 3 and 4 of the Tenancy Act provide: “{deposit[:-1]}” [1] and “A tenant may leave at once” [2]."
    assert gated(wrong, citations, hits) == [wrong]


def test_a_quote_naming_several_sections_as_its_provision_writes_them_is_still_its_own() -> None:
    # The provision writes "section 5 , 6 and 7" with a space before each comma; the sentence, read with its markers
    # stripped, without: the quoted reference is the provision's words, not a pointer to sections 5, 6 and 7.
    rule = "All fees received under section 5 , 6 and 7 shall form part of the Fund."
    hits, citation = offer("sample/act/2003/2", "Tenancy Act", "9", "The Fund", f"(3) {rule}", rule)
    assert gated(f"Section 9(3) of the Tenancy Act provides: “{rule}” [1]", [citation], hits) == []


async def test_a_sentence_the_answer_has_already_said_is_held_back_whole_and_streamed() -> None:
    rule = "A tenant shall give one month's notice before leaving."
    hits, citation = offer("sample/act/2003/2", "Tenancy Act", "4", "Notice", f"(1) {rule}", rule)
    said = "Under section 4 of the Tenancy Act, a tenant must give one month's notice before leaving [1]."
    looped = f"{said} {said}\n\n{said}"
    assert gated(looped, [citation], hits) == [said, said]
    shown = await streamed(looped, citation, hits, step=7)
    assert " ".join(shown.split()) == said
    # A short sentence may fairly recur.
    assert gated("A tenant must give notice [1]. A tenant must give notice [1].", [citation], hits) == []


async def test_an_unmarked_list_item_under_a_cited_lead_in_is_judged_against_the_lead_ins_provision() -> None:
    rule = "A tenant shall— (a) keep the premises clean; and (b) give notice."
    hits, citation = offer("sample/act/2003/2", "Tenancy Act", "4", "Duties of tenant", f"(1) {rule}", rule)
    lead = "Under section 4 of the Tenancy Act a tenant must [1]:"
    assert gated(f"{lead}\n- keep the premises clean\n- give notice", [citation], hits) == []
    # An item too short to be a claim on its own still says what the lead-in says of it.
    wrong = f"{lead}\n- keep the premises clean\n- pay rates"
    assert gated(wrong, [citation], hits) == ["- pay rates"]
    assert "pay rates" not in await streamed(wrong, citation, hits, step=6)
    # A list under a lead-in that cites nothing, or that is no lead-in, is not judged this way.
    assert gated("Here is what the Act says:\n- pay rates\n- be kind", [citation], hits) == []
