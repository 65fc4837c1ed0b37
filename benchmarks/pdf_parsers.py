"""Compare PDF text extractors on the shared Zimbabwe PDFs: speed, and fidelity against the same Acts' text.

Usage: python benchmarks/pdf_parsers.py [--shared ../shared/data]   (runs each parser that is importable)

Fidelity is measured on the statutes that also appear in acts.jsonl: the share of the Act's word 5-grams (from its
section texts, normalised: lower-case, letters and digits only) that occur in the extracted text. Layout noise
(headers, footers, hyphenation, words run together) lowers it; a missing text layer drives it to zero.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

FIDELITY = {  # PDF file -> acts.jsonl id
    "Marriages_Act_2022.pdf": "zw/act/2022/1",
    "Electoral_Act.pdf": "zw/act/2004/25",
    "Citizenship_of_Zimbabwe_Act.pdf": "zw/act/1984/23",
}


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def ngrams(tokens: list[str], n: int = 5) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def with_pypdf(path: Path) -> list[str]:
    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(path).pages]


def with_pdfplumber(path: Path) -> list[str]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return [page.extract_text() or "" for page in pdf.pages]


def with_pymupdf(path: Path) -> list[str]:
    import pymupdf

    with pymupdf.open(path) as doc:
        return [page.get_text() for page in doc]


def with_pypdfium2(path: Path) -> list[str]:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(path)
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


PARSERS: dict[str, Callable[[Path], list[str]]] = {
    "pypdf": with_pypdf,
    "pdfplumber": with_pdfplumber,
    "pymupdf": with_pymupdf,
    "pypdfium2": with_pypdfium2,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    pdfs = sorted((args.shared / "corpus" / "zimbabwe_pdfs").glob("*.pdf"))
    acts = {}
    for line in (args.shared / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open():
        record = json.loads(line)
        if record["id"] in FIDELITY.values():
            acts[record["id"]] = " ".join(s["text"] for s in record["sections"])
    print(
        "| parser | pages | seconds | pages/s | "
        + " | ".join(f"5-gram recall {k.split('_')[0]}" for k in FIDELITY)
        + " | empty pages |"
    )
    print("| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in FIDELITY) + " | ---: |")
    for name, extract in PARSERS.items():
        try:
            extract(pdfs[0])
        except ImportError:
            print(f"| {name} | not installed |")
            continue
        pages = empty = 0
        recall: dict[str, float] = {}
        start = time.perf_counter()
        for pdf in pdfs:
            texts = extract(pdf)
            pages += len(texts)
            empty += sum(1 for t in texts if len(t.strip()) < 20)
            if pdf.name in FIDELITY:
                gold = ngrams(words(acts[FIDELITY[pdf.name]]))
                got = ngrams(words("\n".join(texts)))
                recall[pdf.name] = len(gold & got) / len(gold)
        seconds = time.perf_counter() - start
        cells = " | ".join(f"{recall[k]:.3f}" for k in FIDELITY)
        print(f"| {name} | {pages} | {seconds:.1f} | {pages / seconds:.1f} | {cells} | {empty} |")


if __name__ == "__main__":
    main()
