"""Claim support: the facts check and the calibrated closeness measure, on labelled examples kept as test data."""

import json
from pathlib import Path

import pytest

from api.composer.judge.conditions import conditions
from api.composer.judge.facts import bodies, missing_facts, numbers, quantities
from api.composer.judge.meaning import SUPPORT_THRESHOLD, content_terms, in_its_words, provision_units
from api.composer.judge.rules import support
from api.composer.judge.topic import off_topic, same_family

DATA = Path(__file__).parent / "data"
PROVISIONS: dict[str, str] = json.loads((DATA / "provisions.json").read_text())
EXAMPLES = [json.loads(line) for line in (DATA / "claim_support.jsonl").read_text().splitlines() if line.strip()]


def test_the_labelled_examples_cover_both_outcomes_and_real_provisions() -> None:
    assert len(EXAMPLES) >= 40
    labels = [e["supported"] for e in EXAMPLES]
    assert labels.count(True) >= 15 and labels.count(False) >= 15
    assert {e["provision"] for e in EXAMPLES} <= set(PROVISIONS)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["sentence"][:48] for e in EXAMPLES])
def test_each_labelled_example_is_classified_as_labelled(example: dict[str, object]) -> None:
    result = support(str(example["sentence"]), PROVISIONS[str(example["provision"])])
    assert result.supported is example["supported"], (result.score, result.missing)


def test_the_threshold_separates_the_examples_whose_facts_all_occur() -> None:
    # Among sentences whose facts all occur in the provision, meaning alone decides: the threshold must sit above
    # every unsupported one and at or below every supported one (a margin either side, so it is not overfitted).
    scored = [(support(e["sentence"], PROVISIONS[e["provision"]]), e["supported"]) for e in EXAMPLES]
    facts_ok = [(s.score, label) for s, label in scored if not s.missing]
    lowest_supported = min(score for score, label in facts_ok if label)
    highest_unsupported = max(score for score, label in facts_ok if not label)
    assert highest_unsupported < SUPPORT_THRESHOLD <= lowest_supported
    assert lowest_supported - highest_unsupported >= 0.05


def test_numbers_compare_by_value_whether_digits_or_words() -> None:
    assert numbers("at least 18 years") == numbers("eighteen years") == {18.0}
    assert numbers("twenty-one days") == {21.0}
    assert numbers("a fine of $1 000") == numbers("1,000 dollars") == {1000.0}
    assert numbers("five per cent") == numbers("5%") == {5.0}
    assert quantities("five per cent") == quantities("5 %") == {(5.0, "percent")}
    assert not missing_facts("The fee is 5% of the price.", "a fee of five per cent of the price")
    assert not missing_facts("No person under 18 may marry.", "No person under the age of eighteen years may marry")
    assert not missing_facts("The deposit is refunded within 14 days.", "refunded within fourteen days")


def test_references_and_labels_are_not_facts() -> None:
    text = ("Section 3(1) of the Marriages Act [Chapter 5:11], read with s 12A and sections 7 to 11 of Act 5 of 2001 "
            "and the Labour Act, 2004, says so [2]; see paragraph (b).")  # fmt: skip
    assert numbers(text) == set()


def test_a_number_must_keep_its_unit() -> None:
    provision = PROVISIONS["marriages_s3"]  # "level 10" and "five years"
    assert missing_facts("The penalty is imprisonment for up to ten years.", provision) == ["10 year"]
    assert missing_facts("The fine may reach level 10.", provision) == []
    assert missing_facts("Imprisonment may be for up to 5 years.", provision) == []


def test_invented_amounts_percentages_dates_and_bodies_are_missing() -> None:
    provision = PROVISIONS["tenancy_s3"]
    assert missing_facts("The deposit may not exceed $500.", provision) == ["500 currency"]
    assert missing_facts("Rent may rise by 10% a year.", provision) == ["10 percent"]
    assert missing_facts("This applies from 1 January 2020.", provision) == ["1", "2020", "january"]
    assert missing_facts("The Rent Board hears deposit disputes.", provision) == ["rent board"]
    assert bodies("the Registrar-General and the High Court") == {"registrar-general", "high court"}


def test_the_liquor_licence_provision_does_not_support_a_speed_limit() -> None:
    result = support("The speed limit in urban areas is 60 km/h.", PROVISIONS["liquor_s34"])
    assert not result.supported and result.missing == ("60 km",)


def test_the_best_window_is_a_verbatim_span_of_the_provision() -> None:
    provision = PROVISIONS["marriages_s3"]
    result = support("The penalty is a fine not exceeding level 10 or imprisonment up to five years.", provision)
    start, end = result.span
    assert "level 10" in provision[start:end] and provision[start:end].startswith("(3)")
    assert all(provision[a:b].strip() == provision[a:b] for a, b in provision_units(provision))


def test_a_topic_word_counts_as_there_by_its_family_or_its_legal_equivalent() -> None:
    provision = "No employer shall make any deduction from an employee's remuneration. No person shall have in his " \
                "possession any firearm."  # fmt: skip
    topic = {"boss": frozenset({"employer"}), "deduct": frozenset[str](), "possess": frozenset[str]()}
    assert off_topic("Your boss may not deduct money from your wages.", provision, topic) == []
    assert off_topic("Nobody may possess a firearm without a certificate.", provision, topic) == []
    # A topic word the sentence does not repeat is not checked; one it repeats must be in the provision.
    assert off_topic("A student may not possess a firearm.", provision, {"student": frozenset[str]()}) == ["student"]
    assert off_topic("Nobody may possess a firearm.", provision, {"student": frozenset[str]()}) == []
    claim = "No student shall have in his possession any firearm."
    strays = support(claim, provision, topic={"student": frozenset[str]()})
    assert strays.off_topic == ("student",) and not strays.supported
    assert support(claim, provision).supported  # without the check it passes: every other word is the provision's


def test_a_possessive_is_its_noun() -> None:
    assert {"minister", "court"} <= content_terms("the Minister's permission and the court’s order")
    assert "yes" not in content_terms("Yes, it is an offence.")


@pytest.mark.parametrize(
    ("a", "b", "family"),
    [("evict", "eviction", True), ("possess", "possession", True), ("tenant", "tenanc", True), ("rent", "rental", True),
     ("customer", "customary", False), ("government", "governor", False), ("director", "directly", False),
     ("student", "studio", False), ("lose", "loss", False)],
)  # fmt: skip
def test_word_families_for_the_topic_check(a: str, b: str, family: bool) -> None:
    assert same_family(a, b) is family and same_family(b, a) is family


def test_a_legal_equivalent_shows_a_topic_word_only_with_all_its_words() -> None:
    topic = {"lawyer": frozenset({"legal practitioner"})}
    assert off_topic("A lawyer may be struck off.", "A legal practitioner may be struck off the roll.", topic) == []
    assert off_topic("A lawyer may be struck off.", "Legal costs may be struck off.", topic) == ["lawyer"]
    # "years old" is said "age" in a statute.
    assert (
        off_topic("You must be eighteen years old.", "No person under the age of eighteen years", {"old": frozenset()})
        == []
    )


def test_a_month_in_the_provision_is_one_month_and_one_alone_is_no_quantity() -> None:
    assert missing_facts("You must be given one month's notice.", "Give the employee a month's notice.") == []
    assert missing_facts("You must be given two months' notice.", "Give the employee a month's notice.") == ["2 month"]
    assert quantities("within one month") == {(1.0, "month")} and quantities("one of the parties") == set()


def test_a_count_of_things_must_be_the_provisions_count_of_the_same_things() -> None:
    provision = "each signature is made in the presence of two or more competent witnesses present at the same time"
    assert missing_facts("It must be signed in front of one competent witness.", provision) == ["1 competent witness"]
    assert missing_facts("It must be signed in front of at least two competent witnesses.", provision) == []
    # Where the provision counts nothing of the kind, "one" is left to the other checks.
    assert missing_facts("One witness signs after the testator.", "the witness signs after the testator") == []


def test_a_rate_per_period_keeps_its_period() -> None:
    provision = "a package of not less than one month's wages for every two years of service shall be paid"
    assert missing_facts("You get at least one month's wages for every year you worked.", provision) == ["1 year"]
    assert missing_facts("You get at least one month's wages for every two years you worked.", provision) == []
    assert missing_facts("You get a day of rest per week.", "one day of rest in each week") == []
    assert missing_facts("You get a day of rest per week.", "one day of rest in each month") == ["1 week"]


def test_a_count_of_occasions_may_be_said_in_other_words() -> None:
    provision = "shall be entitled to a maximum of three periods of maternity leave with any one employer"
    assert missing_facts("Paid maternity leave can be taken at most three times.", provision) == []
    assert missing_facts("Paid maternity leave can be taken at most four times.", provision) == ["4 times"]


def test_an_ordinal_day_states_a_period() -> None:
    provision = (
        "may proceed on leave not earlier than the forty-fifth day and not later than the twenty-first day prior"
    )
    assert missing_facts("You can start no earlier than 45 days and no later than 21 days before.", provision) == []
    assert missing_facts("You can start no earlier than 40 days before.", provision) == ["40 day"]
    assert (21.0, "day") in quantities("the twenty-first day") and (20.0, "") not in quantities("the twenty-first day")
    assert quantities("the first marriage") == set()


PENALTIES = (
    "(1) No person shall possess a firearm without a certificate. (2) Any person who contravenes subsection (1) shall "
    "be guilty of an offence and liable to a fine not exceeding level ten or to imprisonment for a period not "
    "exceeding five years. (3) No person shall lend a firearm. (4) No person shall sell ammunition. (5) No person "
    "shall alter a firearm. (6) No person shall store ammunition in a dwelling. (7) If any person "
    "fails to comply with the conditions of a certificate, he shall be liable to a fine not exceeding level six or to "
    "imprisonment for a period not exceeding one year."
)


def test_the_figures_of_one_sentence_must_be_stated_together() -> None:
    mixed = support(
        "Possessing one is punishable by a fine up to level ten, up to one year in prison, or both.", PENALTIES
    )
    assert any("not stated together" in fact for fact in mixed.missing), mixed
    right = support(
        "Possessing one is punishable by a fine up to level ten, up to five years in prison, or both.", PENALTIES
    )
    assert right.missing == (), right


def test_a_figure_is_placed_by_what_it_is_of_not_by_how_it_is_bounded() -> None:
    provision = (
        "(3) An employee shall be entitled to a maximum of three periods of leave: Provided that paid leave shall be "
        "granted only once during any period of twenty-four months. (4) Sick leave may not be granted once paid leave "
        "has begun."
    )
    said = support(
        "Paid leave can be taken at most three times, and not more than once in any twenty-four months.", provision
    )
    assert said.missing == (), said


def test_a_choice_belongs_to_whom_the_provision_gives_it() -> None:
    provision = (
        "the consumer may return the goods, and the supplier at the direction of the consumer, shall repair or "
        "replace the goods or refund the amount paid"
    )
    wrong = support("The supplier then chooses whether to repair or replace the goods or refund you.", provision)
    assert any("the choice" in fact for fact in wrong.missing), wrong
    assert (
        support("You then choose whether the supplier repairs or replaces the goods or refunds you.", provision).missing
        == ()
    )
    assert support("The consumer chooses whether the supplier repairs or refunds.", provision).missing == ()


def test_a_period_runs_from_the_event_the_provision_names() -> None:
    provision = "the term of every patent shall be twenty years from the date on which the application was lodged"
    wrong = support("The twenty years are counted from the day the patent was granted.", provision)
    assert any("runs from" in fact for fact in wrong.missing), wrong
    right = support("The twenty years are counted from the day the application was lodged.", provision)
    assert right.missing == (), right
    # Without a period, "from the day" is no period's start.
    assert support("A patent is valid from the day it is granted.", provision).missing == ()


def test_a_place_that_states_no_figure_of_the_kind_does_not_say_another(shared_data: Path) -> None:
    # A copyright section whose later subsection gives the State's copyright "for the period specified in
    # subsection (1)": sharing the most words with the sentence, it states no period, so it says no other one.
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as corpus:
        law = next(json.loads(line) for line in corpus if '"zw/act/2000/11"' in line[:40])
    (provision,) = [s["text"] for s in law["sections"] if str(s["section"]) == "15"]
    said = support(
        "Copyright in a computer program lasts fifty years from the end of the year in which the program is first "
        "published.",
        provision,
    )
    assert said.missing == (), said
    assert support("Copyright in a computer program lasts ten years.", provision).missing


def test_a_long_starting_event_is_read_whole() -> None:
    provision = (
        "the term of every patent shall be twenty years from the date on which the application for the patent was "
        "lodged at the Patent Office in terms of paragraph (b) of subsection (1) of section seven"
    )
    sentence = (
        "The term of a patent is twenty years from the date on which the application for the patent was lodged at the "
        "Patent Office in terms of paragraph (b) of subsection (1) of section seven."
    )
    assert support(sentence, provision).missing == ()


def test_only_figures_are_placed_a_body_is_read_over_the_whole_provision() -> None:
    provision = (
        "(1) It shall be the duty of the father or the mother of a child to give notice of the birth in the prescribed "
        "form to the registrar of the district in which the birth occurred. (2) Notice in terms of subsection (1) "
        "shall be given— (a) in the case of a birth, within forty-two days from the date of the birth; (b) in the case "
        "of a still-birth, within thirty days."
    )
    said = support("Notice of a birth must be given to the registrar of the district within forty-two days.", provision)
    assert said.missing == (), said
    assert support("Notice of a birth must be given to the registrar within sixty days.", provision).missing


# What a faithful plain-words paraphrase legitimately does: use a person's word for the law's, a phrase for one of its
# words, leave out words of how a sentence is put, spell a word with another suffix. (Provisions: real sections,
# shortened.)
UNSOLICITED = (
    "(5) Where a person is in possession of any unsolicited goods or services, he or she may— (a) retain the goods or "
    "services; or (b) at the risk and expense of the supplier or deliverer, return the goods or services to the "
    "supplier or deliverer."
)
ACCESS = (
    "(4) On the day specified in the summons, the children's court shall inquire into the matter and may, if it "
    "thinks fit, by order rescind or vary the rights of access conferred by the access order."
)
DUAL = (
    "(2) A citizen of full age who, by voluntary act other than marriage, acquires the citizenship of a foreign "
    "country shall immediately cease to be a citizen."
)


def test_a_plain_word_or_phrase_for_the_law_s_own_is_the_same_claim() -> None:
    assert support("You may keep them, or send them back at the supplier's risk and expense.", UNSOLICITED).supported
    assert support("The court can also cancel or change the access arrangements.", ACCESS).supported
    took_up = "An adult citizen who voluntarily takes up the citizenship of another country stops being a citizen " \
              "straight away."  # fmt: skip
    assert support(took_up, DUAL).supported
    assert content_terms("takes up the citizenship straight away") == content_terms("acquires citizenship immediately")
    assert content_terms("breaks the rule and commits an offence") >= content_terms(
        "contravenes … guilty of an offence"
    )
    # A plain word is folded to the law's word, so a false sentence in plain words still reads as what it says.
    assert not support("You must keep the goods and may never send them back.", UNSOLICITED).supported


def test_words_of_how_a_sentence_is_put_are_not_what_it_claims() -> None:
    said = content_terms("whether, instead, about yours, through another, anything something, doing done")
    assert said == set()
    # "The rule" names the provision, as "the law" and "the section" do: where a claim comes from, not what it claims.
    assert content_terms("The rule covers every birth") == content_terms("The section covers every birth")
    # Words of scope stay: a false sentence often turns on "even" or "every".
    assert {"even", "every"} <= content_terms("even every")


def test_a_word_is_read_in_the_provision_s_spelling_where_only_its_suffix_differs() -> None:
    assert in_its_words({"prescrib", "debt"}, {"prescript", "debt", "year"}) == {"prescript", "debt"}
    assert in_its_words({"voluntarily"}, {"voluntary"}) == {"voluntary"}
    assert in_its_words({"pay"}, {"payabl"}) == {"pay"}  # too short to be read as a family
    prescription = "(1) The period of prescription of a debt shall be thirty years in the case of a judgment debt."
    assert support("A judgment debt prescribes after thirty years, and so does a debt on a bond.", prescription).score \
        >= SUPPORT_THRESHOLD  # fmt: skip


def test_a_court_is_named_by_what_only_a_court_does() -> None:
    step = "(b) if in the event of divorce or judicial separation there is no order of maintenance made."
    assert not missing_facts("The duty ends if you separate by court order and no maintenance order is made.", step)
    assert missing_facts("The duty ends if the tribunal makes no maintenance order.", step) == ["tribunal"]


def test_a_supposition_stated_as_a_fact_is_not_what_the_provision_says() -> None:
    # "valid notwithstanding that the witnesses were unaware" says nothing of whether they were; copied word for word,
    # the supposed clause stated on its own is still read as the opposite of the rule.
    will = (
        "(4) A will shall be valid for the purposes of this section notwithstanding that the competent witnesses who "
        "signed it were unaware of its contents or were unaware that the document they were signing was a will."
    )
    lifted = "The competent witnesses who signed it were unaware of its contents or that it was a will."
    assert support(lifted, will).opposite
    faithful = "A will is still valid even if the witnesses who signed it did not know what was in it."
    assert not support(faithful, will).opposite


def test_a_figure_keeps_the_provisions_bound_whether_it_counts_the_figure_itself() -> None:
    from api.composer.judge.facts import misbounded

    will = "A person of or over the age of sixteen years may make a will."
    assert misbounded("A person may make a will at any age over 16.", will) == ["more than 16"]
    assert misbounded("Anyone older than sixteen may make a will.", will) == ["more than 16"]
    for faithful in ("Anyone aged 16 or over may make a will.", "You must be at least sixteen to make a will."):
        assert misbounded(faithful, will) == [], faithful
    penalty = "liable to imprisonment for a period not exceeding two years"
    assert misbounded("The penalty is imprisonment for less than two years.", penalty) == ["less than 2"]
    assert misbounded("The penalty is imprisonment for up to 2 years.", penalty) == []
    # A bound from the other side is how a negation puts the same rule; it is left to the other checks.
    marry = "No person under the age of eighteen years shall marry."
    assert misbounded("You must be 18 or older to marry.", marry) == []
    assert misbounded("Nobody aged 18 or under may marry.", marry) == ["at most 18"]
    # "not more than" and "of or over" are read whole, not as "more than" and "over".
    assert misbounded("A lease of not more than 3 months.", "a lease of not more than three months") == []
    assert missing_facts("A person may make a will at any age over 16.", will) == ["more than 16"]


# Section 11(1) of a births and deaths registration Act, section 131(1) of a criminal code and section 8(2) of a wills
# Act (the shared corpus's text): each gives a rule only under a condition.
BIRTH_NOTICE = (
    "(1) Subject to section twelve, it shall be the duty of the father or the mother of a child and, in the case of "
    "the death or inability of the father and the mother, the duty of— (a) the occupier of the house in which the "
    "birth or still-birth occurred, where he had knowledge of such birth or still-birth ; or (b) the person in charge "
    "of any hospital or other institution in which the birth or still-birth occurred; or (c) the headman appointed in "
    "terms of section 8 of the Chiefs and Headmen Act [Chapter 29:01] for the community in which the birth or "
    "still-birth occurred, where he had knowledge of such birth or still-birth; or (d) any person who has attained the "
    "age of eighteen years present at the birth or still-birth ; or (e) in the case of a birth, any person who has "
    "attained the age of eighteen years having charge of the child; or (f) such other person as may be prescribed; to "
    "give notice of the birth or still-birth in the prescribed form to the registrar of the district in which the "
    "birth or still-birth , as the case may be, occurred. (2) Notice in terms of subsection (1) shall be given— (a) in "
    "the case of a birth, within forty-two days from the date of the birth; (b) in the case of a still-birth , as soon "
    "as possible but in any case within thirty days of the still-birth ."
)
UNLAWFUL_ENTRY = (
    "(1) Any person who, intentionally and without permission or authority from the lawful occupier of the premises "
    "concerned, or without other lawful authority, enters the premises shall be guilty of unlawful entry into premises "
    "and liable— (a) to a fine not exceeding level thirteen or not exceeding twice the value of any property stolen, "
    "destroyed or damaged by the person as a result of the crime , whichever is the greater, or imprisonment for a "
    "period not exceeding fifteen years, or both, if the crime was committed in any one or more of the aggravating "
    "circumstances set out in subsection (2) ; or (b) in any other case, to a fine not exceeding level ten or not "
    "exceeding twice the value of any property destroyed or damaged by the person as a result of the crime , whichever "
    "is the greater, or imprisonment for a period not exceeding ten years, or both."
)
SIGNED_BY_MARK = (
    "(2) Subject to subsection (3), a will that has been signed— (a) by the testator by the making of a mark; or (b) "
    "by some other person in the testator ’s presence and at his direction; shall not be valid unless either— (i) a "
    "magistrate, presiding officer of a community court, justice of the peace, commissioner of oaths or designated "
    "official , at any time before the testator ’s death— (A) certifies on the will that he has satisfied himself as "
    "to the identity of the testator and that the will is the testator ’s will ; and (B) signs each page of the will ; "
    "or (ii) an appropriate court , on being satisfied that the will is the testator ’s will and that it was duly made "
    "by the testator , declares the will to be a valid will . (3) Subsections (1) and (2) shall not apply to soldiers "
    "wills, wills made during epidemics or oral wills."
)

# A party narrowed by a relative clause with a figure, named last or first.
STUDY_LEAVE = (
    "(1) Study leave shall be granted for a period of thirty days on full pay to an employee who has served for at "
    "least two years. (2) An employee on study leave shall continue to accrue pension rights."
)
SICK_LEAVE = (
    "(1) Sick leave shall be granted for a period of one month on full pay to an employee who has served for at least "
    "one year, and such leave shall not be deducted from the employee's accrued vacation leave."
)
REGISTRATION = (
    "(1) Any person who has been married to a citizen for at least five years, and who satisfies the prescribed "
    "conditions, is entitled, on application, to be registered as a citizen. (2) Any person who has been lawfully "
    "resident for at least ten years is entitled, on application, to be registered as a citizen."
)


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        # A party narrowed by a relative clause with a figure.
        ("You are entitled to thirty days of study leave on full pay.", STUDY_LEAVE),
        ("If you are married to a citizen, you are entitled to be registered as a citizen on application.",
         REGISTRATION),
        # A list's lead-in: the others' duty arises only on the parents' death or inability.
        ("The person in charge of the hospital where a child is born must give notice of the birth.", BIRTH_NOTICE),
        ("This includes the occupier of the house where the birth occurred and the headman of the community.",
         BIRTH_NOTICE),
        # A penalty limb: the heavier penalty only in aggravating circumstances.
        ("Anyone who enters premises without the occupier's permission can be fined up to level thirteen or twice "
         "the value of property stolen, or jailed for up to fifteen years.", UNLAWFUL_ENTRY),
        # A subject narrowed by a list: only a will signed by mark or by another person needs the certificate.
        ("A magistrate or commissioner of oaths must certify on the will that he has satisfied himself as to the "
         "identity of the testator.", SIGNED_BY_MARK),
    ],
)  # fmt: skip
def test_a_rule_given_only_under_a_condition_is_not_supported_without_it(sentence: str, provision: str) -> None:
    verdict = support(sentence, provision)
    assert verdict.dropped and not verdict.supported


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        ("If both the father and the mother have died or cannot give notice, the person in charge of the hospital "
         "where the child was born must do so.", BIRTH_NOTICE),
        ("The father or the mother of a child must give notice of the birth to the registrar.", BIRTH_NOTICE),
        ("In aggravating circumstances, such as carrying a weapon, unlawful entry carries a fine up to level thirteen "
         "or up to fifteen years in prison.", UNLAWFUL_ENTRY),
        ("Otherwise the penalty for unlawful entry is a fine up to level ten or up to ten years in prison, or both.",
         UNLAWFUL_ENTRY),
        ("A will signed by the testator's mark is valid only if a magistrate or commissioner of oaths certifies on "
         "it that he has satisfied himself as to the identity of the testator.", SIGNED_BY_MARK),
        ("If you have worked for at least two years, you get thirty days of study leave on full pay.", STUDY_LEAVE),
        # "a year" states one year.
        ("An employee who has served for a year and a half is not covered; one who has served for two years gets "
         "thirty days of study leave on full pay.", STUDY_LEAVE),
        ("You get a month of sick leave once you have served for a year.", SICK_LEAVE),
        # A party named last, with more of its limb after a comma: what follows is not given under the condition.
        ("Sick leave is not deducted from your accrued vacation leave.", SICK_LEAVE),
        # What the rule is, given to no one.
        ("Study leave lasts thirty days on full pay.", STUDY_LEAVE),
        ("Someone married to a citizen for at least five years who meets the prescribed conditions can register as a "
         "citizen.", REGISTRATION),
        # The provision's own words, and a sentence that goes on from one before it.
        ("It also provides: “(b) the person in charge of any hospital or other institution in which the birth or "
         "still-birth occurred”.", BIRTH_NOTICE),
        ("They must give it within forty-two days of the birth to the registrar of the district.", BIRTH_NOTICE),
    ],
)  # fmt: skip
def test_a_sentence_that_keeps_the_condition_or_quotes_the_provision_drops_none(sentence: str, provision: str) -> None:
    assert not support(sentence, provision).dropped


def test_a_condition_is_read_where_it_stands_and_for_what_it_governs() -> None:
    found = [(c.text, BIRTH_NOTICE[c.governed[0] : c.governed[1]].strip()) for c in conditions(BIRTH_NOTICE)]
    (governed,) = [part for text, part in found if text.startswith("in the case of the death")]
    # A lead-in's condition governs every item of its list, not the words the items share after it.
    assert "(a) the occupier" in governed and "(f) such other person" in governed and "registrar" not in governed
    # A trailing condition governs its item before it; a cross-reference and "the house in which" are none.
    knew = [part for text, part in found if text == "where he had knowledge of such birth or still-birth"]
    assert [part[:16] for part in knew] == ["the occupier of ", "the headman appo"]
    assert not any(text.startswith("Subject to") for text, _ in found)
    limbs = {c.text: UNLAWFUL_ENTRY[c.governed[0] : c.governed[1]] for c in conditions(UNLAWFUL_ENTRY)}
    (aggravated,) = [governed for text, governed in limbs.items() if "aggravating" in text]
    assert "fifteen years" in aggravated and "level ten" not in aggravated


def test_leave_to_do_what_a_clause_only_supposes_is_not_given() -> None:
    statement = (
        "(1) In respect of any loan of money at a rate of interest exceeding the prescribed rate of interest, the "
        "lender shall, on written demand by the borrower and on payment of such sum as may be prescribed, supply a "
        "statement."
    )
    assert support("A lender may charge interest above the prescribed rate.", statement).opposite
    # What the clause gives for that case is supported, and a clause that itself gives leave is left alone.
    kept = "A lender who lends above the prescribed rate must supply a statement when the borrower asks in writing."
    assert support(kept, statement).supported
    leave = "(2) Where the borrower has repaid the loan, the lender may retain the statement of account."
    assert not support("A lender may retain the statement of account once the borrower has repaid.", leave).opposite


YOUNG_PERSONS = (
    "11. Employment of young persons (1) No employer shall employ any person— (a) as an apprentice who is under the "
    "age of sixteen years. (2) Any contract of apprenticeship with an apprentice below the age of eighteen years shall "
    "be void, but such person may enforce any rights that have accrued to him. (3) A person under the age of eighteen "
    "years but not younger than sixteen years may— (a) perform work at a school that is part of a course of training."
)


def test_an_attained_age_is_that_age_or_over() -> None:
    finder = ("If a child is found abandoned it shall be the duty of any person who has attained the age of eighteen "
              "years finding such child to give notice to the registrar within forty-two days.")  # fmt: skip
    assert not missing_facts(
        "Anyone aged eighteen or over who finds an abandoned child must notify the registrar.", finder
    )
    assert missing_facts("Anyone over eighteen who finds an abandoned child must notify the registrar.", finder)


MAINTAIN = (
    "(1) The parent of a child shall be liable to maintain the child until the child attains the age of eighteen years."
)


@pytest.mark.parametrize(
    ("sentence", "provision", "missing"),
    [
        # the asker's age inside the one case that bounds ages
        (
            "If you are seventeen, you may make a will.",
            "Every person who is of or over the age of sixteen years may make a will.",
            [],
        ),  # fmt: skip
        (
            "If you are fifteen, you may make a will.",
            "Every person who is of or over the age of sixteen years may make a will.",
            ["15"],
        ),  # fmt: skip
        # several cases: only one bounded on both sides tells the asker's apart
        ("If you are seventeen, you may do work at a school as part of your training.", YOUNG_PERSONS, []),
        ("If you are fifteen, an employer may take you on as an apprentice.", YOUNG_PERSONS, ["15"]),
        # a stated figure is a fact of the law, not the asker's case
        ("The minimum age for an apprentice is seventeen.", YOUNG_PERSONS, ["17"]),
        # "until … attains" bounds from above
        ("If your child is seventeen, the parent is liable to maintain the child.", MAINTAIN, []),
        ("If your child is twenty, the parent is liable to maintain the child.", MAINTAIN, ["20"]),
        # a sentence that forbids nothing is not the case a prohibition sets apart
        (
            "If your son is 17, he must attend school.",
            "(1) Every child shall attend school until he attains the age of sixteen years.",
            ["17"],
        ),  # fmt: skip
        # only ages: "wages" names none, and pay is not a person
        (
            "If your pay is 250, your employer is paying lawful wages.",
            "(1) No employer shall pay an employee wages of less than 300 dollars a month.",
            ["250"],
        ),  # fmt: skip
    ],
)
def test_an_age_the_law_is_applied_to_is_the_askers(sentence: str, provision: str, missing: list[str]) -> None:
    assert missing_facts(sentence, provision) == missing
