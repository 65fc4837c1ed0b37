"""Polarity: a sentence that says the opposite of the provision it shares its words with is not supported by it."""

import json
from pathlib import Path

import pytest

from api.composer.judge.gate import gate_model_answer
from api.composer.judge.polarity import (
    _BOUND,
    forbids,
    gives_to_another,
    grants_discretion,
    imposes_discretion,
    opposite,
    overstates,
    requires_factor,
)
from api.composer.judge.rules import support
from api.schemas.events import Citation

DATA = Path(__file__).parent / "data"
PROVISIONS: dict[str, str] = json.loads((DATA / "provisions.json").read_text())
EXAMPLES = [json.loads(line) for line in (DATA / "polarity.jsonl").read_text().splitlines() if line.strip()]


def _judged() -> list[tuple[dict[str, object], bool]]:
    return [(e, support(str(e["sentence"]), PROVISIONS[str(e["provision"])]).supported) for e in EXAMPLES]


def test_no_supported_sentence_is_rejected_for_its_polarity() -> None:
    # Every sentence labelled supported, negated or not, worded like its clause or not, still passes.
    wrongly_rejected = [str(e["sentence"]) for e, supported in _judged() if e["supported"] and not supported]
    assert len([e for e in EXAMPLES if e["supported"]]) >= 10
    assert wrongly_rejected == []


def test_most_opposite_sentences_are_caught() -> None:
    # Two flips stay out of reach (the labour provision's clause is all exceptions: "unless otherwise lawfully
    # terminated", "not less favourable"); every other one is caught.
    flips = [e for e in EXAMPLES if not e["supported"]]
    missed = [str(e["sentence"]) for e, supported in _judged() if not e["supported"] and supported]
    assert len(flips) >= 12
    assert len(missed) <= 2, missed
    assert all("undertaking" in sentence for sentence in missed)


def test_the_mismatches_that_count_and_the_wordings_that_do_not() -> None:
    clause = "No person under the age of eighteen years may contract a marriage."
    assert forbids(clause) and not forbids("A marriage may be solemnised at any time.")
    assert opposite("A person under eighteen may marry.", clause)  # a permission the clause forbids
    assert opposite("The deposit need not be refunded.", "The deposit shall be refunded to the tenant.")
    assert not opposite("Nobody under 18 can marry.", clause)  # both forbid
    assert not opposite("The minimum age of marriage is 18.", clause)  # asserts nothing the clause denies
    # Conditions and bounds word the same rule either way round.
    assert not opposite("A landlord may ask for up to two months' rent.", "A landlord shall not require more than "
                        "two months' rent.")  # fmt: skip
    assert not opposite("An employee cannot be dismissed without a hearing.", "An employer shall give a hearing.")
    assert not opposite("A person may marry with consent.", "No person shall marry without consent.")
    # Leave to go past a limit the clause sets (a real small model's "may charge interest above the prescribed rate").
    limit = "No lender shall stipulate for, demand or receive interest at a rate greater than the prescribed rate."
    assert opposite("A lender may charge interest above the prescribed rate.", limit)
    assert opposite("A lender can receive interest at more than the prescribed rate.", limit)
    assert not opposite("A lender may charge interest up to the prescribed rate.", limit)  # within the limit
    assert not opposite("A lender may not charge more than the prescribed rate.", limit)  # both forbid
    deadline = "The other shall, not later than thirty days after the date of marriage, be transmitted."
    assert opposite("The entry may be sent later than thirty days after the marriage.", deadline)
    # Extending a rule to what the clause excludes from it; saying what a prohibition covers is not that.
    excluded = "Subsection (1) does not apply where the defect was caused by the consumer's misuse of the goods."
    assert opposite("The right also covers a defect caused by the consumer's misuse of the goods.", excluded)
    assert not opposite("The right does not cover a defect caused by the consumer's misuse.", excluded)
    assert not opposite("The prohibition covers every employer.", "No employer shall dismiss an employee for that.")


def test_the_gate_removes_a_sentence_that_reverses_its_cited_provision() -> None:
    text = PROVISIONS["marriages_s3"]
    offered = {1: Citation(index=1, doc_key="zw/act/2022/1", title="Marriages Act", section_id="zw/act/2022/1#s3",
                           section="section 3", chunk_id="zw/act/2022/1#s3/c0", quote=text[:120])}  # fmt: skip
    provisions = {"zw/act/2022/1#s3": text}
    reversed_ = gate_model_answer("A person under the age of eighteen years may contract a marriage [1].", offered,
                                  provisions)  # fmt: skip
    assert not reversed_.passed and reversed_.answer == ""
    assert reversed_.summary()["claims_opposite"] == 1
    kept = gate_model_answer("No person under the age of eighteen years may contract a marriage [1].", offered,
                             provisions)  # fmt: skip
    assert kept.passed and kept.summary()["claims_opposite"] == 0


@pytest.mark.parametrize(
    ("sentence", "window", "imposed"),
    [
        ("The Director must grant assistance to every applicant.", "The Director may grant assistance.", True),
        ("The court is required to order a refund.", "The court may order a refund.", True),
        # The window imposes a duty too: the sentence may restate it.
        (
            "The officer must acknowledge the request.",
            "(1) A person may apply. (2) The officer must acknowledge it.",
            False,
        ),
        # A deadline on using a permission is how it is usually put in plain words.
        ("You must appeal within thirty days.", "A person aggrieved may appeal within thirty days.", False),
        ("The Director may grant assistance.", "The Director may grant assistance.", False),
        ("The employer must pay the wages.", "The employer shall pay the wages.", False),
    ],
)
def test_a_duty_where_the_provision_gives_a_discretion_is_an_opposite_meaning(
    sentence: str, window: str, imposed: bool
) -> None:
    assert imposes_discretion(sentence, window) is imposed


UNFAIR = ("(2) An employee is unfairly dismissed if the employer fails to show that he dismissed the employee in terms "
          "of an employment code.")  # fmt: skip
NO_OTHER = ("(2) No person other than the parent or guardian of a child shall give a written order referred to in "
            "subsection (1) to such child.")  # fmt: skip
LEAVE = ("Provided that the complainant's representative shall seek the leave of the court to make an application "
         "for a protection order without the consent of the complainant.")  # fmt: skip


@pytest.mark.parametrize(
    ("sentence", "clause", "flipped"),
    [
        # A negation inside a condition, leading or trailing, is the condition's, not what the sentence asserts.
        ("If he cannot show that, the dismissal counts as unfair.", UNFAIR, False),
        ("A dismissal is unfair if the employer cannot show that it followed the code.", UNFAIR, False),
        # A word against its negative by prefix.
        ("If he cannot show that, the dismissal still counts as fair.", UNFAIR, True),
        # Denying the consequence the clause attaches.
        ("Refusing to answer those questions is not a crime.",
         "(4) Any person who refuses to answer any question shall be guilty of an offence.", True),
        ("Refusing to answer those questions is a crime.",
         "(4) Any person who refuses to answer any question shall be guilty of an offence.", False),
        # Validity the clause says is unaffected.
        ("Failing to register makes the marriage invalid.",
         "(3) Failure to register a marriage does not affect the validity of the marriage.", True),
        ("Failing to register does not make the marriage invalid.",
         "(3) Failure to register a marriage does not affect the validity of the marriage.", False),
        ("The Council's acts are not invalid because of a vacancy.",
         "A casual vacancy in the Council shall not invalidate any act of the Council.", False),
        # A blanket permission of what the clause forbids save in an exception the sentence never names.
        ("A parent may let a child stay away from school to work for money.",
         "(1) Except in such circumstances as may be prescribed, no parent shall permit the child to absent himself "
         "from school in order to engage in employment for gain.", True),
        ("A legal practitioner may appear for a party.", "No person other than a legal practitioner may appear for a "
         "party.", False),
        # A conditional permission past a limit the clause sets without any condition.
        ("A lender may charge interest above the prescribed rate if the borrower agrees in writing.",
         "No lender shall stipulate for, demand or receive interest at a rate greater than the prescribed rate.", True),
        # A party the clause excepts, brought into the rule.
        ("Any adult, not only the child's parent or guardian, may give a child such an order.", NO_OTHER, True),
        ("Only the child's parent or guardian may give the child such a written order.", NO_OTHER, False),
        ("Even if he did not publish the notice, the regulations are valid.",
         "Unless he considers it inexpedient, the President shall publish a notice.", False),
        # A requirement waived, and one the clause itself does without.
        ("The employee does not need a medical certificate to get it.",
         "(2) Sick leave shall be granted on production of a certificate signed by a registered medical practitioner.",
         True),
        ("Your representative can apply for you without the court's permission.", LEAVE, True),
        ("Your representative can apply for you without your consent.", LEAVE, False),
        ("A person may import these chemicals without the Minister's authority.",
         "(2) No person shall import any toxic chemical without the authority of the Minister.", True),
        ("A data controller may process it without the consent of the data subject where the law requires it.",
         "No data controller shall process personal information without the consent of the data subject, unless the "
         "processing is necessary to comply with an obligation imposed by law.", False),
        # One party alone, where the clause has two agree.
        ("The rest day is whatever day your employer alone decides.",
         "(1) Every employee shall be entitled to a weekly rest on a day agreed by the employer and employee.", True),
        ("The rest day is a day your employer and you agree on.",
         "(1) Every employee shall be entitled to a weekly rest on a day agreed by the employer and employee.", False),
    ],
)  # fmt: skip
def test_conditions_exceptions_parties_and_waivers_read_against_the_clause(
    sentence: str, clause: str, flipped: bool
) -> None:
    assert opposite(sentence, clause) is flipped


def test_a_prohibition_beside_the_closest_clause_does_not_hide_its_discretion() -> None:
    closest = ("(5) Where a person is in possession of unsolicited goods, he or she may (a) retain the goods; or (b) "
               "at the risk and expense of the supplier, return the goods to the supplier.")  # fmt: skip
    window = f"(3)(b) He or she shall not be responsible for any cost of recovering the goods. {closest}"
    assert not imposes_discretion("You must send them back, at the supplier's risk and expense.", window)
    assert imposes_discretion("You must send them back, at the supplier's risk and expense.", window, closest)
    assert not imposes_discretion("You may keep them or send them back.", window, closest)


@pytest.mark.parametrize(
    ("sentence", "clause", "over"),
    [
        ("Once full-pay sick leave runs out, an employee is always entitled to ninety more days on half pay.",
         "An employer shall grant a further ninety days on half pay if the practitioner considers a return probable.",
         True),
        ("The provision applies regardless of whether the acquisition was voluntary.",
         "A citizen who by voluntary act acquires a foreign citizenship shall cease to be a citizen.", False),
        ("This provision applies regardless of whether the acquisition was through marriage.",
         "A citizen who, other than by marriage, acquires a foreign citizenship shall cease to be a citizen unless he "
         "renounces it.", True),
        ("A court may extend the order whenever a parent asks for it.",
         "The court may, on application, extend the order beyond eighteen where the child is in school.", True),
        # A clause itself absolute, or a sentence that states the rule as the clause does.
        ("You may give up legal aid at any time.", "An aided person may at any time give up legal aid.", False),
        ("An employee is entitled to ninety more days on half pay if the doctor thinks a return likely.",
         "An employer shall grant a further ninety days on half pay if the practitioner considers a return probable.",
         False),
    ],
)  # fmt: skip
def test_a_rule_stated_as_absolute_against_a_conditional_clause(sentence: str, clause: str, over: bool) -> None:
    assert overstates(sentence, clause) is over


def test_a_denial_in_other_words_and_a_requirement_said_to_be_unneeded() -> None:
    counted = "(3) All Saturdays and Sundays falling within a period of leave shall be counted as part of the leave."
    assert opposite("Saturdays and Sundays in a period of leave are not counted as leave.", "(3) Saturdays and "
                    "Sundays in a period of leave shall be counted as part of the leave.")  # fmt: skip
    assert not opposite("Saturdays and Sundays in a period of leave count as leave.", counted)
    # A negation in a relative clause is not the sentence's own.
    assert not opposite("A person who does not pay the fee commits an offence.",
                        "Any person who fails to pay the fee shall be guilty of an offence.")  # fmt: skip
    burial = "(1) No person shall conduct any funeral service in connection with any burial without a burial order."
    assert opposite("No burial order is needed to hold a funeral service.", burial)
    assert opposite("A burial order is not required to hold a funeral service.", burial)
    assert not opposite("You need a burial order to hold a funeral service.", burial)


def test_a_duty_to_do_what_the_closest_clause_leaves_to_discretion() -> None:
    closest = ("(1) The Director may, on application made by a destitute older person, grant social welfare assistance "
               "to such person where he is satisfied that the person has need of it.")  # fmt: skip
    window = f"{closest} (2) The Director shall keep a register of the assistance granted."
    duty = "The Director must grant social welfare assistance to every destitute older person who applies."
    assert not imposes_discretion(duty, window)  # the window's other clause imposes a duty
    assert imposes_discretion(duty, window, closest)  # but not to grant: that is left to discretion
    assert not imposes_discretion("The Director must keep a register of the assistance.", window, closest)


def test_keeping_what_the_clause_makes_the_condition_of_returning() -> None:
    clause = ("(1) A purchaser shall, at any time before the final payment falls due, be entitled, upon the return to "
              "the seller of the goods, to terminate the agreement by giving notice in writing.")  # fmt: skip
    assert opposite("A buyer can end a hire-purchase agreement by written notice while keeping the goods.", clause)
    assert not opposite("A buyer can end the agreement by written notice if he returns the goods.", clause)


def test_a_list_item_is_read_with_the_lead_in_it_completes() -> None:
    # The provision's sentences as the corpus's chunks break them: the lead-in's "may" on one line, its items on the
    # next; a later subsection imposes other duties.
    provision = (
        "(5) Where a person is in possession of any unsolicited goods, he or she may—\n"
        "(a) retain the goods; or (b) at the risk and expense of the supplier, return the goods to the supplier.\n"
        "(6) No supplier shall demand any payment for unsolicited goods, and every supplier shall refund it."
    )
    assert support("You must send them back, at the supplier's risk and expense.", provision).opposite
    assert not support("You may send them back, at the supplier's risk and expense.", provision).opposite


def test_a_discretion_where_the_clause_imposes_a_duty_on_the_same_party_and_act() -> None:
    clause = (
        "(3) If the employee has used up the maximum period of sick leave on full pay, an employer shall, at the "
        "request of the employee, grant a further period of up to ninety days' sick leave on half pay."
    )
    assert grants_discretion("An employer may grant a further period of up to ninety days on half pay.", clause)
    assert opposite("An employer may grant a further period of up to ninety days on half pay.", clause)
    # Another party's right, another act, or a status the clause gives ("shall be competent"), not a duty.
    assert not grants_discretion("The employee may ask for a further period on half pay.", clause)
    assert not grants_discretion("An employer may refuse leave on full pay.", clause)
    competent = "(1) Every person of or over the age of sixteen years shall be competent to witness a will."
    assert not grants_discretion("A person of sixteen can witness a will.", competent)


def test_a_power_or_right_denied_in_so_many_words() -> None:
    reduce = "(2) If the penalty is out of proportion to the prejudice suffered, the court may— (a) reduce the penalty."
    assert forbids("A court has no power to reduce the penalty.") and forbids("The owner has no right to claim it.")
    assert opposite("A court has no power to reduce a penalty that is out of proportion.", reduce)
    assert not opposite("A court may reduce a penalty that is out of proportion to the prejudice.", reduce)
    assert forbids("and even then it can never fully replace pay in money")


def test_one_party_alone_against_a_clause_that_needs_another_s_say() -> None:
    removal = ("The Commissioner-General may be removed from office by the President for any reason after consultation "
               "with the Minister.")  # fmt: skip
    assert opposite("The President may remove the Commissioner-General on his own, without consulting anyone.", removal)
    assert not opposite("The President may remove the Commissioner-General after consulting the Minister.", removal)


def test_words_whose_opposite_is_another_word() -> None:
    compulsory = "Notification and registration of the birth or death of any person shall be compulsory."
    assert opposite("Notifying and registering a birth or a death is voluntary.", compulsory)
    assert not opposite("Notifying and registering a birth or a death is compulsory.", compulsory)


def test_an_exception_is_named_by_its_own_words_not_those_of_the_rule() -> None:
    clause = ("No patient accommodated at any Government hospital, other than a private patient whose private "
              "practitioner has been granted access, shall have the right to the services of any specific health "
              "practitioner.")  # fmt: skip
    assert opposite("Every patient in a government hospital may insist on a health practitioner of his choice.", clause)
    assert not opposite("A private patient may have the services of his own private practitioner.", clause)


def test_holding_even_in_the_case_the_clause_ends_it_or_makes_it_void() -> None:
    void = "(2) A warranty in terms of subsection (1) shall— (b) be void if the consumer has misused the goods."
    assert opposite("The warranty on repaired goods applies even if the consumer has misused the goods.", void)
    ends = "(1) An order for the periodic payment of maintenance to a spouse shall cease when the spouse remarries."
    assert opposite("Maintenance ordered for a former spouse continues even after that spouse remarries.", ends)
    assert not opposite("Maintenance ordered for a former spouse ends when that spouse remarries.", ends)


def test_before_a_court_is_where_not_when() -> None:
    final = ("A judgment of a small claims court shall be final and no appeal shall lie from it, but any party may "
             "bring the proceedings on review before the High Court.")  # fmt: skip
    assert opposite("A small claims court judgment can be appealed to the High Court.", final)
    claim = "You cannot appeal a small claims judgment, but you can take it to the High Court on review."
    assert support(claim, final).supported


def test_leave_needed_for_what_may_be_done_at_any_time_and_a_licence_put_off() -> None:
    early = "A purchaser shall at all times be entitled to pay any instalment of the purchase price before it is due."
    assert opposite("A buyer needs the seller's consent before paying an instalment early.", early)
    assert not opposite("A buyer may pay an instalment before it is due.", early)
    licence = "(1) No person shall work as a security guard unless he holds a licence issued under this Act."
    assert opposite("A person may work as a security guard for a year before obtaining a licence.", licence)


def test_a_sentence_joining_two_claims_is_read_claim_by_claim() -> None:
    kind = ("(2) Remuneration may be payable in kind only in industries or occupations where such payment is "
            "customary, and shall be subject to the following conditions— (a) the value shall be fair and reasonable; "
            "(e) remuneration in kind shall not substitute entirely for remuneration in money.")  # fmt: skip
    true = (
        "Paying workers in kind is only allowed where customary, and even then it can never fully replace pay in money."
    )
    false = "Paying workers in kind is only allowed where it is customary, and then it can fully replace pay in money."
    assert support(true, kind).supported
    assert support(false, kind).opposite
    # A condition put first is no claim of its own.
    assert not support("If you are married and you are not the parent, a court may still order you to pay.",
                       "(1) A court may order any person married to a parent to pay.").opposite  # fmt: skip


# A civil-partnership section (the shared corpus's Marriages Act, 2022, s41(1)-(3)): what a court may weigh, none of
# it necessary.
PARTNERSHIP = (
    "(1) A relationship between a man and a woman who— (a) are both over the age of eighteen years; and (b) have lived "
    "together without legally being married to each other; and (c) are not within the degrees of affinity or "
    "consanguinity as provided in section 7 ; and (d) having regard to all the circumstances of their relationship, "
    "have a relationship as a couple living together on a genuine domestic basis; shall be regarded as being in a "
    "civil partnership. (2) The circumstances referred to in paragraph (d) may include— (a) the duration of the "
    "relationship; (b) the nature and extent of their common residence; (c) whether a sexual relationship exists; (d) "
    "the degree of financial dependence or interdependence, and any arrangements for financial support, between them. "
    "(3) No particular factor in relation to any circumstance may be regarded as necessary in determining whether or "
    "not the persons concerned have a civil partnership ."
)


@pytest.mark.parametrize(
    ("sentence", "made_necessary"),
    [
        ("To be civil partners, a couple must have a sexual relationship.", True),
        ("A civil partnership requires a common residence and financial interdependence.", True),
        ("The circumstances a court may weigh include how long the relationship lasted and whether they share a "
         "home.", False),
        ("A couple must have lived together without being legally married to each other.", False),  # (1)(b)
        ("The court must consider the duration of the relationship.", False),  # a duty to weigh: imposes_discretion
    ],
)  # fmt: skip
def test_what_a_court_may_weigh_is_not_made_a_requirement(sentence: str, made_necessary: bool) -> None:
    assert requires_factor(sentence, PARTNERSHIP) is made_necessary
    if made_necessary:
        assert support(sentence, PARTNERSHIP).opposite


# The shared corpus's Births and Deaths Registration Act s15 and Building Societies Act s67: a duty on one party to
# act towards another.
ABANDONED = (
    "If any new- born living child is found abandoned it shall be the duty of any person who has attained the age of "
    "eighteen years finding such child or, failing such person, of any person over the age of eighteen years in whose "
    "charge it may be placed, within forty-two days of finding such child or, as the case may be, taking charge of it, "
    "to give to the registrar of the district in which such child was found or taken charge of, notice of the birth "
    "in the prescribed form and to furnish to the best of his knowledge the prescribed particulars."
)
ANNUAL_REPORT = (
    "The Registrar shall, within six months from the 1st January in each year, submit to the Minister a report in "
    "regard to building society business in Zimbabwe during the twelve months ended on the preceding 31st December."
)


@pytest.mark.parametrize(
    ("sentence", "clause", "turned"),
    [
        ("When an abandoned newborn child is found, the registrar may give notice of its birth.", ABANDONED, True),
        ("An adult who finds an abandoned newborn child must give notice of its birth to the registrar.", ABANDONED,
         False),
        ("The registrar must be given notice of the birth of an abandoned child.", ABANDONED, False),  # a passive
        ("Each year the Minister must submit to the Registrar a report on building society business.", ANNUAL_REPORT,
         True),
        ("Each year the Registrar must submit to the Minister a report on building society business.", ANNUAL_REPORT,
         False),
    ],
)  # fmt: skip
def test_a_duty_is_not_given_to_the_party_it_is_owed_to(sentence: str, clause: str, turned: bool) -> None:
    assert gives_to_another(sentence, clause) is turned
    assert opposite(sentence, clause) is turned


def test_within_bounds_only_a_time_or_an_amount() -> None:
    """A time or an amount is bounded by "within"; "within a period of leave" says where, so a sentence denying what
    the clause states is read as a denial."""
    counted = "(3) Saturdays, Sundays and public holidays falling within a period of vacation leave shall be counted."
    assert opposite("Saturdays and Sundays within a period of vacation leave are not counted.", counted)
    assert opposite("Public holidays within the leave are not counted as part of it.", counted)
    assert not opposite("Saturdays and Sundays within a period of vacation leave are counted.", counted)
    for bound in ("within thirty days", "within 14 days", "within a reasonable time", "within the prescribed period"):
        assert _BOUND.search(f"notice must be given {bound}"), bound
    for bound in ("within the prescribed period of fourteen days", "within the period of notice"):
        assert _BOUND.search(f"notice must be given {bound}"), bound
    for place in ("within a period of vacation leave", "within the family", "within the meaning of section 3",
                  "within section 12", "within Part 3", "within one of the categories"):  # fmt: skip
        assert not _BOUND.search(f"what falls {place}"), place


def test_a_consequence_the_clause_takes_away_is_not_given() -> None:
    """A clause that takes acts out of an offence is contradicted by a sentence making one of them an offence, though
    the sentence denies nothing; one that repeats the denial, or makes the offence depend on an exception, is not."""
    excluded = ("(2) The following acts of domestic violence shall not constitute an offence— (a) emotional and verbal "
                "abuse; and (b) economic abuse referred to in section 3.")  # fmt: skip
    assert opposite("Economic abuse within the family is a criminal offence.", excluded)
    assert opposite("Verbal abuse by a spouse is punishable as a crime.", excluded)
    assert not opposite("Economic abuse is domestic violence but is not in itself a criminal offence.", excluded)
    assert not opposite("Economic abuse is not an offence unless it is also an assault.", excluded)
    # Immunity told in other words is the same denial.
    for exempt in (
        "Economic abuse is excluded from the criminal offence of domestic violence.",
        "Emotional and verbal abuse are exempt from criminal prosecution as domestic violence.",
    ):
        assert not opposite(exempt, excluded), exempt
    reports = ("(3) A person who, in good faith, reports a suspected case of child abuse to a police officer shall not "
               "be guilty of an offence.")  # fmt: skip
    assert not opposite("A person who reports suspected abuse in good faith is immune from prosecution.", reports)
    assert not opposite(
        "A person who reports suspected abuse in good faith is protected from criminal liability.", reports
    )
    assert opposite("A person who reports suspected child abuse in good faith commits an offence.", reports)
    discloses = "A medical practitioner who discloses information under subsection (2) does not commit an offence."
    assert opposite(
        "A medical practitioner who discloses information under subsection (2) commits an offence.", discloses
    )
    both = ("(1) Any person who fails to register shall be guilty of an offence: Provided that a person shall not be "
            "guilty of an offence if he registers within seven days.")  # fmt: skip
    assert not opposite("Failing to register is an offence.", both)
