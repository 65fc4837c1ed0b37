"""A judgment's heading read into metadata: court, decision date, citation, case numbers, parties and judges.

Common-law judgments open with the same block whatever the court: the parties ("A versus B and C", each side's
parties on lines of their own or in one "A v B"), the court ("HIGH COURT OF ZIMBABWE"), the judges with the titles
they sign with ("PATEL JA, BHUNU JA & BERE JA"), the place and dates of hearing and of judgment ("HARARE, 20 & 21
March & 24 May 2023": judgment is given on the last), counsel ("T. Mpofu, for the appellant", which names each
side's role), and the judgment's own number and case number, often in the running header ("HH 48-25", "HC 3863/14").
What differs between jurisdictions, the forms of citation and case number and the courts they name, is data:
``api/data/judgments.toml``. A medium-neutral citation ("[2025] ZWHHC 48") is read from the text, else from the
file's name as its publisher gave it; the court's own judgment number ("HH 106-17") serves where there is none.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from api.schemas.documents import Judgment, Party

PATH = Path(__file__).resolve().parent.parent.parent / "api" / "data" / "judgments.toml"
_SMALL_WORDS = frozenset("of the and in for on at by to de la".split())
_ENUMERATOR = re.compile(r"(?:^|\s)\(\d{1,2}\)\s+")
_LONG_ASIDE = re.compile(r"\(([^()]{0,300})\)")
_INLINE_SIDES = re.compile(r"\s(?:v|vs\.?|versus)\s", re.I)


@dataclass(frozen=True, slots=True)
class _Table:
    code: str
    neutral: re.Pattern[str] | None
    neutral_courts: dict[str, str]
    serial: re.Pattern[str] | None
    serial_courts: dict[str, str]
    case_number: re.Pattern[str] | None


@dataclass(frozen=True, slots=True)
class Rules:
    """The patterns of ``judgments.toml``, compiled once."""

    separator: re.Pattern[str]
    joiner: re.Pattern[str]
    noise: re.Pattern[str]
    judge: re.Pattern[str]
    judge_prefixed: re.Pattern[str]
    opens_body: re.Pattern[str]
    court: re.Pattern[str]
    applicant_roles: tuple[str, ...]
    respondent_roles: tuple[str, ...]
    role: re.Pattern[str]
    role_line: re.Pattern[str]
    decision_label: re.Pattern[str]
    date: re.Pattern[str]
    month_word: re.Pattern[str]
    months: tuple[str, ...]
    labelled_serial: re.Pattern[str]
    labelled_case: re.Pattern[str]
    tables: tuple[_Table, ...]


def _alternation(items: Sequence[str], escape: bool = False) -> str:
    ordered = sorted(items, key=len, reverse=True)
    return "|".join(re.escape(i).replace(r"\ ", r"[\s_]+") if escape else i for i in ordered)


@lru_cache(maxsize=2)
def load_rules(path: Path = PATH) -> Rules:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    base = data["default"]
    titles = _alternation(base["judge_titles"])
    months = tuple(m.lower() for m in base["months"])
    month = _alternation(months)
    roles = (*base["applicant_roles"], *base["respondent_roles"])
    tables = []
    for code, table in data.items():
        if code == "default":
            continue
        neutral_courts = dict(table.get("neutral_courts", {}))
        serial_courts = dict(table.get("serial_courts", {}))
        prefixes = table.get("case_number_prefixes", [])
        tables.append(_Table(
            code=code.upper(),
            neutral=re.compile(rf"\[?((?:19|20)\d\d)\]?[\s_]+({_alternation(list(neutral_courts), True)})[\s_]+"
                               r"(\d{1,5})(?![\d/-])") if neutral_courts else None,
            neutral_courts={re.sub(r"\s+", " ", k): v for k, v in neutral_courts.items()},
            serial=re.compile(rf"\b({_alternation(list(serial_courts), True)})\s*(\d{{1,5}})\s*[-/]\s*(\d{{4}}|\d\d)\b")
            if serial_courts else None,
            serial_courts=serial_courts,
            case_number=re.compile(rf"\b({_alternation(prefixes, True)})\s*(\d{{1,6}})\s*/\s*(\d{{4}}|\d\d)\b")
            if prefixes else None,
        ))  # fmt: skip
    return Rules(
        separator=re.compile(rf"(?:{_alternation(base['separators'])})", re.I),
        joiner=re.compile(rf"(?:{_alternation(base['joiners'])})", re.I),
        noise=re.compile(rf"(?:{_alternation(base['noise'])})", re.I),
        judge=re.compile(rf"(?<![\w.'’-])([A-Z][A-Z'’]+(?:-[A-Z][A-Z'’]+)?)\s*,?\s+({titles})(?![\w.'’-])"),
        judge_prefixed=re.compile(
            rf"\b(?:{_alternation(base['judge_prefixes'])})\s+([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)", re.I
        ),
        opens_body=re.compile(rf"^[A-Z][A-Z'’-]+(?:\s+[A-Z][A-Z'’-]+)?\s+(?:{titles})\s*:\s*\S"),
        court=re.compile(
            r"^(?:IN\s+THE\s+)?((?:THE\s+)?(?:(?!OF\b)[A-Z][A-Za-z'’]*\s+){0,3}COURT"
            r"(?:\s+OF\s+(?:THE\s+)?[A-Z][A-Za-z'’]*(?:\s+(?:OF\s+)?[A-Z][A-Za-z'’]*){0,2})?)",
            re.I,
        ),
        applicant_roles=tuple(base["applicant_roles"]),
        respondent_roles=tuple(base["respondent_roles"]),
        role=re.compile(
            rf"\b(?:for|in\s+person\s+for)\s+(?:the\s+)?(?:\w+\s+)?({_alternation(roles)})s?\b"
            rf"|^({_alternation(roles)})s?\s+in\s+person\b",
            re.I,
        ),
        role_line=re.compile(rf"(?:the\s+)?(?:\w+\s+)?(?:{_alternation(roles)})s?", re.I),
        decision_label=re.compile(rf"\b(?:{_alternation(base['decision_labels'])})", re.I),
        date=re.compile(
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({month})\s*,?\s+(\d{{4}})\b"
            rf"|\b({month})\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+(\d{{4}})\b",
            re.I,
        ),
        month_word=re.compile(rf"\b(?:{month})\b", re.I),
        months=months,
        labelled_serial=re.compile(
            rf"\b(?:{_alternation(base['judgment_number_labels'])})\s+No\.?\s*:?\s*([A-Z]{{1,6}})\s*(\d{{1,5}})\s*[-/]\s*"
            r"(\d{4}|\d\d)\b",
            re.I,
        ),
        labelled_case=re.compile(
            rf"\b(?:{_alternation(base['case_number_labels'])})\s+No\.?\s*:?\s*([A-Z]{{0,6}})\s*(\d{{1,6}})\s*/\s*"
            r"(\d{4}|\d\d)\b",
            re.I,
        ),
        tables=tuple(tables),
    )


def opens_body(text: str) -> bool:
    """Whether a paragraph begins the judgment itself: the judge's name and title, a colon and their words
    ("MUCHAWA J: The plaintiff …"), however short."""
    return bool(load_rules().opens_body.match(text))


def is_dates_line(text: str) -> bool:
    """Whether a line is the heading's place and dates ("HARARE; 20 May, 3 June … 2024 & 31 January 2025"),
    however long: besides dates it holds at most a place name."""
    rules = load_rules()
    if not rules.month_word.search(text):
        return False
    rest = rules.month_word.sub(" ", text)
    rest = re.sub(r"\b\d{1,4}(?:st|nd|rd|th)?\b|\band\b|\bof\b|[&,;.:()\-–]", " ", rest, flags=re.I)
    return len(rest.split()) <= 2


def _year(written: str) -> str:
    return written[-2:]


def _title_case(name: str) -> str:
    """A name written in capitals as a name is written ("NAVADA RESOURCES (PRIVATE) LIMITED" → "Navada Resources
    (Private) Limited"); a name already in mixed case, and initials ("N.O."), stay as written."""
    if re.search(r"[a-z]", re.sub(r"\([^()]*\)", "", name)):
        return name
    words = []
    for index, word in enumerate(name.split()):
        core = word.strip("()[],")
        if re.fullmatch(r"(?:[A-Z]\.)+[A-Z]?\.?|[IVX]{2,}", core):
            words.append(word)
        elif index and core.lower() in _SMALL_WORDS:
            words.append(word.lower())
        else:
            words.append(re.sub(r"[A-Za-z][A-Za-z]*", lambda m: m.group(0).capitalize(), word))
    return " ".join(words)


def _party(text: str, side: str) -> Party | None:
    """One party from its words: the name, and any long aside or trailing lower-case words as its capacity."""
    text = " ".join(text.split()).strip(" ,;")
    if not text:
        return None
    capacity = ""
    for aside in _LONG_ASIDE.finditer(text):
        if len(aside.group(1).split()) >= 4:
            capacity = aside.group(1).strip()
            text = (text[: aside.start()] + text[aside.end() :]).strip()
            break
    if not capacity and (tail := re.search(r"\s(?=(?:In|in)\s+(?:his|her|its|their)\s+capacity\b)", text)):
        text, capacity = text[: tail.start()].strip(), text[tail.end() :].strip()
    return Party(name=_title_case(text.strip(" ,;")), side=side, capacity=capacity) if text else None


def _side(lines: Sequence[str], side: str, rules: Rules) -> list[Party]:
    groups: list[list[str]] = [[]]
    for line in lines:
        if groups[-1] and rules.role_line.fullmatch(line):
            continue  # "Appellant" under a party's name: the side's role, read from the heading as counsel's are
        if rules.joiner.fullmatch(line):
            groups.append([])
        else:
            groups[-1].append(line)
    parties: list[Party] = []
    for group in groups:
        joined = " ".join(group)
        pieces = [p for p in _ENUMERATOR.split(joined) if p.strip()] if _ENUMERATOR.match(joined) else [joined]
        parties.extend(p for piece in pieces if (p := _party(piece, side)) is not None)
    return parties


def _citations(text: str, source_name: str, rules: Rules) -> tuple[list[str], list[str], str, str]:
    """The judgment's citations (neutral first), its case numbers, its jurisdiction's code and the court the
    citation names, from the heading ``text`` and the file's name."""
    neutral: list[str] = []
    serial: list[str] = []
    cases: list[str] = []
    code = court = ""
    taken: list[tuple[int, int]] = []
    for match in rules.labelled_serial.finditer(text):
        for table in rules.tables:
            if match.group(1).upper() in table.serial_courts:
                serial.append(f"{match.group(1).upper()} {int(match.group(2))}-{_year(match.group(3))}")
                code, court = code or table.code, court or table.serial_courts[match.group(1).upper()]
                taken.append(match.span())
                break
    for match in rules.labelled_case.finditer(text):
        prefix = match.group(1).upper()
        cases.append(f"{prefix + ' ' if prefix else ''}{int(match.group(2))}/{match.group(3)}")
        taken.append(match.span())

    def free(span: tuple[int, int]) -> bool:
        return all(span[1] <= a or span[0] >= b for a, b in taken)

    for table in rules.tables:
        for where in (text, source_name):
            if table.neutral is None or neutral:
                break
            for match in table.neutral.finditer(where):
                key = re.sub(r"[\s_]+", " ", match.group(2))
                neutral.append(f"[{match.group(1)}] {key} {int(match.group(3))}")
                code, court = code or table.code, court or table.neutral_courts.get(key, "")
                break
        if table.serial is not None:
            for match in table.serial.finditer(text):
                if free(match.span()):
                    serial.append(f"{match.group(1)} {int(match.group(2))}-{_year(match.group(3))}")
                    code, court = code or table.code, court or table.serial_courts[match.group(1)]
                    taken.append(match.span())
        if table.case_number is not None:
            for match in table.case_number.finditer(text):
                if free(match.span()):
                    cases.append(f"{match.group(1)} {int(match.group(2))}/{match.group(3)}")
                    taken.append(match.span())
    return list(dict.fromkeys(neutral + serial)), list(dict.fromkeys(cases)), code, court


def _dates(text: str, rules: Rules) -> list[str]:
    found = []
    for match in rules.date.finditer(text):
        day, month, year = (match.group(1), match.group(2), match.group(3)) if match.group(1) else (
            match.group(5), match.group(4), match.group(6))  # fmt: skip
        try:
            found.append(dt.date(int(year), rules.months.index(month.lower()) + 1, int(day)).isoformat())
        except ValueError:
            continue
    return found


def _decided(lines: Sequence[str], rules: Rules) -> str:
    """The date judgment was given: the last date after a label that says so ("Delivered: …"), else the last date
    of the heading's first run of lines with dates (hearing dates come first, the judgment's last)."""
    for index, line in enumerate(lines):
        if label := rules.decision_label.search(line):
            if found := _dates(line[label.end() :] + " " + " ".join(lines[index + 1 : index + 2]), rules):
                return found[0]
    run: list[str] = []
    for line in lines:
        if rules.month_word.search(line) and re.search(r"\d", line):
            run.append(line)
        elif run:
            break
    found = _dates(" ".join(run), rules)
    return found[-1] if found else ""


def read_judgment(heading: Sequence[str], running: Sequence[str] = (), source_name: str = "") -> tuple[Judgment, str]:
    """What the heading lines (and the running header, and the file's name) say about the case, and the code of
    the jurisdiction its citation belongs to ('' when none of ``judgments.toml``'s tables knows it)."""
    rules = load_rules()
    lines = [" ".join(line.split()) for line in heading if line.strip()]
    citations, cases, code, cited_court = _citations("\n".join([*running, *lines]), source_name, rules)
    start, end, split = _party_block(lines, rules)
    parties = _parties(lines[start:end], split - start if split is not None else None, rules)
    header = []
    for line in [*lines[:start], *lines[end:]]:
        if rules.role.search(line) or (len(line.split()) >= 40 and not is_dates_line(line)):
            break  # counsel, or the judgment itself
        header.append(line)
    rest = lines[end:]
    court = ""
    judges: list[str] = []
    for line in header:
        found = rules.court.match(line)
        after = line
        if found and not court:
            named = _cut(found.group(1), rules)
            court = _title_case(named.upper()) if named.isupper() else named
            after = line[len(named) + found.start(1) :]
        judges.extend(_judges(after, rules))
    if not judges:
        for line in rest[:40]:
            if opening := rules.opens_body.match(line):
                judges.extend(_judges(opening.group(0), rules))
                break
    roles = [(m.group(1) or m.group(2)).lower() for line in rest[:40] for m in rules.role.finditer(line)]
    labels = [m for line in lines[start + 1 : end] if (m := rules.role_line.fullmatch(line))]  # "Appellant" lines
    roles += [m.group(0).split()[-1].lower().removesuffix("s") for m in labels]
    first = next((r for r in roles if r in rules.applicant_roles), "")
    second = next((r for r in roles if r in rules.respondent_roles), "")
    parties = [p.model_copy(update={"role": first if p.side == "applicant" else second}) for p in parties]
    judgment = Judgment(
        court=court or cited_court,
        decided=_decided(header, rules),
        neutral_citation=citations[0] if citations else "",
        citations=citations,
        case_numbers=cases,
        case_name=_case_name(parties),
        parties=parties,
        judges=list(dict.fromkeys(judges)),
    )
    return judgment, code


def _cut(court: str, rules: Rules) -> str:
    """The court's name without what follows it on its line (the judge, the place and dates)."""
    for pattern in (rules.judge, rules.date, rules.month_word):
        if found := pattern.search(court):
            court = court[: found.start()]
    return re.split(r"[;,:]", court)[0].strip()


def _not_a_party(line: str, rules: Rules) -> bool:
    if rules.noise.fullmatch(line):
        return True
    stripped = rules.labelled_serial.sub(" ", rules.labelled_case.sub(" ", line))
    return stripped != line and len(stripped.split()) <= 1


def _stops_parties(line: str, rules: Rules) -> bool:
    """Whether a line cannot be a party's: a label line ("Before:", "Coram: …"), the court, a judge, a date,
    counsel, a citation or case number, or noise."""
    return bool(
        _not_a_party(line, rules) or line.endswith(":") or re.match(r"[\w ]{1,30}:\s", line)
        or rules.court.match(line) or rules.judge.search(line) or rules.role.search(line)
        or (rules.month_word.search(line) and rules.date.search(line))
    )  # fmt: skip


def _party_block(lines: Sequence[str], rules: Rules) -> tuple[int, int, int | None]:
    """Where the parties are: the lines around the first line that separates the sides ("versus"), or, where the
    sides are joined by "and" alone, around the "and" after a line naming the first side's role ("Appellant");
    with the index of that separating line. Without either, the lines from the first that can be a party's."""
    split = next((i for i, line in enumerate(lines[:80]) if rules.separator.fullmatch(line)), None)
    if split is None:
        split = next(
            (i for i, line in enumerate(lines[:80]) if rules.joiner.fullmatch(line) and i and (
                role := rules.role_line.fullmatch(lines[i - 1])) and role.group(0).split()[-1].lower().removesuffix("s")
             in rules.applicant_roles),
            None,
        )  # fmt: skip
    if split is None:
        start = 0
        while start < len(lines) and _not_a_party(lines[start], rules):
            start += 1
        end = start
        while end < len(lines) and not _stops_parties(lines[end], rules):
            end += 1
        return start, end, None
    start = split
    while start > 0 and not _stops_parties(lines[start - 1], rules):
        start -= 1
    end = split + 1
    while end < len(lines) and not _stops_parties(lines[end], rules):
        end += 1
    return start, end, split


def _parties(block: Sequence[str], split: int | None, rules: Rules) -> list[Party]:
    if split is not None:
        return _side(block[:split], "applicant", rules) + _side(block[split + 1 :], "respondent", rules)
    for line in block:
        if len(sides := _INLINE_SIDES.split(line, maxsplit=1)) == 2:
            return _side([sides[0]], "applicant", rules) + _side([sides[1]], "respondent", rules)
    return []


def _judges(text: str, rules: Rules) -> list[str]:
    """The judges a line names: "MUCHAWA J" as "Muchawa J"; names listed before a plural title ("PONNAN, MOLEMELA
    JJA") each with the singular; "Lord Justice Lewison" as written."""
    found: list[str] = []
    for match in rules.judge.finditer(text):
        title = match.group(2)
        if title in ("JJ", "JJA"):
            single = title[1:]
            before = re.search(r"((?:[A-Z][A-Z'’-]+\s*(?:,|&|\band\b)\s*)+)$", text[: match.start()])
            names = re.findall(r"[A-Z][A-Z'’-]+", before.group(1)) if before else []
            found.extend(f"{_title_case(name)} {single}" for name in [*names, match.group(1)])
        else:
            found.append(f"{_title_case(match.group(1))} {title}")
    found.extend(_title_case(" ".join(m.group(0).split())) for m in rules.judge_prefixed.finditer(text))
    return found


def _case_name(parties: Sequence[Party]) -> str:
    """ "A v B", with "and Another" or "and Others" where a side has more than one party."""
    sides = []
    for side in ("applicant", "respondent"):
        named = [p.name for p in parties if p.side == side]
        if not named:
            return ""
        more = {1: "", 2: " and Another"}.get(len(named), " and Others")
        sides.append(named[0] + more)
    return " v ".join(sides)
