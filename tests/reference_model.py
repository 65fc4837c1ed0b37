"""A scripted model that writes a reference answer (``evaluation/reference_answers.jsonl``), for the gate's tests and
its benchmark: it reads the numbered sources of the synthesize prompt the service sends, finds the question's gold
provisions among them, and streams the answer with each placeholder (``{1}``, ``{2}``) replaced by that provision's
``[n]`` marker. Every other skill gets HTTP 400, which the service treats as that call failing (its deterministic
path), as ``FakeOpenAI`` answers an unscripted skill."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from tests.servers import FakeOpenAI, Reply, skill_of

REFERENCES = Path(__file__).resolve().parents[1] / "evaluation" / "reference_answers.jsonl"
ABSTAIN = "I could not find this in the documents I have."
_SOURCE = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)
_MARKER = re.compile(r"\s*\[\d+\]")
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
_HEADER = re.compile(r"^(.*?), section (\w+)")  # "Title, section 12B (Heading, which may hold commas)"
_WORD = re.compile(r"[a-z0-9]+")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def sentences(answer: str) -> list[str]:
    """A reference answer's sentences: each ends with its placeholder and a full stop."""
    return [s for s in re.split(r"(?<=\}\.)\s+", answer.strip()) if s]


def norm(text: str) -> str:
    """Text as compared: markers and placeholders stripped, quotes straightened, whitespace collapsed."""
    text = _PLACEHOLDER.sub("", _MARKER.sub("", text)).translate(_QUOTES)
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split())).strip()


def core(sentence: str) -> str:
    """A sentence as looked for in streamed text: normalised, without its closing full stop."""
    return norm(sentence).rstrip(".")


@dataclass(frozen=True)
class Gold:
    title: str
    section: str
    """The section number as a citation's label shows it ("12B")."""


def prompt_sources(user: str) -> list[tuple[int, str, str]]:
    """The numbered sources of a synthesize prompt: (n, header, text), in order."""
    found = list(_SOURCE.finditer(user))
    out = []
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else user.find("\n\nQuestion:", match.end())
        out.append((int(match.group(1)), match.group(2), user[match.end() : end if end > 0 else len(user)].strip()))
    return out


def gold_sources(user: str, gold: list[Gold]) -> dict[int, list[tuple[int, str]]]:
    """For each gold provision (1-based, as the placeholders number them), the sources of a synthesize prompt that
    are pieces of it: (marker, text). A source header reads "Title, section N (heading)"."""
    found: dict[int, list[tuple[int, str]]] = {}
    for number, header, text in prompt_sources(user):
        if not (match := _HEADER.match(header)):
            continue
        for i, g in enumerate(gold, 1):
            if match.group(1) == g.title and match.group(2).casefold() == g.section.casefold():
                found.setdefault(i, []).append((number, text))
    return found


def closest(sentence: str, pieces: list[tuple[int, str]]) -> int:
    """The marker of the piece that shares the most words with ``sentence`` (the first on a tie)."""
    words = set(_WORD.findall(sentence.lower()))
    return max(pieces, key=lambda p: len(words & set(_WORD.findall(p[1].lower()))))[0]


def written(answer: str, found: dict[int, list[tuple[int, str]]]) -> str:
    """The answer as the scripted model writes it: each placeholder becomes the marker of the gold provision's piece
    that shares the most words with its sentence (a provision split over several pieces is cited where the
    sentence's words are); the model abstains when a provision it needs is not among the sources."""
    out = []
    for sentence in sentences(answer):
        if any(int(n) not in found for n in _PLACEHOLDER.findall(sentence)):
            return ABSTAIN
        out.append(_PLACEHOLDER.sub(lambda m, s=sentence: f"[{closest(s, found[int(m.group(1))])}]", sentence))
    return " ".join(out)


class ReferenceModel(FakeOpenAI):
    """The loopback model: answers every synthesize call with ``answer`` (placeholders resolved against that call's
    sources, so the corrective step's answer is written the same way), streamed a few words at a time."""

    def __init__(self) -> None:
        super().__init__([])
        self.answer = ""
        self.gold: list[Gold] = []
        self.offered: list[bool] = []
        """Per synthesize call since the last ``ask``: whether every gold provision was among its sources."""
        self.sent: list[str] = []

    def ask(self, answer: str, gold: list[Gold]) -> None:
        """Write ``answer`` for the next question, whose gold provisions are ``gold``."""
        self.answer, self.gold, self.offered, self.sent = answer, gold, [], []

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        if skill_of(body) == "synthesize":
            user = next((m["content"] for m in body["messages"] if m.get("role") == "user"), "")
            found = gold_sources(user, self.gold)
            self.offered.append(len(found) == len(self.gold))
            text = written(self.answer, found)
            self.sent.append(text)
            words = text.split(" ")
            self.replies = [Reply([" ".join(words[i : i + 3]) + " " for i in range(0, len(words), 3)])]
        return await super().chat(request)
