"""The party check: a sentence gives a duty, right, entitlement or order only to a party its provision gives it to."""

import json
import re
from pathlib import Path

import pytest

from api.composer.judge.judge import reasons
from api.composer.judge.parties import party_faults, party_words, penalty_turned, wrong_holder
from api.composer.judge.rules import RulesJudge

EVALUATION = Path(__file__).parent.parent / "evaluation"
# Provisions in the corpus's words (short extracts), each read whole by the judge.
MATRIMONIAL_HOME = (
    "3A. Inheritance of matrimonial home and household effects The surviving spouse of every person who, on or after "
    "the 1st November, 1997, dies wholly or partly intestate shall be entitled to receive from the free residue of the "
    "estate— (a) the house or other domestic premises in which the spouses or the surviving spouse, as the case may "
    "be, lived immediately before the person’s death; and (b) the household goods and effects which, immediately "
    "before the person’s death, were used in relation to the house or domestic premises referred to in paragraph "
    "(a); where such house, premises, goods and effects form part of the deceased person’s estate."
)
BIRTH_NOTICE = (
    "11. Responsibility for giving notice of the birth or still-birth of a child (1) Subject to section twelve, it "
    "shall be the duty of the father or the mother of a child and, in the case of the death or inability of the "
    "father and the mother, the duty of— (a) the occupier of the house in which the birth or still-birth occurred, "
    "where he had knowledge of such birth or still-birth ; or (b) the person in charge of any hospital or other "
    "institution in which the birth or still-birth occurred; or (c) any person who has attained the age of eighteen "
    "years present at the birth or still-birth ; to give notice of the birth or still-birth in the prescribed form to "
    "the registrar of the district in which the birth or still-birth , as the case may be, occurred. (2) Notice in "
    "terms of subsection (1) shall be given— (a) in the case of a birth, within forty-two days from the date of the "
    "birth. (4) In the case of a still-birth , the medical practitioner or the midwife , as the case may be, who was "
    "in attendance at the still-birth or who examined the body of the child shall sign a certificate stating that the "
    "child was still- born ."
)
ACCESS = (
    "(4) On the day specified in the summons issued in terms of subsection (2), the children’s court shall inquire "
    "into the matter and may do any or all of the following— (a) if it is satisfied that the custodial parent has, "
    "without reasonable excuse, failed or refused to allow the non-custodial parent access to the minor as required "
    "by an access order, order the custodial parent to pay a fine of an amount not exceeding level three; (b) if it "
    "is satisfied that the non-custodial parent has abused the rights of access conferred on him by the access order, "
    "order him to pay a fine of an amount not exceeding level three; (c) if it thinks fit, by order rescind or vary— "
    "(i) the rights of access conferred by the access order."
)
TRESPASS = (
    "27. Trespass money (1) Where trespassing stock has been sent to a pound . or otherwise dealt with in terms of "
    "section sixteen or seventeen, the person in charge of the land upon which the stock trespassed shall be entitled "
    "to be paid by the owner of the stock trespass money at the appropriate rate prescribed by the pound authority "
    "concerned."
)
NOBODY_IN_PARTICULAR = (
    "3. (1) Subject to section ten, no person shall, on the grounds of race, tribe, colour, creed or gender of any "
    "person— (a) refuse to admit that person to any public premises; or (b) refuse to supply any commodity, service "
    "or facility to that person."
)
ORDER_CONTAINS_NOTICE = (
    "(3) An interim protection order must be served on the respondent in the prescribed manner and must contain a "
    "notice calling upon the respondent to show cause, on a date specified in the order, why a protection order "
    "should not be issued."
)


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        ("When a person dies without a will, the deceased's relatives are entitled to the house the couple lived in "
         "just before the death, as long as it was part of the estate.", MATRIMONIAL_HOME),
        ("The doctor or midwife who delivered the child must give notice of the birth.", BIRTH_NOTICE),
        ("When straying livestock is sent to a pound, the owner of the animals is entitled to trespass money from the "
         "person in charge of the land, at the rate the pound authority sets.", TRESPASS),
    ],
)  # fmt: skip
def test_a_duty_or_right_given_to_a_party_the_provision_does_not_give_it_to_is_not_supported(
    sentence: str, provision: str
) -> None:
    assert wrong_holder(sentence, provision)
    verdict = RulesJudge().judge(sentence, provision, topic={})
    assert not verdict.supported
    assert "missing_fact" in reasons(verdict)
    assert any("party" in fact for fact in verdict.missing)


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        ("When a person dies without a will, the surviving spouse is entitled to the house the couple lived in just "
         "before the death, as long as it was part of the estate.", MATRIMONIAL_HOME),
        # "you" is the asker, whom a plain-words answer puts for the party the provision names
        ("You are also entitled to the household goods used in that home.", MATRIMONIAL_HOME),
        # everyday names for the provision's own parties
        ("When your husband dies without a will, his widow is entitled to the house the couple lived in just before "
         "the death, if it was part of the estate.", MATRIMONIAL_HOME),
        ("The father or the mother of the child must give notice of the birth to the registrar.", BIRTH_NOTICE),
        ("A parent must give notice of the birth to the registrar.", BIRTH_NOTICE),
        ("The doctor or midwife who attended a still-birth must sign a certificate that the child was still-born.",
         BIRTH_NOTICE),
        ("When straying livestock is sent to a pound, the person in charge of the land is entitled to trespass money "
         "from the owner of the animals.", TRESPASS),
    ],
)  # fmt: skip
def test_the_party_the_provision_names_in_its_own_or_everyday_words_passes(sentence: str, provision: str) -> None:
    assert wrong_holder(sentence, provision) == []
    assert party_faults(sentence, provision) == []


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        # the provision forbids everyone: a shop is one of them
        ("A shop may not refuse to serve you because of your race, tribe, colour, creed or gender.",
         NOBODY_IN_PARTICULAR),
        ("A shop owner must not refuse to supply a service to you because of your race or gender.",
         NOBODY_IN_PARTICULAR),
        # a thing the provision's holder gives, said to act, is not a party given the duty
        ("The notice must call upon the respondent to show cause why a protection order should not be issued.",
         ORDER_CONTAINS_NOTICE),
        # a passive names no holder
        ("Notice of a birth must be given within forty-two days.", BIRTH_NOTICE),
    ],
)  # fmt: skip
def test_what_names_no_party_in_particular_is_left_alone(sentence: str, provision: str) -> None:
    assert party_faults(sentence, provision) == []


def test_an_order_on_the_asker_for_what_the_other_party_did_is_not_supported() -> None:
    turned = (
        "If the court finds that your ex refused you access without a reasonable excuse, it can order you to pay a "
        "fine."
    )
    faithful = (
        "If the court finds that your ex refused you access without a reasonable excuse, it can order your ex to pay "
        "a fine."
    )
    assert penalty_turned(turned, ACCESS)
    assert not RulesJudge().judge(turned, ACCESS, topic={}).supported
    assert not penalty_turned(faithful, ACCESS)
    assert party_faults(faithful, ACCESS) == []
    # The asker ordered for what the asker did is the provision's other limb.
    own = "If the court finds that you abused your rights of access, it can order you to pay a fine."
    assert not penalty_turned(own, ACCESS)


def test_the_party_words_are_data_for_any_jurisdiction() -> None:
    words = party_words()
    assert any(frozenset({"doctor"}) in group for group in words.same)
    assert "ex" in words.situational
    assert words.lay  # the lay-term thesaurus's pairs are read too


PRICES = (
    "(2) Subject to subsection (3), no supplier shall display any goods for sale or services on offer without "
    "displaying to the consumer a price in relation to those goods or services. (4) A price is adequately displayed "
    "to a consumer where a written indication of the price is applied to the goods or to any label or shelf. (5) The "
    "advertised or displayed price shall include all taxes."
)
TAX_INVOICE = (
    "20. Tax invoices (1) Except as otherwise provided in this section, a supplier , being a registered operator , "
    "making a taxable supply , other than a supply contemplated in subsection (9) of section seven, to a recipient "
    "shall provide that recipient within thirty days from the date of supply with a tax invoice."
)
TEACHERS = (
    "59. (1) The Minister shall make regulations prescribing the minimum qualifications of all teachers to be "
    "employed in Government and non-Government schools."
)


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        # a thing said to hold a duty is no party
        ("Goods displayed for sale must have a price displayed to the consumer on a label or shelf.", PRICES),
        # "subsection (9) of section seven" is a reference inside the subject, not a new subsection
        ("A registered supplier making a taxable supply must give the recipient a tax invoice within thirty days.",
         TAX_INVOICE),
        # what the provision's holding is about, with another verb, is not given to another party
        ("Teachers must meet the minimum qualifications set by regulations.", TEACHERS),
    ],
)  # fmt: skip
def test_a_faithful_sentence_whose_subject_the_provision_reads_otherwise_passes(sentence: str, provision: str) -> None:
    assert party_faults(sentence, provision) == []


def test_no_reference_answer_of_the_development_questions_is_held_to_name_the_wrong_party(shared_data: Path) -> None:
    """Every sentence of the development questions' faithful answers in plain words (and the lay questions'
    development part) passes the party check against the provisions it answers from."""
    wanted: dict[tuple[str, str], list[str]] = {}
    answers: list[tuple[str, list[tuple[str, str]]]] = []
    for name in ("dev_questions.jsonl", "lay_questions.jsonl"):
        for line in (EVALUATION / name).read_text(encoding="utf-8").splitlines():
            question = json.loads(line)
            if question.get("split", "dev") != "dev" or not question.get("gold"):
                continue
            gold = [(g["law_id"], g["section"].removeprefix("s")) for g in question["gold"]]
            answers.append((question["answer"], gold))
            wanted.update({key: [] for key in gold})
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            law = json.loads(line)
            for section in law["sections"]:
                key = (law["id"], str(section["section"]))
                if key in wanted:
                    wanted[key].append(str(section.get("text") or ""))
    held = []
    checked = 0
    for answer, gold in answers:
        texts = [text for key in gold for text in wanted[key]]
        for sentence in re.split(r"(?<=[.;])\s+", answer):
            checked += 1
            if texts and all(party_faults(sentence, text) for text in texts):
                held.append(sentence)
    assert checked >= 400
    assert held == []


def test_a_passives_agent_is_read_from_its_own_be_and_holds_what_it_is_given() -> None:
    from api.composer.judge.parties import provision_holdings

    increase = (
        "(1) Notice of any increase shall be given in writing by the lessor to the lessee at least three months "
        "before the increase takes effect."
    )
    assert [h.who for h in provision_holdings(increase)] == ["the lessor"]
    # A "by" in a clause set off before the passive is not its agent.
    arrest = (
        "13. Arrest without warrant Every person who is suspected of an offence may, if the ends of justice would "
        "be defeated by the delay in obtaining a warrant, be arrested without warrant by a police officer."
    )
    assert [h.who for h in provision_holdings(arrest)] == ["a police officer"]
    assert (
        wrong_holder("The police may arrest a suspect without a warrant if waiting would defeat justice.", arrest) == []
    )


@pytest.mark.parametrize(
    ("sentence", "provision"),
    [
        # A thing is no party, whatever its modifier ends in.
        ("The lease agreement must state the amount of the deposit.",
         "(2) Every lease agreement shall state the amount of the deposit payable by the lessee."),
        ("The employment contract must specify the rate of remuneration.",
         "(1) The employer shall specify in the contract of employment the rate of remuneration."),
        # Several parties in turn may hold one duty: any of them named is enough.
        ("Parents must give notice of the birth of their child to the registrar.",
         "(1) It shall be the duty of the father or the mother of a child to give notice of the birth of the child to "
         "the registrar. (6) A responsible person shall give notice of the birth of the child to the registrar where "
         "the father and the mother have died."),
        # Everyday names: the owner for the lessor, a licensee for a licence's holder.
        ("The owner must give the tenant written notice of the increase at least three months before it takes effect.",
         "(1) The lessor shall give the lessee written notice of any increase at least three months before the "
         "increase takes effect."),
        ("A licensee must keep a register of all gold received and disposed of.",
         "(1) Every holder of a licence shall keep a register of all gold received and disposed of by him."),
    ],
)  # fmt: skip
def test_things_several_holders_and_everyday_names_are_not_taken_for_a_wrong_party(
    sentence: str, provision: str
) -> None:
    assert wrong_holder(sentence, provision) == []


def test_a_holder_described_by_its_dealings_with_a_party_is_not_that_party() -> None:
    """ "Any person who … has paid to the lender … shall be entitled … to recover" gives the right to the one who paid:
    a sentence giving it to the lender gives it to the other party. The party the holder is, and a body one is
    appointed to or a fund one pays into, are left alone."""
    excess = ("11. Recovery by borrower of excess interest paid Any person who, under or in connection with any "
              "contract of loan of money, has paid to the lender an amount which exceeds the amount which could have "
              "been recovered shall be entitled, at any time within two years after the date of the payment, to "
              "recover from the person to whom he made it a sum equal to the amount of the excess.")  # fmt: skip
    assert wrong_holder("A lender who was overpaid can recover the excess from the borrower within two years.", excess)
    assert not wrong_holder("A borrower who overpaid can recover the excess from the lender within two years.", excess)
    # a holder named by a pronoun after a condition naming the party is that party
    enforcement = ("If it appears to the local planning authority that any development has been carried out in "
                   "contravention of this Act, it may serve an enforcement order on the owner.")  # fmt: skip
    assert not wrong_holder("The local planning authority may serve an enforcement order on the owner.", enforcement)
    # a body one is appointed to or a fund one pays into is no other party
    board = ("(2) Any person who is appointed to the Board shall hold office for a period of three years and may be "
             "reappointed.")  # fmt: skip
    assert not wrong_holder(
        "A Board member shall hold office for a period of three years and may be reappointed.", board
    )
    fund = ("(3) Any person who has contributed to the fund for ten years shall be entitled to a refund of "
            "contributions on leaving employment.")  # fmt: skip
    assert not wrong_holder("A fund member who has contributed for ten years is entitled to a refund of contributions "
                            "on leaving employment.", fund)  # fmt: skip
