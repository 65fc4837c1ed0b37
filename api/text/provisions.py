"""Which provision a position in a provision's text falls in: subsection "(2)" and paragraph "(b)" markers.

Shared by chunking (where a chunk starts) and the composer (where a quote starts), so both name the same provision.
"""

from __future__ import annotations

import re

# "(2)", "(b)" or "(iii)" standing alone after whitespace: a provision starts there unless the word before refers to
# one.
_MARKER = re.compile(r"(?:^|(?<=\s))\((\d{1,3}[A-Za-z]?|[a-z]{1,2}|[ivx]{3,4})\)(?=\s)")
_ROMAN = re.compile(r"(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})")
# A roman numeral that is also the letter after the paragraph before it: "(i)" after "(h)" is paragraph (i).
_LETTER_BEFORE = {"i": "h", "v": "u", "x": "w", "ii": "hh", "vv": "uu", "xx": "ww"}
_REFERENCE_WORDS = frozenset(
    "section sections subsection subsections paragraph paragraphs subparagraph subparagraphs".split()
)
# Words that join a reference's labels ("paragraph (a) or (b)", "subsections (2) to (4)"), and join a list's items
# too ("…; or (b) resigns"): they continue a reference only after a label or number.
_JOINING_WORDS = frozenset("and or to of".split())
_LABEL = re.compile(r"\((\w+)\)")


_NUMBER_OR_LABEL = re.compile(r"^(?:\d{1,4}[A-Z]{0,2}|\(\w{1,4}\))+[,;]?$")
_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
    r"eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand)"
)
# "thirty (30) days", "level seven (7)", "twenty-eight (28)": a figure glossing the number just written in words.
_GLOSSED = re.compile(rf"^{_NUMBER_WORD}(?:-{_NUMBER_WORD})*$", re.I)


def _refers(words: list[str]) -> bool:
    """Whether a marker after ``words`` continues a reference: the word before it is a reference word ("subsection
    (2)"), or a provision's number or label that follows one ("section 120 (1) (b)", with a space before each). A
    word that ends its clause (";", ":", "." or a dash) ends any reference: "… in terms of paragraph (a) or (b); (d)
    three years" starts paragraph (d); so does a joining word after a clause ("…terminated; or (b) resigns")."""
    if words and words[-1][-1] in ";:.—–":
        return False
    window = words[-6:]
    for k in range(len(window) - 1, -1, -1):
        word = window[k].lower().strip(",;")
        if word in _REFERENCE_WORDS:
            return True
        if word in _JOINING_WORDS:
            if k == 0 or not _NUMBER_OR_LABEL.match(window[k - 1]) or window[k - 1][-1] in ";:":
                return False  # "…terminated; or (b)": a list's next item, not a reference's next label
            continue
        if not _NUMBER_OR_LABEL.match(window[k]):
            return False
    return False


def provision_starts(text: str, section_id: str, start_in: str = "") -> list[tuple[int, str]]:
    """(offset, provision id) for every subsection/paragraph marker in ``text``, in order.

    ``start_in`` is the provision the text begins inside (a chunk's provision id), so a paragraph marker met before
    any subsection marker still sits under the right subsection.
    """
    labels = _LABEL.findall(start_in.removeprefix(section_id))
    subsection = next((label for label in labels if label[0].isdigit()), "")
    paragraph = next((label for label in labels if not label[0].isdigit()), "")
    item = ""
    roman_list = False  # the current paragraphs are numbered in roman: "(i)", "(ii)", … with no letters above them
    starts = []
    for match in _MARKER.finditer(text):
        # Only the words just before the marker matter; a bounded window keeps long provisions linear.
        head = text[max(0, match.start() - 64) : match.start()]
        if not head.strip():
            head = text[: match.start()]
        at_line_start = "\n" in head[len(head.rstrip()) :] or not head.strip()
        words = head.split()
        label = match.group(1)
        # A marker followed by a capital opens a provision's sentence ("… section 120 (2) (7) Where the Minister …"),
        # whatever the words before it: a reference's next label is followed by its own words in lower case.
        opens = text[match.end() : match.end() + 3].lstrip()[:1].isupper()
        if (
            not at_line_start
            and not opens
            and (_refers(words) or (label.isdigit() and words and _GLOSSED.match(words[-1])))
        ):
            continue
        roman = bool(_ROMAN.fullmatch(label))
        if label[0].isdigit():
            subsection, paragraph, item, roman_list = label, "", "", False
        elif roman and roman_list:
            paragraph, item = label, ""  # "(1) The Minister may— (i) …; (ii) …": a list numbered in roman
        elif paragraph and roman and _LETTER_BEFORE.get(label) != paragraph:
            item = label  # a subparagraph of the current paragraph: "(a) thirty years, in the case of— (ii) …"
        elif len(label) <= 2:
            # An "(i)" that opens a list (no paragraph before it, or none that "(i)" follows) numbers it in roman.
            roman_list = label == "i" and not paragraph
            paragraph, item = label, ""
        elif roman and not paragraph:
            paragraph, item, roman_list = label, "", True  # a roman list met part-way ("(iii)" at a chunk's start)
        else:
            continue
        starts.append((match.start(), section_id + (f"({subsection})" if subsection else "") +
                       (f"({paragraph})" if paragraph else "") + (f"({item})" if item else "")))  # fmt: skip
    return starts


def provision_at(starts: list[tuple[int, str]], offset: int, default: str) -> str:
    """The provision at ``offset``: the last marker at or before it, else ``default``."""
    current = default
    for position, provision in starts:
        if position > offset:
            break
        current = provision
    return current


def provision_span(text: str, section_id: str, target: str) -> tuple[int, int] | None:
    """Where ``target`` (the section, or a provision within it such as ``…#s8(2)``) runs in its section's ``text``:
    from its marker to the next provision that is not inside it; None when the text has no such provision."""
    if target == section_id:
        return 0, len(text)
    starts = provision_starts(text, section_id)
    inside = [i for i, (_, p) in enumerate(starts) if p == target or p.startswith(target + "(")]
    if not inside:
        return None
    first = inside[0]
    end = next((at for at, p in starts[first + 1 :] if not (p == target or p.startswith(target + "("))), len(text))
    return starts[first][0], end
