"""Reading scanned PDFs: tesseract on this machine, or the PageIndex OCR service by URL and key.

Both engines take a PDF's bytes and return one text per page, so the PDF parser treats their output exactly as it
treats a text layer: the same cleaning, structure detection and page spans.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

import httpx

from api.errors import ConfigError, IngestionError

if TYPE_CHECKING:
    from api.settings import IngestionSettings


class OcrEngine(Protocol):
    name: ClassVar[str]

    def read_pages(self, path: Path, data: bytes) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class TesseractOcr:
    """Debian's tesseract through pytesseract, a few pages at a time, one tesseract thread each.

    Measured on the 2017 Appropriation Act scan (A4, 300 dpi, 2 cores): 1.5 s a page with OMP_THREAD_LIMIT=1,
    10 s a page when each tesseract starts its own OpenMP threads and they compete.
    """

    name: ClassVar[str] = "tesseract"
    dpi: int = 300
    language: str = "eng"
    workers: int = 2

    def read_pages(self, path: Path, data: bytes) -> list[str]:
        import pytesseract

        os.environ.setdefault("OMP_THREAD_LIMIT", "1")

        def read(image: object) -> str:
            try:
                return str(pytesseract.image_to_string(image, lang=self.language, config="--psm 6"))
            except pytesseract.TesseractNotFoundError:
                raise IngestionError(f"{path.name} needs OCR and tesseract is not installed (tesseract-ocr)") from None
            except pytesseract.TesseractError as exc:
                raise IngestionError(f"tesseract could not read {path.name}: {exc.message}") from None

        # Rendering every page first would hold ~9 MB per page; keep a few in flight instead.
        import pypdfium2

        try:
            pdf = pypdfium2.PdfDocument(data)
        except pypdfium2.PdfiumError as exc:
            raise IngestionError(f"{path.name} is not a readable PDF ({exc})") from None
        texts: list[str] = []
        pending: deque[Future[str]] = deque()
        try:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="ocr") as pool:
                for i in range(len(pdf)):
                    image = pdf[i].render(scale=self.dpi / 72, grayscale=True).to_pil()
                    pending.append(pool.submit(read, image))
                    if len(pending) >= 2 * self.workers:
                        texts.append(pending.popleft().result())
                texts.extend(f.result() for f in pending)
        finally:
            pdf.close()
        return texts


_MARKDOWN_MARKS = re.compile(r"^#{1,6}\s+|\*\*|__", re.M)


@dataclass(frozen=True, slots=True)
class PageIndexOcr:
    """The PageIndex OCR service: upload the PDF, poll until it is read, take the text page by page.

    Its wire protocol: ``POST /doc/`` (multipart ``file``, header ``api_key``) answers ``{"doc_id"}``;
    ``GET /doc/{id}/?type=ocr&format=page`` answers ``{"status", "result": [{"page_index", "markdown"}]}`` with
    status ``processing``, ``completed`` or ``failed``; ``DELETE /doc/{id}/`` removes the upload afterwards.
    """

    name: ClassVar[str] = "pageindex"
    url: str
    api_key: str
    timeout_s: float = 600.0
    poll_s: float = 2.0
    attempts: int = 3

    def _call(self, client: httpx.Client, method: str, url: str, **kwargs: object) -> httpx.Response:
        """One request, retried with backoff on connection errors, 429 and 5xx."""
        delay = 1.0
        for attempt in range(1, self.attempts + 1):
            try:
                response = client.request(method, url, **kwargs)  # type: ignore[arg-type]
            except httpx.TransportError as exc:
                if attempt == self.attempts:
                    raise IngestionError(f"PageIndex at {self.url} cannot be reached: {exc}") from None
            else:
                if response.status_code in (401, 403):
                    raise IngestionError("PageIndex refused the API key (GWETA_INGESTION__PAGEINDEX_API_KEY)")
                if response.status_code < 400:
                    return response
                if response.status_code != 429 and response.status_code < 500 or attempt == self.attempts:
                    raise IngestionError(f"PageIndex answered {response.status_code}: {response.text[:200]}")
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    def read_pages(self, path: Path, data: bytes) -> list[str]:
        headers = {"api_key": self.api_key}
        with httpx.Client(base_url=self.url, headers=headers, timeout=60.0) as client:
            files = {"file": (path.name, data, "application/pdf")}
            submitted = self._call(client, "POST", "/doc/", files=files).json()
            doc_id = str(submitted["doc_id"])
            deadline = time.monotonic() + self.timeout_s
            try:
                while True:
                    body = self._call(client, "GET", f"/doc/{doc_id}/", params={"type": "ocr", "format": "page"}).json()
                    status = body.get("status")
                    if status == "completed":
                        break
                    if status == "failed":
                        raise IngestionError(f"PageIndex could not read {path.name}")
                    if time.monotonic() > deadline:
                        raise IngestionError(f"PageIndex did not finish {path.name} in {self.timeout_s:.0f} s")
                    time.sleep(self.poll_s)
            finally:
                try:
                    client.delete(f"/doc/{doc_id}/")
                except httpx.HTTPError:
                    pass  # a leftover upload costs storage, not correctness
        pages: dict[int, str] = {}
        for entry in body.get("result") or []:
            pages[int(entry["page_index"])] = _MARKDOWN_MARKS.sub("", str(entry.get("markdown", "")))
        if not pages:
            raise IngestionError(f"PageIndex returned no text for {path.name}")
        first = min(pages)
        return [pages.get(i, "") for i in range(first, max(pages) + 1)]


def tesseract_installed() -> bool:
    try:
        import pytesseract  # noqa: F401
    except ImportError:
        return False
    return shutil.which("tesseract") is not None


def build_ocr(settings: IngestionSettings) -> OcrEngine | None:
    """The engine the settings choose; ``auto`` is tesseract where installed, else none (scans then fail clearly)."""
    workers = max(1, min(4, os.cpu_count() or 1))
    match settings.ocr:
        case "off":
            return None
        case "auto":
            if not tesseract_installed():
                return None
            return TesseractOcr(settings.ocr_dpi, settings.ocr_language, workers)
        case "tesseract":
            if not tesseract_installed():
                raise ConfigError("ingestion.ocr=tesseract needs pytesseract and Debian's tesseract-ocr installed")
            return TesseractOcr(settings.ocr_dpi, settings.ocr_language, workers)
        case "pageindex":
            key = settings.pageindex_api_key.get_secret_value()
            return PageIndexOcr(settings.pageindex_url.rstrip("/"), key, settings.pageindex_timeout_s)
