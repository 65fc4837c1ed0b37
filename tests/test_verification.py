from api.composer.verification import verify_answer
from api.schemas.events import Citation

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


def test_short_quotes_are_not_checked() -> None:
    assert verify_answer("It says “two months” [1].", OFFERED, {"d#s3": SECTION}).quotes_checked == 0
