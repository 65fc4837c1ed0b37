"""Documents for the reader: a document's outline, and one provision with its neighbours, by doc_key only."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api.auth import CallerDep
from api.errors import NotFoundError
from api.middleware import rate_limited
from api.schemas.errors import error_responses
from api.schemas.reader import DocumentList, DocumentView, ProvisionView
from api.tools.reader import NOT_FOUND, DocumentReader, unsafe

router = APIRouter(prefix="/api/v1/documents", tags=["documents"], dependencies=[Depends(rate_limited)])


def get_reader(request: Request) -> DocumentReader:
    """The reader over the corpus being served now (a replica moves to a new version when another ingests)."""
    reader: DocumentReader = request.app.state.reader
    corpus = request.app.state.services.corpus
    if reader.corpus is not corpus:
        reader = request.app.state.reader = DocumentReader(corpus)
    return reader


Reader = Annotated[DocumentReader, Depends(get_reader)]


def _checked(request: Request, *values: str) -> None:
    raw = request.scope.get("raw_path", b"").decode("latin-1")
    if unsafe(raw, *values):
        raise NotFoundError(NOT_FOUND)


@router.get("", responses=error_responses(401, 429))
async def list_documents(reader: Reader, caller: CallerDep) -> DocumentList:
    return reader.listing(caller)


@router.get("/{doc_key:path}/provisions/{fragment}", responses=error_responses(401, 404, 422, 429))
async def get_provision(
    request: Request, reader: Reader, caller: CallerDep, doc_key: str, fragment: str
) -> ProvisionView:
    """The section holding ``<doc_key>#<fragment>`` (e.g. fragment ``s3(1)``), with the sections either side."""
    _checked(request, doc_key, fragment)
    return await reader.provision(doc_key, fragment, caller)


@router.get("/{doc_key:path}", responses=error_responses(401, 404, 422, 429))
async def get_document(request: Request, reader: Reader, caller: CallerDep, doc_key: str) -> DocumentView:
    _checked(request, doc_key)
    return await reader.document(doc_key, caller)
