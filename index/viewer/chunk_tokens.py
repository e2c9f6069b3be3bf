"""The tokens the embedding model sees for a chunk, each placed back on the chunk text.

The model embeds the chunk's normalised text (``ingest.text.chunker.embed_text``);
its tokens are mapped back through the normaliser's index map, so an
ingestion engineer sees which characters of the stored text each token covers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ingest.embed import load_tokenizer, resolve_model
from ingest.text import normalize_with_map
from schemas.records import Chunk, Manifest


@dataclass(frozen=True, slots=True)
class ChunkToken:
    token: str
    char_start: int  # chunk-relative range of the stored text the token came from
    char_end: int
    special: bool  # [CLS], [SEP]: no text behind it (char_start == char_end == 0)


def chunk_tokens(manifest: Manifest, chunk: Chunk) -> list[ChunkToken]:
    """Tokens of ``chunk`` as the model of ``manifest`` counts them, special tokens included.

    >>> len(chunk_tokens(idx.manifest, idx.chunk("web/faq.html#tok:0"))) == idx.chunk("web/faq.html#tok:0").n_tokens  # doctest: +SKIP
    True
    """
    normalized = normalize_with_map(chunk.text)
    encoding = _tokenizer(manifest.model_path).encode(normalized.text)
    tokens = []
    for token, (a, b), special in zip(encoding.tokens, encoding.offsets, encoding.special_tokens_mask):
        if special or a >= b:
            tokens.append(ChunkToken(token, 0, 0, True))
        else:
            start, end = normalized.original_span(a, b)
            tokens.append(ChunkToken(token, start, end, False))
    return tokens


@functools.lru_cache(maxsize=2)
def _tokenizer(model_path: str):
    # The build chunks with the packaged model's tokenizer unless a local model was named.
    return load_tokenizer(resolve_model(model_path or None))
