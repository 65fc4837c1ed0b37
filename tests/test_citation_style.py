"""Citations in the jurisdiction's own style: the templates are data (``api/data/citation_style.toml``), every
citation of a stream carries its ``cite_as``, and the WhatsApp reply, the web page's copy and the CLI use it."""

from __future__ import annotations

from pathlib import Path

import httpx

from api.text.citation_style import cite_as, jurisdiction_for, load_styles
from tests.servers import LiveServer
from tests.sse import collect


def test_a_zimbabwe_statute_is_cited_by_short_title_chapter_and_section() -> None:
    assert cite_as("Marriages Act, 2022", "section 3(1)", "zw/act/2022/1#s3(1)", "5:15", "ZW") == (
        "Marriages Act [Chapter 5:15], s 3(1)"
    )
    assert cite_as("Marriages Act, 2022", "section 3", "zw/act/2022/1#s3", "", "ZW") == "Marriages Act, 2022, s 3"
    assert cite_as("Smith v Jones", "paragraph 12", "zw/judgment/1#p12", "", "ZW") == "Smith v Jones, para 12"
    # An Act's number in its year's series is no chapter number: it is cited by its title.
    title = "Constitution of Zimbabwe Amendment (No. 20) Act, 2013"
    assert cite_as(title, "section 78", "zw/act/2013/1#s78", "Act 1 of 2013", "ZW") == f"{title}, s 78"


def test_a_jurisdiction_without_a_style_of_its_own_is_cited_in_the_default_style() -> None:
    assert cite_as("Companies Act", "section 4(2)(b)", "xx/act/1#s4(2)(b)", "Chapter 24:03", "XX") == (
        "Companies Act (Chapter 24:03), section 4(2)(b)"
    )
    assert cite_as("Companies Act", "preamble", "xx/act/1#preamble", "", "") == "Companies Act, preamble"
    # A doc key names its jurisdiction's style where a table is named after its first segment.
    assert jurisdiction_for("zw/act/2022/1") == "ZW" and jurisdiction_for("obliqa/p/1") == ""
    assert jurisdiction_for("obliqa/p/1", known="zw") == "ZW"


def test_the_style_is_data(tmp_path: Path) -> None:
    styles = tmp_path / "style.toml"
    styles.write_text(
        '[default]\nstatute = "{title} s.{number}"\nstatute_chaptered = "{title} cap {chapter} s.{number}"\n'
        'judgment = "{title} at [{number}]"\nother = "{title} ({label})"\n\n'
        '[KE]\nstatute = "Section {number}, {title}"\n'
    )
    loaded = load_styles(styles)
    assert cite_as("Employment Act", "section 45", "ke/act/7#s45", "", "KE", loaded) == "Section 45, Employment Act"
    assert cite_as("Employment Act", "section 45", "ke/act/7#s45", "226", "KE", loaded) == "Employment Act cap 226 s.45"
    assert cite_as("R v X", "paragraph 3", "uk/j/1#p3", "", "UK", loaded) == "R v X at [3]"


async def test_every_citation_of_a_stream_carries_its_jurisdictions_style(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=60) as client:
        params = {"q": "How much deposit can a landlord require?"}
        events = await collect(client, "GET", "/api/v1/query/stream", params=params)
    streamed = [e.json()["citation"] for e in events if e.event == "citation"]
    final = next(e.json() for e in events if e.event == "final")
    assert streamed and final["citations"]
    for citation in [*streamed, *final["citations"]]:
        # The sample corpus is drafted (and cited) on Zimbabwe's model: short title, chapter, "s".
        assert citation["cite_as"].startswith("Residential Tenancies Act [Chapter 8:21], s "), citation
    deposit = next(c for c in final["citations"] if "deposit that exceeds" in c["quote"])
    assert deposit["cite_as"] == "Residential Tenancies Act [Chapter 8:21], s 3(1)"
