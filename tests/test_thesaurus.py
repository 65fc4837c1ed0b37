"""The lay-term thesaurus: the packaged file loads, is grounded in the corpus's own words, maps lay wording to legal
terms, rejects broken files at start-up, and reaches both search sides of the real retriever."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from api.errors import ConfigError
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import RetrievalSettings, Settings
from api.tools.thesaurus import DEFAULT_PATH, load_thesaurus
from tests.conftest import ingest_into

EMPLOYMENT_ACT = """<!-- id: test/act/2024/1; jurisdiction: SAMPLE -->
# Workplace Act, 2024

1. Dismissal
No employer shall effect the dismissal of an employee except in terms of a registered employment code of conduct.
"""
LICENSING_ACT = """<!-- id: test/act/2024/2; jurisdiction: SAMPLE -->
# Trading Licences Act, 2024

1. Cancellation of licences
A trading licence shall not be cancelled without a hearing, and the holder may be heard in person at the hearing.
"""
# A third Act so every word above is rare (Robertson's idf is zero for a word in half of the documents).
BEES_ACT = """<!-- id: test/act/2024/3; jurisdiction: SAMPLE -->
# Beekeeping Act, 2024

1. Registration of apiaries
Every apiary of more than ten hives shall be registered with the district office within thirty days.
"""


def test_the_packaged_file_loads_with_a_version() -> None:
    thesaurus = load_thesaurus()
    assert thesaurus.version and len(thesaurus) >= 40
    assert load_thesaurus(DEFAULT_PATH).entries == thesaurus.entries


def test_every_legal_term_occurs_in_the_zimbabwe_legislation(shared_data: Path) -> None:
    """An entry may only point at words the statutes use; otherwise it adds noise to every query it touches."""
    acts = shared_data / "corpus/zimbabwe_legislation/acts.jsonl"
    text = " ".join(
        " ".join(section["text"].split()).lower()
        for line in acts.read_text().splitlines()
        for section in json.loads(line)["sections"]
    )
    missing = [
        term
        for _, legal in load_thesaurus().entries
        for term in legal
        if not re.search(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", text)
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("My boss fired me on the spot", {"employer", "dismissal"}),
        ("I got SACKED and my wages are unpaid", {"dismissal", "remuneration"}),
        ("Can my kid work in a shop?", {"child", "minor"}),
        ("My landlord wants the farm back", {"lessor"}),
        ("We paid lobola last year", {"marriage consideration"}),
        ("The roora is not finished", {"marriage consideration"}),
        ("Someone stole my goats", {"livestock", "theft"}),
    ],
)
def test_lay_words_call_for_legal_terms(question: str, expected: set[str]) -> None:
    expansion = load_thesaurus().expand(question)
    assert expected <= set(expansion.added)
    for term in expected:
        assert term in expansion.lexical_query and term in expansion.dense_query
    assert expansion.lexical_query.startswith(question) and expansion.dense_query.startswith(question)


def test_words_are_matched_whole_and_the_longest_phrase_wins() -> None:
    thesaurus = load_thesaurus()
    assert thesaurus.expand("Is ill-treatment of a child an offence?").matched == ()
    assert thesaurus.expand("Can a fireman enter my house?").matched == ()
    church = thesaurus.expand("We had a church wedding")
    assert church.matched == ("church wedding",) and "civil marriage" in church.added
    curly = thesaurus.expand("Is a doctor’s note enough?")
    assert curly.matched == ("doctor's note",)


def test_terms_the_question_already_has_are_not_added_again() -> None:
    direct = load_thesaurus().expand("What is the term of a patent under the Patents Act?")
    assert direct.added == () and direct.lexical_query == direct.dense_query == direct.query
    mixed = load_thesaurus().expand("Can my boss, the employer, sack me?")
    assert "employer" not in mixed.added and "dismissal" in mixed.added


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('entry = [{lay = ["boss"], legal = ["employer"]}]', "version"),
        ('version = "1"\nentry = [{lay = ["boss"], legal = []}]', "legal"),
        ('version = "1"\nentry = [{lay = ["boss"], legal = ["employer"]}, {lay = ["Boss"], legal = ["x"]}]', "boss"),
        ('version = "1"\nentry = [{lay = ["kid", "kid "], legal = ["child"]}]', "repeated"),
        ('version = "1"\nentry = [{lay = ["boss"], legal = ["employer"]', "invalid"),
    ],
)
def test_a_broken_file_is_refused_with_a_clear_message(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "lay_terms.toml"
    path.write_text(content)
    with pytest.raises(ConfigError) as error:
        load_thesaurus(path)
    assert str(path) in error.value.message and problem in error.value.message


async def test_a_missing_file_stops_the_boot(private_data_dir: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=private_data_dir, retrieval=RetrievalSettings(lay_terms_path=tmp_path / "none.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        async with open_services(settings):
            pass


async def test_lay_wording_reaches_the_provision_on_both_search_sides(tmp_path: Path) -> None:
    source = tmp_path / "acts"
    source.mkdir()
    (source / "workplace.md").write_text(EMPLOYMENT_ACT)
    (source / "licences.md").write_text(LICENSING_ACT)
    (source / "bees.md").write_text(BEES_ACT)
    data_dir = tmp_path / "data"
    await ingest_into(Settings(data_dir=data_dir), source)
    question = "My boss sacked me without a hearing. Can he do that?"
    for lay_terms in (False, True):
        settings = Settings(data_dir=data_dir, retrieval=RetrievalSettings(lay_terms=lay_terms, cache_ttl_s=0))
        async with open_services(settings) as services:
            retriever = services.orchestrator.deps.retriever
            lexical = await retriever.retrieve(question, mode="bm25")
            dense = await retriever.retrieve(question, mode="dense")
        best_lexical = lexical.hits[0].chunk.doc_key if lexical.hits else ""
        if not lay_terms:
            # Without the thesaurus the only shared words are "without a hearing": the licensing Act wins.
            assert lexical.lay_terms == [] and best_lexical == "test/act/2024/2"
            plain_cosine = dict(dense.stages["dense"])
            continue
        assert {"employer", "dismissal"} <= set(lexical.lay_terms) and best_lexical == "test/act/2024/1"
        # The dense side embeds the expanded text: the dismissal provision comes closer than it was.
        workplace = next(cid for cid, _ in dense.stages["dense"] if cid.startswith("test/act/2024/1"))
        assert dict(dense.stages["dense"])[workplace] > plain_cosine[workplace]
        assert dense.hits[0].chunk.doc_key == "test/act/2024/1"


def test_a_lay_word_the_corpus_itself_uses_is_left_alone() -> None:
    """A statute that says "landlord" throughout needs no "lessor" added to every landlord question."""
    expansion = load_thesaurus().expand("Can my landlord sack my boss?", in_use=lambda word: word == "landlord")
    assert "landlord" in expansion.matched and "lessor" not in expansion.added
    assert {"employer", "dismissal"} <= set(expansion.added)


TRANSFER_ACT = """<!-- id: test/act/2024/4; jurisdiction: SAMPLE -->
# Employment Relations Act, 2024

7. Rights of employees on transfer of undertaking
(1) Whenever an undertaking in which persons are employed is alienated or transferred in any way whatsoever, the
employment of those persons is deemed to be transferred to the transferee on terms and conditions of employment not
less favourable than those that applied immediately before the transfer.
"""
DUTY_ACT = """<!-- id: test/act/2024/5; jurisdiction: SAMPLE -->
# Stamp Duties Act, 2024

3. Exemption of certain sales from duty
No duty shall be payable on land sold by a company that carries on its principal business in a free zone, if the
conditions set by the Commissioner have been met and the sale has been registered within the current year.
"""


async def test_the_quote_only_answer_weighs_its_sentences_by_the_legal_terms_the_search_used(tmp_path: Path) -> None:
    """A lay question shares its everyday words ("business", "sold", "conditions") with a provision about
    something else; the thesaurus gives the search the statutes' words ("transfer of undertaking"), and the
    sentence the answer quotes is chosen by the same meaning, so it quotes the provision the search found."""
    source = tmp_path / "acts"
    source.mkdir()
    for name, text in (("transfer.md", TRANSFER_ACT), ("duty.md", DUTY_ACT), ("bees.md", BEES_ACT)):
        (source / name).write_text(text)
    data_dir = tmp_path / "data"
    await ingest_into(Settings(data_dir=data_dir), source)
    question = "The business I work for has been sold to new owners. Do I keep my job and my current conditions?"
    async with open_services(Settings(data_dir=data_dir, retrieval=RetrievalSettings(cache_ttl_s=0))) as services:
        events = [e async for e in services.orchestrator.stream(QueryRequest(q=question, session_id="sold"))]
    final = events[-1]
    assert isinstance(final, FinalEvent) and not final.abstained
    assert final.citations[0].section_id == "test/act/2024/4#s7"


def _grow_script() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "scripts" / "grow_thesaurus.py"
    spec = importlib.util.spec_from_file_location("grow_thesaurus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_generated_entries_point_at_the_corpus_subject_words_and_read_no_held_out_question(
    shared_data: Path,
) -> None:
    """Each generated legal term is a word of a section heading or a defined term (what a provision is named by), no
    reviewed rejection is back, and every generated lay word comes from a development question or a definition: the
    held-out questions never feed the thesaurus."""
    grow = _grow_script()
    root = Path(__file__).resolve().parent.parent
    corpus = grow.read_corpus(shared_data / "corpus/zimbabwe_legislation/acts.jsonl")
    generated = tomllib.loads(DEFAULT_PATH.read_text().split(grow.GENERATED, 1)[1])["entry"]
    assert len(generated) >= 40
    rejected = grow.read_review(grow.REVIEW)
    dev = " ".join(
        str(q["question"]).lower()
        for q in grow.load_questions([root / "evaluation/lay_questions.jsonl", root / "evaluation/dev_questions.jsonl"])
    )
    meanings = {meaning for _, meaning in corpus.definitions}
    for entry in generated:
        (lay,) = entry["lay"]
        assert re.search(rf"\b{re.escape(lay)}\b", dev) or lay in meanings, lay
        for term in entry["legal"]:
            assert all(word in corpus.subject for word in term.split()), term
            assert (lay, term) not in rejected


def test_the_generator_bridges_an_everyday_word_to_its_provisions_heading(tmp_path: Path) -> None:
    """The three rules on a small corpus: a question's rare word meets its gold heading's word when they mean the same
    (and not when they do not), and a reviewed rejection stays out."""
    grow = _grow_script()
    acts = tmp_path / "acts.jsonl"
    sections = [
        {
            "section": "1",
            "heading": "Damage to motor vehicles",
            "text": "Any person who causes damage to motor vehicles.",
        },
        {"section": "2", "heading": "Licences for hawkers", "text": "No hawkers shall trade without licences."},
        *({"section": str(n), "heading": "Fees", "text": f"A fee of {n} dollars is payable."} for n in range(3, 400)),
    ]
    acts.write_text(json.dumps({"id": "t/1", "sections": sections, "definitions": []}) + "\n")
    questions = tmp_path / "q.jsonl"
    rows = [
        {"question": "Someone scratched my car with a key", "gold": [{"law_id": "t/1", "section": "s1"}]},
        {"question": "Can a street seller work without papers?", "gold": [{"law_id": "t/1", "section": "s2"}]},
        {"question": "Somebody keyed my car", "gold": [{"law_id": "t/1", "section": "s1"}], "split": "heldout"},
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    curated = tmp_path / "lay.toml"
    curated.write_text('version = "1"\n[[entry]]\nlay = ["boss"]\nlegal = ["employer"]\n')
    review = tmp_path / "review.toml"
    review.write_text('rejected = ["seller -> licences"]\n')
    args = argparse.Namespace(
        acts=acts, questions=[questions], curated=curated, review=review, align_min=0.5, near_min=0.75, near_k=2,
        target_share=0.02, cache=None,
    )  # fmt: skip
    found = grow.grow(args)
    assert "vehicles" in found.get("car", {}) or "vehicle" in found.get("car", {})
    assert "licences" not in found.get("seller", {})
    assert "keyed" not in found  # a held-out question is never read
    assert all(
        term in {"damage", "motor", "vehicles", "licences", "hawkers", "fees"} for t in found.values() for term in t
    )
