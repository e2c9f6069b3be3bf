"""The JSON API: search, verify, one chunk. Response models are the contract's own records."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query, Request
from pydantic import BaseModel

from index.chunk_tokens import ChunkToken, chunk_tokens
from index.inspect import ChunkPlace, inspect_chunk
from index.verify import verify_answer
from index.viewer.server.state import ServerState
from schemas.answer_json import parse_answer
from schemas.citations import ClaimRecord, Policy, VerifySummary
from schemas.errors import AnswerFormatError
from schemas.records import SearchHit

router = APIRouter(prefix="/api", tags=["api"])

MAX_K = 100


class SearchResponse(BaseModel):
    query: str
    k: int
    generation: str
    hits: list[SearchHit]


class VerifyResponse(BaseModel):
    answer_id: str
    policy: Policy
    generation: str
    records: list[ClaimRecord]
    summary: VerifySummary


class ChunkResponse(BaseModel):
    chunk: ChunkPlace
    tokens: list[ChunkToken]


# The Answer shape, documented for clients; the body is read leniently by schemas.answer_json
# (camelCase accepted, a malformed claim kept with its error rather than failing the request).
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["claims"],
    "description": "A model's answer. camelCase keys (answerId, claimId, chunkId) are accepted too.",
    "properties": {
        "answer_id": {"type": "string"},
        "text": {"type": "string"},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["text"],
                "properties": {
                    "claim_id": {"type": "string"},
                    "text": {"type": "string"},
                    "support": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["chunk_id", "quote"],
                            "properties": {
                                "chunk_id": {"type": "string", "example": "pricing/rate-card.pdf#tok:417"},
                                "quote": {"type": "string"},
                                "retrieved_rank": {"type": "integer"},
                                "retrieved_score": {"type": "number"},
                            },
                        },
                    },
                },
            },
        },
    },
}


def _server(request: Request) -> ServerState:
    return request.app.state.server


@router.get("/search", response_model=SearchResponse, summary="Nearest chunks to a query, with their exact spans")
def api_search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="the query")],
    k: Annotated[int, Query(ge=1, le=MAX_K, description="number of hits")] = 5,
) -> SearchResponse:
    server = _server(request)
    with server.reading():
        hits = server.index.search(q, k)
    return SearchResponse(query=q, k=k, generation=server.index.generation.name, hits=hits)


@router.post(
    "/verify",
    response_model=VerifyResponse,
    summary="Check every quote of an answer against the chunk it cites, and locate it",
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": ANSWER_SCHEMA}}}},
    responses={413: {"description": "request body too large"}, 422: {"description": "not an answer"}},
)
def api_verify(
    request: Request,
    answer: Annotated[dict[str, Any], Body()],
    policy: Annotated[Policy, Query(description="what happens to claims that fail")] = Policy.MARK,
) -> VerifyResponse:
    server = _server(request)
    try:
        parsed = parse_answer(answer)
    except AnswerFormatError as exc:
        raise HTTPException(422, str(exc)) from None
    with server.reading():
        records, summary = verify_answer(server.index, parsed, policy=policy)
    return VerifyResponse(
        answer_id=parsed.answer_id, policy=policy, generation=server.index.generation.name,
        records=records, summary=summary,
    )


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
