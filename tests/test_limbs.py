"""A sentence that gives one item of a provision's list the rule another item states (``limbs.mixed_items``), read
through the rules judge: the two items together hold every word of it, and no item says it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.composer.judge.limbs import dropped_requirement, mixed_items, mixed_subsections
from api.composer.judge.meaning import provision_units
from api.composer.judge.rules import support

DURATION = (
    "7. Duration of protection (1) Subject to this section, protection shall last, in the case of— (a) a design or a "
    "drawing, twenty years from the end of the year in which the design is first registered; (b) a recording, "
    "fifteen years from the end of the year in which it is first broadcast; (c) any other work, the life of the maker "
    "and forty years from the end of the year in which the maker dies."
)
PENALTIES = (
    "12. Offences (1) Any person who— (a) fails to report a change of ownership within thirty days; or (b) gives false "
    "information in a report made under this section; shall be guilty of an offence and liable— (i) in the case of an "
    "offence referred to in paragraph (a), to a fine not exceeding level three or to imprisonment for a period not "
    "exceeding two months; (ii) in the case of an offence referred to in paragraph (b), to a fine not exceeding level "
    "eight or to imprisonment for a period not exceeding four years."
)
CASES = (
    "20. Penalties (1) A person convicted of poaching shall be liable— (a) on a first conviction, to imprisonment "
    "for a period of not less than six years; (b) on a second or subsequent conviction, to imprisonment for a period "
    "of not less than fourteen years. (2) A person aggrieved by a conviction under subsection (1) may appeal to the "
    "High Court within thirty days."
)


def mixed(sentence: str, provision: str) -> list[str]:
    return mixed_items(sentence, provision, provision_units(provision))


def test_one_items_case_given_anothers_rule_is_not_supported() -> None:
    sentence = "Protection for a design lasts for the life of the maker and forty years after the maker dies."
    assert mixed(sentence, DURATION)
    assert not support(sentence, DURATION).supported


def test_each_items_own_rule_is_supported() -> None:
    for sentence in (
        "Protection for a design lasts twenty years from the end of the year in which it is first registered.",
        "A recording is protected for fifteen years from the end of the year in which it is first broadcast.",
    ):
        assert mixed(sentence, DURATION) == [], sentence
        assert support(sentence, DURATION).supported, sentence


def test_what_every_item_shares_belongs_to_none() -> None:
    # "years" and "end of the year" are in every item; two cases named together with what they share say no one
    # item's rule.
    assert mixed("Protection for designs and recordings runs from the end of a year.", DURATION) == []


def test_a_figure_alone_names_its_item() -> None:
    sentence = "On a first conviction for poaching, the penalty is at least fourteen years in prison."
    assert mixed(sentence, CASES) == ["fourteen 14 (stated of another item of the list)"]
    assert not support(sentence, CASES).supported
    assert mixed("On a first conviction for poaching, the penalty is at least six years in prison.", CASES) == []


def test_an_item_that_applies_to_another_by_its_mark_is_not_a_mix() -> None:
    # The penalties name the offences they apply to ("paragraph (b)"): an offence and its own penalty.
    sentence = "Giving false information in a report can lead to up to four years in prison."
    assert mixed(sentence, PENALTIES) == []
    assert support(sentence, PENALTIES).supported


def test_a_subsection_that_builds_on_another_is_left_alone() -> None:
    # Outside a list's items a provision's parts may build on one another.
    assert mixed("Someone convicted of poaching may appeal to the High Court within thirty days.", CASES) == []


def test_a_condition_put_first_names_the_case() -> None:
    sentence = "If it is a second conviction for poaching, the penalty is at least six years in prison."
    assert mixed(sentence, CASES)
    assert mixed("If it is a second conviction for poaching, the penalty is at least fourteen years.", CASES) == []


def test_subsection_numbers_after_a_reference_do_not_end_an_item() -> None:
    provision = (
        "5. Elections (1) Polling shall take place not more than— (a) thirty days before the term expires; or (b) "
        "where the House is dissolved in terms of section 40 (4) or (5) after a vote of no confidence, ninety days "
        "after the dissolution."
    )
    sentence = (
        "If the House is dissolved after a vote of no confidence, polling must be within thirty days before the term "
        "expires."
    )
    assert mixed(sentence, provision)


def test_requirements_joined_by_and_are_read_together() -> None:
    # "; and (b)" lists requirements that hold together: a sentence may draw its subject from one and the rest
    # from another.
    provision = (
        "9. Witnesses Any person who— (a) is of or over the age of eighteen years; and (b) is able to read the "
        "document; and (c) is present when it is signed; shall be competent to witness the signing of a lease."
    )
    sentence = "Your eighteen-year-old can witness the lease, as long as they can read it and are there at the signing."
    assert mixed(sentence, provision) == []


def test_alternatives_within_one_rule_are_not_cases() -> None:
    # Items without a figure of their own are alternatives of one rule (or elements of one case): a sentence may
    # name them together, whatever order its verbs come in.
    provision = (
        "4. Refunds (1) A seller must— (a) return any payment within ten business days after— (i) receiving notice "
        "of the cancellation, if no goods had been delivered; or (ii) receiving the goods back from the buyer; and "
        "(b) not try to collect any payment."
    )
    sentence = (
        "The seller must pay you back within ten business days of your notice or, if the goods were delivered, of "
        "getting them back."
    )
    assert mixed(sentence, provision) == []


def test_penalty_limbs_after_an_offences_elements_are_a_list_of_their_own() -> None:
    # The offence's elements are joined by "and"; the penalties after "liable—" go on lettering but are cases.
    provision = (
        "30. Tampering (1) A person who— (a) knowing that he needs authority to open a meter; and (b) opens it "
        "without that authority; shall be guilty of tampering and liable— (c) in aggravating circumstances, to a "
        "fine not exceeding level twelve or imprisonment for a period not exceeding eight years; (d) in any other "
        "case, to a fine not exceeding level five or imprisonment for a period not exceeding two years."
    )
    crossed = (
        "Tampering in aggravating circumstances is punishable by a fine of up to level five or two years in prison."
    )
    assert mixed(crossed, provision)
    assert mixed("Tampering in aggravating circumstances can lead to up to eight years in prison.", provision) == []


OFFENCES = (
    "24. Offences (1) Any person who obstructs an inspector shall be guilty of an offence and liable to a fine not "
    "exceeding level five or to imprisonment for a period not exceeding six months. (2) Any person who, with "
    "fraudulent intent, tampers with a sample shall be guilty of an offence and liable to a fine not exceeding level "
    "eight or to imprisonment for a period not exceeding two years. (3) Any person who fails to keep the register "
    "shall be guilty of an offence and liable to a fine not exceeding level three."
)


def test_parallel_subsections_are_cases_too() -> None:
    # Subsections that open alike ("Any person who …") set out parallel cases, each with its own penalty.
    crossed = (
        "Tampering with a sample with fraudulent intent can lead to a fine of up to level five or six months in prison."
    )
    assert mixed_subsections(crossed, OFFENCES)
    assert not support(crossed, OFFENCES).supported
    faithful = (
        "Tampering with a sample with fraudulent intent can lead to a fine of up to level eight or two years in prison."
    )
    assert mixed_subsections(faithful, OFFENCES) == []
    assert support(faithful, OFFENCES).supported


def test_a_subsection_that_builds_on_another_is_not_a_parallel_case() -> None:
    # "(2) An appeal under subsection (1) …" opens otherwise and names the subsection it builds on.
    appeal = (
        "9. Appeals (1) A licensee whose licence is cancelled may appeal to the Minister. (2) An appeal under "
        "subsection (1) shall be noted within thirty days. (3) A licensee whose licence is suspended may appeal to "
        "the Board within fourteen days."
    )
    assert mixed_subsections("A licensee whose licence is cancelled may appeal within thirty days.", appeal) == []
    # Subsections that open alike may still build on one another: a case told only in the first's words follows it.
    trading = (
        "5. Trading licences (1) A person who wishes to operate a trading business shall apply to the Board for a "
        "licence. (2) A person who applies for a licence shall be notified of the decision on the application within "
        "thirty days. (3) A person who is refused a licence may appeal to the Minister within fourteen days."
    )
    notified = "A person who wants to operate a trading business must be told the decision within thirty days."
    assert mixed_subsections(notified, trading) == []


def test_what_a_case_leaves_out_names_no_case() -> None:
    # "other than by voluntary act or marriage" excludes; a sentence about a voluntary act is the other case's.
    citizenship = (
        "9. Dual citizenship (1) No citizen may hold two citizenships. (2) A citizen of full age who, by voluntary act "
        "other than marriage, acquires another citizenship shall immediately cease to be a citizen. (3) A citizen of "
        "full age who acquires another citizenship by marriage shall cease to be a citizen one year after the "
        "marriage unless he renounces it. (4) A citizen of full age who, by some means other than by voluntary act "
        "or marriage, acquires another citizenship shall cease to be a citizen one year after the acquisition unless "
        "he renounces it."
    )
    crossed = (
        "An adult citizen who voluntarily takes up another citizenship, other than through marriage, stops being a "
        "citizen one year later unless he renounces it."
    )
    assert mixed_subsections(crossed, citizenship)
    faithful = "An adult citizen who voluntarily takes up another citizenship stops being a citizen immediately."
    assert mixed_subsections(faithful, citizenship) == []


THEFT = (
    "7. Stock theft (1) Any person who— (a) takes livestock intending to keep it; or (b) receives stolen livestock; "
    "or (c) is found in possession of livestock that he or she cannot account for; shall be guilty of stock theft "
    "and liable— (d) if the stock theft involved any bovine animal taken in the "
    "circumstances described in paragraph (a) or (b), to imprisonment for a period of not less than nine years; or "
    "(e) if the stock theft did not involve any bovine animal, to a fine not exceeding level ten. (2) A court "
    "sentencing a person under paragraph (d) of subsection (1) to the minimum sentence of nine years shall not suspend "
    "any part of it."
)
CLUB = (
    "4. Banned clubs Any person who is a leader or member of a banned club shall be guilty of an offence and liable— "
    "(a) in the case of a leader of a banned club, to imprisonment for a period not exceeding ten years; (b) in the "
    "case of a member of a banned club, to a fine not exceeding level five."
)


def test_an_items_figure_said_without_the_case_the_item_opens_with_drops_it() -> None:
    # The figure is the item's alone; a later subsection that applies the item by its mark says it in that case. What
    # the offences its case names by mark share with the other ("livestock") names none of them.
    for sentence in (
        "The penalty for stock theft is at least nine years in prison.",
        "Since goats are livestock, the penalty is at least nine years in prison.",
    ):
        verdict = support(sentence, THEFT)
        assert not verdict.supported and "bovin" in verdict.dropped, sentence
    assert support("If the stolen animal was bovine, the thief faces at least nine years in prison.", THEFT).supported


def test_a_lead_in_that_names_every_case_does_not_state_any_one_of_them() -> None:
    wrong = support("A member of a banned club faces up to ten years in prison.", CLUB)
    assert not wrong.supported and "leader" in wrong.dropped
    assert support("A leader of a banned club faces up to ten years in prison.", CLUB).supported


def test_an_item_whose_case_names_another_by_its_mark_is_said_in_that_items_words() -> None:
    assert support("Giving false information in a report can lead to up to four years in prison.", PENALTIES).supported
    wrong = support("Failing to report a change of ownership can lead to up to four years in prison.", PENALTIES)
    assert not wrong.supported and wrong.dropped


def test_a_faithful_sentence_on_an_item_holding_a_condition_in_passing_passes(shared_data: Path) -> None:
    # "(a) upon any holding … except with the consent … of the owner or, in the case of a portion of Communal Land, by
    # the occupier … — (i) within four hundred and fifty metres of …": the condition is said in passing, after the
    # item's own words, and is not the case the item's figures are given for (a first version read it as one).
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as corpus:
        mines = next(law for law in map(json.loads, corpus) if law["title"] == "Mines and Minerals Act")
    text = next(section["text"] for section in mines["sections"] if section["ref"] == "s31")
    sentence = (
        "Not without the owner's written consent: prospecting is barred within 450 metres of the principal homestead "
        "(and near other buildings, dip tanks and cultivated land) unless the owner consents."
    )
    assert support(sentence, text).dropped == ()


STEP = (
    "83. Liability of step-parent A step-parent shall be liable to maintain his step-child until such step-child "
    "attains the age of eighteen years: Provided that— (i) a step-parent shall not be obliged to maintain a "
    "step-child which is being adequately maintained by its natural parents; (ii) the obligation shall cease if the "
    "mother of the step-child has deserted him."
)
BAR = (
    "34. Bar licence (1) A bar licence shall not be granted in respect of premises which form part of any hotel: "
    "Provided that this subsection shall not apply in respect of premises at a railway station."
)


def test_a_rule_said_to_hold_even_in_the_case_a_proviso_takes_out_is_turned_round() -> None:
    for sentence, provision in (
        ("You still have to pay even if the child's own parents are already supporting the child properly.", STEP),
        (
            "A bar licence cannot be granted for premises in a hotel, even if the premises are at a railway station.",
            BAR,
        ),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    # The exception said as the provision says it, and "even if" about a case no limb takes out, pass.
    assert support(
        "You do not have to pay if the child's own parents are already supporting it properly.", STEP
    ).supported
    assert support(
        "A step-parent must maintain a step-child until eighteen, even if the mother has remarried.", STEP
    ).supported


REGISTER = (
    "14. New owner to register (1) Subject to subsection (3), the new owner of a vehicle shall, within fourteen days "
    "after acquiring it, apply for the change of ownership to be registered. (2) The officer shall register the "
    "change. (3) Subsection (1) shall not apply in relation to any vehicle which— (a) is acquired by a dealer who "
    "keeps it for resale; or (b) is acquired by an insurer as a result of a claim."
)
COOLING_OFF = (
    "25. Cooling-off period (1) This section does not apply to a transaction— (a) by way of an auction; or (b) where "
    "the goods— (i) are made to the consumer's own specifications; or (ii) are clearly personalised. (2) A consumer "
    "may rescind a transaction resulting from direct marketing within five business days."
)
NOTICE = (
    "9. Notice of claims (1) A claimant shall give notice of a claim within thirty days after the loss: Provided that "
    "where the claimant was in hospital, the notice may be given within ninety days after discharge."
)


def test_a_case_named_among_those_a_rule_covers_that_a_list_or_proviso_sets_apart_is_turned_round() -> None:
    for sentence, provision in (
        # A list item read with its opening: the opening takes every item out of the rule.
        ("Every new owner, including a dealer who keeps the vehicle for resale, must register within 14 days.",
         REGISTER),
        ("A consumer may cancel a direct-marketing purchase, even of goods made to their own specifications, within "
         "five business days.", COOLING_OFF),
        # A proviso changes its rule in the case it names.
        ("Notice of a claim must be given within thirty days, even where the claimant was in hospital.", NOTICE),
    ):  # fmt: skip
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    # A case the rule does cover, and the exception said as the provision says it, pass.
    for sentence, provision in (
        ("Every new owner, including one who bought at an auction, must apply within fourteen days.", REGISTER),
        ("A dealer who keeps a vehicle for resale need not register the change of ownership.", REGISTER),
        ("A consumer may rescind a direct-marketing transaction within five business days, including one for "
         "ordinary goods.", COOLING_OFF),
        ("A claimant who was in hospital may give notice within ninety days after discharge.", NOTICE),
    ):  # fmt: skip
        assert support(sentence, provision).supported, sentence


EXPERIMENTS = (
    "3. Performance of experiments (1) The performance, in accordance with this Act, of an experiment shall be "
    "lawful. (2) No person other than a licensee shall perform an experiment on an animal. (3) Any person who "
    "contravenes subsection (2) shall be guilty of an offence and liable to a fine not exceeding level five."
)
TITLES = (
    '4. Use of certain words (1) No person shall include the words "savings bank" in his name unless he is '
    "registered in terms of this Act. (2) Any person who contravenes subsection (1) shall be guilty of an offence."
)
UNFIT = (
    "5. Sale of food (1) No person shall sell any food which is unfit for human consumption. (2) Any person who "
    "contravenes subsection (1) shall be guilty of an offence and liable to a fine not exceeding level seven."
)


def test_an_act_said_to_be_no_offence_that_the_provision_makes_one_is_turned_round() -> None:
    for sentence, provision in (
        # The act is what a subsection forbids, and the clause that makes the offence names that subsection.
        ("Performing an experiment on an animal without a licence is not a crime.", EXPERIMENTS),
        ("You do not commit an offence if you sell food that is unfit for human consumption.", UNFIT),
        ('Someone who is not registered cannot be prosecuted for putting "savings bank" in his name.', TITLES),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    # The case the act is spared in, said as the provision gives it, and the offence itself, pass.
    for sentence, provision in (
        ("A licensee who performs an experiment on an animal in accordance with the Act commits no offence.",
         EXPERIMENTS),
        ("A person registered under the Act does not commit an offence by using \"savings bank\" in his name.",
         TITLES),
        ("Performing an experiment with a licence is not an offence.", EXPERIMENTS),
        ("Selling food that is unfit for human consumption is an offence.", UNFIT),
    ):  # fmt: skip
        assert support(sentence, provision).supported, sentence


ADOPTION = (
    "64. Effect of adoption order (1) An adoption order shall confer the surname of the adopter on the child. (2) Upon "
    "an adoption order being made, all rights, duties and obligations of the parents of the child shall be "
    "extinguished and shall vest in the adopter."
)
DEEMED = (
    "10. Deemed refusal (1) If an officer fails to notify a decision on a request within the period, the officer shall "
    "be deemed to have refused the request. (2) The applicant may then appeal to the Commission."
)
REMOVED = (
    "84. Removal of insolvent curators (1) Every curator whose estate is sequestrated shall cease to hold office. (2) "
    "The removal shall not relieve him from any liability attaching to him at the time of his removal."
)


def test_an_outcome_the_provision_gives_the_opposite_of_is_turned_round() -> None:
    for sentence, provision in (
        ("After an adoption order, the birth parents keep their duties towards the child.", ADOPTION),
        ("If the officer misses the deadline, the request is treated as granted.", DEEMED),
        ("A curator whose estate is sequestrated continues to hold office.", REMOVED),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    for sentence, provision in (
        ("After an adoption order, the parents' duties towards the child are extinguished and pass to the adopter.",
         ADOPTION),
        ("If the officer misses the deadline, the request is treated as refused.", DEEMED),
        # What the provision says stays (a liability it does not relieve), and an outcome said with its end.
        ("A curator whose estate is sequestrated loses his office but remains liable for what he owed then.",
         REMOVED),
        ("A curator continues to hold office until his estate is sequestrated.", REMOVED),
        # A duty to keep a thing in a state is not a status that stays.
        ("The adopter must keep the child's surname registered.", ADOPTION),
    ):  # fmt: skip
        assert not support(sentence, provision).opposite, sentence


LICENCE = (
    "17D. Grant of licence (1) After conducting such investigation as it considers necessary, the Board may issue or "
    "refuse to issue a licence to the applicant, and may specify conditions in it."
)
TERM = (
    "8. Terms of office (1) A member shall hold office for a period of three years from the date of his appointment, "
    "and shall cease to hold office only in terms of this Act."
)
EX_OFFICIO = (
    "8. Chief Executive as member The Chief Executive shall be a member of the Board and shall cease to be a member "
    "upon his ceasing to hold office as Chief Executive."
)
MAINTENANCE_ORDER = (
    "8. When orders cease An order for the periodic payment of maintenance for a child shall cease— (a) when the "
    "child attains the age of eighteen years; or (b) when the child is adopted; or (c) when the child becomes "
    "self-supporting."
)
TRIALS = (
    "45. Representation At all trials held under this Act the accused shall be entitled to be represented and "
    "assisted by a registered legal practitioner: Provided that where the trial is held before a board of officers, "
    "the accused shall be entitled to be represented and assisted by a member."
)
AIRCRAFT = (
    "3. Application (1) This Act applies to all aircraft while in or over the country. (2) This Act shall not apply "
    "to— (a) aircraft belonging to the defence forces; or (b) aircraft belonging to any foreign government, whilst "
    "used exclusively for military purposes."
)
PLANS = (
    "385. Plans (1) No person shall furnish a plan of a mining location to another person without the permission of "
    "the holder. (2) Any person who contravenes subsection (1) shall be guilty of an offence. (3) Subsection (1) "
    "shall not apply in respect of any plan relating to a mining location which has been abandoned."
)
LOITERING = (
    "85. Loitering near prisons Any person who— (a) loiters within one hundred metres of a prison; or (b) refuses to "
    "leave the vicinity of a prison when asked to do so by a prison officer; shall be guilty of an offence."
)
SEALS = (
    "153. Seals Any person who tampers with a lock or seal affixed by an officer shall be guilty of an offence and "
    "liable to a fine."
)
VACATE = (
    "8. Vacation of office An appointed member shall vacate his office if he becomes a member of Parliament or if he "
    "is convicted of an offence."
)


def test_the_new_readings_leave_alone_what_only_looks_like_their_case() -> None:
    for sentence, provision in (
        # The provision's own word for the outcome, offered beside its opposite; a term said to end only so.
        ("The Board may grant a licence to the applicant after conducting an investigation.", LICENCE),
        ("A member remains in office for three years from the date of his appointment.", TERM),
        ("The Chief Executive remains a member of the Board as long as he holds office as Chief Executive.",
         EX_OFFICIO),
        # Cases of an ending, not cases set apart from it.
        ("A maintenance order for a child ends in several cases, including when the child is adopted.",
         MAINTENANCE_ORDER),
        ("A maintenance order for a child can end even before the child turns eighteen.", MAINTENANCE_ORDER),
        # A proviso's case said with what the proviso says of it.
        ("At every trial the accused may be represented, including at a trial held before a board of officers, "
         "where a member may represent him.", TRIALS),
        # An item's case is only the item's own kind: a foreign airline is not a foreign government.
        ("The Act applies to all aircraft in or over the country, including aircraft belonging to a foreign airline.",
         AIRCRAFT),
        # An act a limb lifts out of the offence.
        ("Furnishing a plan of an abandoned mining location without the holder's permission is not an offence.",
         PLANS),
    ):  # fmt: skip
        assert support(sentence, provision).supported, sentence
    for sentence, provision in (
        # The acts of an offence listed under its "Any person who—".
        ("Loitering within one hundred metres of a prison is not an offence.", LOITERING),
        # "Tampering with" is the act, not a case the act is spared in.
        ("Tampering with a lock or seal affixed by an officer is not an offence.", SEALS),
        # The provision's own word for an ending.
        ("An appointed member keeps his office after he becomes a member of Parliament.", VACATE),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence


def test_an_even_if_the_provision_itself_keeps_is_not_turned_round() -> None:
    kept = (
        "39. Grants (3) A grant shall be made notwithstanding that the agent has since died or ceased to practise. (4) "
        "The Board shall not be obliged to make a grant where the agent died or ceased to practise before the loss."
    )
    assert not support("A grant is made even if the agent has since died or ceased to practise.", kept).opposite


MARRIED = (
    "14. Bigamy (1) Any person who, being a party to— (a) a monogamous marriage and, knowing that it subsists, "
    "purports to enter into another marriage; or (b) a polygamous marriage and, knowing that it subsists, purports to "
    "enter into a monogamous marriage; shall be guilty of bigamy and liable, if convicted in terms of— (i) paragraph "
    "(a), to a fine not exceeding level six or imprisonment for a period not exceeding one year or both; (ii) "
    "paragraph (b), to a fine not exceeding level five."
)


def test_a_penalty_given_by_the_offences_mark_keeps_that_offence() -> None:
    wrong = support("The penalty for bigamy is a fine of up to level six or a year in prison, or both.", MARRIED)
    assert not wrong.supported and "monogamou" in wrong.dropped
    for sentence in (
        "Someone in a monogamous marriage who marries again faces up to level six or a year in prison, or both.",
        "Bigamy under paragraph (a) carries a fine of up to level six or a year in prison, or both.",
    ):
        assert support(sentence, MARRIED).supported, sentence


APPEAL = (
    "62. Appeals Any person who is aggrieved by a decision of the Authority may, within thirty days after the date of "
    "that decision, appeal by notice in writing to the Administrative Court."
)
DUAL = (
    "9. Dual citizenship (3) A citizen who acquires by marriage the citizenship of a foreign country shall cease to be "
    "a citizen one year after the date of the marriage unless, before the expiry of that period, he has renounced his "
    "foreign citizenship and has made a declaration confirming such renunciation."
)


def test_a_time_to_act_within_is_not_a_wait_before_acting() -> None:
    for sentence, provision in (
        ("Anyone unhappy with the Authority's decision has to wait thirty days before they can appeal.", APPEAL),
        (
            "The Act gives a period of one year after the marriage before the foreign citizenship can be renounced.",
            DUAL,
        ),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    for sentence, provision in (
        ("If you disagree with the Authority's decision, you have thirty days from it to appeal in writing.", APPEAL),
        ("A citizen who marries a foreigner has one year to renounce the foreign citizenship and declare it.", DUAL),
    ):
        assert support(sentence, provision).supported, sentence


NOT_OBLIGED = (
    "10. No person to be required to assist Notwithstanding any law or agreement to the contrary, no medical "
    "practitioner or nurse or person employed in any other capacity at a designated institution shall be obliged to "
    "participate or assist in the termination of a pregnancy."
)
WITNESS = (
    "4. Inquiry Provided that a witness who objects to answering any question on the ground that it will tend to "
    "incriminate him shall not be required to answer the question."
)


def test_a_duty_said_where_the_provision_denies_it_is_the_opposite() -> None:
    for sentence, provision in (
        (
            "A nurse at a designated institution is obliged to assist in terminations if her employer requires it.",
            NOT_OBLIGED,
        ),
        ("A witness must answer every question, even one that would incriminate him.", WITNESS),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    assert support(
        "No nurse at a designated institution can be obliged to assist in a termination.", NOT_OBLIGED
    ).supported
    assert support("A witness need not answer a question that would tend to incriminate him.", WITNESS).supported


FINDER = (
    "22. Notice by person finding exposed body (1) Any person who has attained the age of eighteen years, who— (a) "
    "finds the body of a dead person; or (b) takes charge of the body of a dead person so found; shall give notice of "
    "the death of such person to the registrar of the district where such body was found."
)


def test_a_rule_for_a_party_narrowed_by_an_age_is_not_given_to_anyone() -> None:
    wrong = support("Anyone who finds a dead body must give notice of the death to the registrar.", FINDER)
    assert not wrong.supported and "18 year" in wrong.dropped
    # The age said, with or without its unit, and "you" (whom an earlier sentence may have placed) are left alone.
    for sentence in (
        "Anyone eighteen or older who finds a dead body must give notice of the death to the registrar.",
        "If you find a dead body you must give notice of the death to the registrar.",
    ):
        assert support(sentence, FINDER).dropped == (), sentence
    # The party's age clause goes on into what the party does ("… eighteen years finding such child").
    abandoned = (
        "15. Notice of birth of abandoned child If any new-born child is found abandoned it shall be the duty of any "
        "person who has attained the age of eighteen years finding such child to give to the registrar notice of the "
        "birth."
    )
    wrong = support("Anyone who finds an abandoned child must give notice of the birth to the registrar.", abandoned)
    assert not wrong.supported and "18 year" in wrong.dropped
    assert support(
        "Anyone eighteen or older who finds an abandoned new-born child must notify the registrar of the birth.",
        abandoned,
    ).supported


BEES = (
    "18. Declaration of diseases (1) The Minister may, by statutory instrument, declare any disease or symptom "
    "affecting bees to be a disease for the purposes of this Act."
)
AGENT = (
    "40B. Power to appoint agent (1) An inspector may, if he thinks it is necessary, declare any person to be an agent "
    "of an employer and the person so declared as an agent shall pay any contributions due."
)


def test_a_power_to_declare_a_kind_is_not_the_thing_being_of_it() -> None:
    for sentence, provision in (
        ("American foulbrood is a disease under the Bees Act.", BEES),
        ("Anyone who holds money for an employer is that employer's agent.", AGENT),
    ):
        verdict = support(sentence, provision)
        assert verdict.opposite and not verdict.supported, sentence
    for sentence, provision in (
        ("The Minister may declare a symptom affecting bees to be a disease for the purposes of the Act.", BEES),
        ("If a bee disease is declared by the Minister, it is a disease under the Act.", BEES),
        ("An inspector may declare a person to be an agent of an employer if he thinks it necessary.", AGENT),
    ):
        assert support(sentence, provision).supported, sentence


def test_the_case_readers_leave_alone_what_only_looks_like_their_case() -> None:
    from api.composer.judge.cases import despite_excepted, waits_for_deadline
    from api.composer.judge.limbs import items_named
    from api.composer.judge.polarity import opposite, takes_out

    # "no" inside a condition does not deny the duty the clause then imposes.
    assert not opposite(
        "The owner must pay the fee.", "If no notice is given within the period, the owner shall be required to pay."
    )
    # A wait the provision itself sets, and a time limit on someone else's act, are no deadline turned round.
    rehabilitation = (
        "(1) A convicted person may apply for rehabilitation after a period of five years from the conviction. (2) The "
        "Minister shall decide within three months an application for rehabilitation made under subsection (1)."
    )
    assert not waits_for_deadline("You must wait five years before you can apply for rehabilitation.", rehabilitation)
    # An exclusion in another sentence of the provision is not the limb holding the case's words.
    step = (
        "(1) A step-parent shall maintain a step-child who lives with him, whether the natural parents are adequately "
        "maintaining the child or not. (2) This section does not apply to a step-parent whose marriage has ended."
    )
    sentence = "A step-parent must maintain a step-child even if the natural parents are adequately maintaining it."
    assert not despite_excepted(sentence, step)
    # Applying for something is not a rule's reach denied.
    assert not takes_out("A person whose licence was cancelled may not apply for a licence again within a year.")
    # Five months is not five years; a reference into another section is not this one's item.
    married = "Any person who has been married for at least five years may apply for a joint pension."
    assert support("Anyone married for five months can apply for a joint pension.", married).dropped
    other = "(1) Any person— (a) x; (b) y. (2) Under paragraph (a) of subsection (1) of section 9 of the Companies Act."
    assert items_named(other, other.index("(2)")) == []
    # Runs of spaces between marks are read once, not every way they could be split.
    spaced = "(1) A person shall— (a) do x; (b) do y. (2) As in paragraphs " + "(a)  " * 40 + "the person shall pay."
    assert items_named(spaced, spaced.index("(2)")) == []


FIXED_TERM = (
    "(3) An employee is deemed to have been unfairly dismissed— (a) if the employee terminated the contract because "
    "the employer made continued employment intolerable; (b) if, on termination of an employment contract of fixed "
    "duration, the employee— (i) had a legitimate expectation of being re-engaged; and (ii) another person was "
    "engaged instead of the employee."
)
SALE = (
    "(1) No person shall sell any fertilizer unless— (a) it is registered under this Act; and (b) it is packed in the "
    "prescribed manner; and (c) its container is labelled in the manner that may be prescribed."
)


@pytest.mark.parametrize(
    ("sentence", "provision", "dropped"),
    [
        # a case that draws on one requirement of a list that holds together, none of another's own words
        (
            "When a fixed-term contract ends and someone else is engaged instead, the employee is deemed unfairly "
            "dismissed.",
            FIXED_TERM,
            True,
        ),  # fmt: skip
        ("If a fertilizer is registered under the Act, you may sell it.", SALE, True),
        # every requirement told, in the provision's words or its own
        (
            "When a fixed-term contract ends, you legitimately expected to be re-engaged and someone else was engaged "
            "instead, you are deemed unfairly dismissed.",
            FIXED_TERM,
            False,
        ),  # fmt: skip
        ("If a fertilizer is registered, packed and labelled as prescribed, you may sell it.", SALE, False),
        # a requirement said to be necessary holds whatever the others are
        ("Unless a fertilizer is registered under the Act, you may not sell it.", SALE, False),
        ("If a fertilizer is not registered under the Act, no person shall sell it.", SALE, False),
        ("If a fertilizer is not packed in the prescribed manner, selling it is prohibited.", SALE, False),
        # no case of its own: one requirement told in turn
        ("A fertilizer must be registered under the Act before it is sold.", SALE, False),
        # a list after the rule's verb is what is done, not its condition
        (
            "If the court thinks fit, it may rescind the rights of access.",
            "(4) The court may— (c) if it thinks fit, "
            "by order rescind or vary— (i) the rights of access; and (ii) any order for maintenance.",
            False,
        ),  # fmt: skip
        # items that each state a rule follow from the condition
        (
            "If a business changes ownership, the change must be notified within seven days.",
            "(1) If any business "
            "changes ownership— (a) the change must be notified within seven days; and (b) the business must apply for "
            "a permit.",
            False,
        ),  # fmt: skip
    ],
)
def test_a_requirement_the_sentences_case_leaves_out(sentence: str, provision: str, dropped: bool) -> None:
    assert bool(dropped_requirement(sentence, provision)) is dropped
