"""The JSON API: search, verify, one chunk, and the JSON Schemas of the answer and the record.

Response models are the contract's own records. A verify response carries the
records exactly as `spanindex verify` writes them (``schemas.record_json``),
and its OpenAPI description is generated from the same types
(``schemas.json_schema``), as are the schemas served under ``/api/schemas``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.requests import ClientDisconnect

from index.viewer.chunk_tokens import ChunkToken, chunk_tokens
from index.inspect import ChunkPlace, inspect_chunk
from index.search.filters import MAX_FILTER_CHARS
from index.search.modes import search_mode
from index.citations.verify import verify_answer
from index.viewer.server.state import ServerState, refuse_answer
from schemas.answer_json import ANSWER_DESCRIPTION, NOT_FROM_THE_MODEL, REQUIRED, answer_json_schema, parse_answer
from schemas.citations import Answer, ClaimRecord, Policy, VerifySummary
from schemas.errors import AnswerFormatError, FilterError
from schemas.json_input import loads
from schemas.json_schema import record_schemas
from schemas.record_json import record_json_schema, to_json
from schemas.records import SearchHit, SearchMode

router = APIRouter(prefix="/api", tags=["api"])

MAX_K = 100
SCHEMA_MEDIA_TYPE = "application/schema+json"
_COMPONENTS = "#/components/schemas/"


class SearchResponse(BaseModel):
    query: str
    k: int
    mode: SearchMode
    generation: str
    hits: list[SearchHit]
    where: str | None = None  # the filter the hits were ranked under


@dataclass(frozen=True, slots=True)
class VerifyResponse:
    """One record per claim, as `spanindex verify` writes them, and what they add up to."""

    answer_id: str
    policy: Policy
    generation: str
    records: tuple[ClaimRecord, ...]
    summary: VerifySummary


class ChunkResponse(BaseModel):
    chunk: ChunkPlace
    tokens: list[ChunkToken]


def openapi_components() -> dict[str, dict]:
    """The contract's records for /openapi.json: the verify response and the answer, from their types."""
    answer = record_schemas(Answer, ref=_COMPONENTS, required=REQUIRED, omit=NOT_FROM_THE_MODEL)
    answer["Answer"]["description"] = ANSWER_DESCRIPTION
    return {**record_schemas(VerifyResponse, ref=_COMPONENTS), **answer}


def _json_body(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _server(request: Request) -> ServerState:
    return request.app.state.server


@router.get("/search", response_model=SearchResponse, summary="The chunks that best match a query, with their exact spans")
def api_search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="the query")],
    k: Annotated[int, Query(ge=1, le=MAX_K, description="number of hits")] = 5,
    mode: Annotated[
        SearchMode | None,
        Query(description="dense (embeddings), lexical (BM25) or hybrid (both, fused by trust-weighted scores); default lexical"),
    ] = None,
    where: Annotated[
        str | None,
        Query(max_length=MAX_FILTER_CHARS, description="a SQL condition on the documents, applied before ranking: "
              "doc_id LIKE 'contracts/%' AND meta['team'] = 'legal' (a bad one: 400 with the reason)"),
    ] = None,
) -> SearchResponse:
    server = _server(request)
    with server.reading():
        used = search_mode(server.index, mode)
        try:
            hits = server.index.search(q, k, mode=used, where=(where or "").strip() or None)  # where= alone: none
        except FilterError as exc:
            raise HTTPException(400, str(exc)) from None
    return SearchResponse(query=q, k=k, mode=used, generation=server.index.generation.name, hits=hits, where=where)


@router.post(
    "/verify",
    response_class=JSONResponse,
    summary="Check every quote of an answer against the chunk it cites, and locate it",
    # The body is read leniently (camelCase accepted, a malformed claim kept with its error):
    # documented here, parsed by schemas.answer_json.
    openapi_extra={"requestBody": {"required": True, **_json_body(openapi_components()["Answer"], "a model's answer")}},
    responses={
        200: _json_body({"$ref": _COMPONENTS + "VerifyResponse"}, "one located record per claim, and the summary"),
        413: {"description": "request body over the limit on an answer's size"},
        422: {"description": "not an answer: not JSON, nested too deeply, a number out of range, the wrong "
                              "shape, or more claims than the limit (the detail says which)"},
    },
)
async def api_verify(
    request: Request,
    policy: Annotated[Policy, Query(description="what happens to claims that fail")] = Policy.MARK,
) -> JSONResponse:
    # The body is read here, not by FastAPI: hostile JSON (nested 100,000 deep, an integer of
    # 5,001 digits) is refused with a reason by the same reader the CLI uses.
    try:
        body = await request.body()
    except ClientDisconnect:  # the client left, or the body limit cut it off (and answered 413)
        raise HTTPException(400, "the request body did not arrive whole") from None
    return await run_in_threadpool(_verify, request, body, policy)


def _verify(request: Request, body: bytes, policy: Policy) -> JSONResponse:
    try:
        parsed = parse_answer(loads(body, "the request body"), where="the answer")
    except AnswerFormatError as exc:
        refuse_answer(request, exc)
        raise HTTPException(422, str(exc)) from None
    server = _server(request)
    with server.reading():
        records, summary = verify_answer(server.index, parsed, policy=policy)
    response = VerifyResponse(parsed.answer_id, policy, server.index.generation.name, tuple(records), summary)
    return JSONResponse(to_json(response))


@router.get(
    "/chunks/{chunk_id:path}",
    response_model=ChunkResponse,
    summary="One chunk: text, offsets, tokens, pages, line rectangles or HTML source range",
    responses={404: {"description": "no such chunk"}},
)
def api_chunk(request: Request, chunk_id: str) -> ChunkResponse:
    server = _server(request)
    with server.reading():
        chunk = server.index.chunk(chunk_id)
        if chunk is None:
            raise HTTPException(404, f"no chunk {chunk_id!r} in this index")
        place = inspect_chunk(server.index, chunk_id)
        tokens = chunk_tokens(server.index.manifest, chunk)
    return ChunkResponse(chunk=place, tokens=tokens)


@router.get("/schemas/answer", response_class=JSONResponse,
            summary="The JSON Schema of an answer: what POST /api/verify and `spanindex verify` take")
def api_answer_schema() -> JSONResponse:
    return JSONResponse(answer_json_schema(), media_type=SCHEMA_MEDIA_TYPE)


@router.get("/schemas/record", response_class=JSONResponse,
            summary="The JSON Schema of a claim record: one line of `spanindex verify`, one of a verify response's records")
def api_record_schema() -> JSONResponse:
    return JSONResponse(record_json_schema(), media_type=SCHEMA_MEDIA_TYPE)
