"""The lexical index of a generation: BM25 over every chunk's text, beside the vectors.

Names, part numbers, figures and exact phrases are what an embedding blurs and
what a reader types; a BM25 index finds them. It is built with ``bm25s`` (the
Lucene variant of BM25) from the texts of all chunks of the generation, in
vector_id order, and stored as one Parquet table (``lexical.parquet``, schema
``schemas.tables.LEXICAL``), one row per token: ``token``, ``vector_ids`` (the
chunks holding it), ``weights`` (its BM25 weight in each of them).

A query's BM25 score for a chunk is the sum of the weights of the query's
tokens in that chunk (``index.lexical`` reads the table; bm25s is needed to
build it, not to search it). BM25 weights depend on the whole corpus (document
frequencies, mean length), so every generation rebuilds the table from its
chunk texts, as it rebuilds FAISS from its vectors. Text a reader cannot see
(hidden runs) is left out, as it is left out of what is embedded: hidden text
never draws a search to a chunk.

Tokens. The same function tokenises chunks and queries:

- the text is folded as the embedder's normaliser folds it, without keeping
  an offset map (ten times faster): NFKC (ligatures, full-width forms), a
  hyphen at a line end between letters joined away, soft hyphens and
  zero-width characters dropped, no break between two CJK characters, then
  case-folded;
- Latin, Greek and Cyrillic diacritics and Arabic short vowels are removed,
  Arabic and Persian letter variants folded (ي/ى→ی, ك→ک, أ/إ/آ→ا), so a query
  typed without them still matches;
- a word is a run of letters, digits and combining marks (anything else separates);
- scripts written without spaces between words (Han, Hiragana, Katakana, Thai,
  Lao, Khmer, Myanmar) and Hangul, whose words carry attached particles, are
  cut into overlapping character bigrams (a single character stays a unigram):
  ``東京都`` → ``東京``, ``京都``. Bigrams need no dictionary and find any word
  of two or more characters; a one-character query word in those scripts only
  matches where it stands alone.

No stemming and no stop words: the corpus is multilingual, and BM25's IDF
already gives frequent words little weight.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq
import regex

from ingest.hidden import HiddenText
from ingest.normalize import is_no_space_script
from schemas.tables import LEXICAL, META_LEXICAL, hidden_run_records, with_metadata

TOKENIZER_VERSION = 1  # bump when tokens would differ for the same text: the index must be rebuilt
K1 = 1.5
B = 0.75
METHOD = "lucene"

# Letters, digits and the marks that belong to them (Indic vowel signs, viramas).
_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
# As in ingest.normalize: a hyphen (or soft hyphen) at a line end between two letters joins them.
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])[-\u00ad\u2010\u2011][ \t]*(?:\r\n|\r|\n|\f)\s*(?=[^\W\d_])")
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_GAP = re.compile(r"(?<=[^\x00-\x7f])\s+(?=[^\x00-\x7f])")
_DIACRITICS = re.compile("[\u0300-\u036f\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_LETTER_FOLDS = str.maketrans(
    {"\u064a": "\u06cc", "\u0649": "\u06cc", "\u0643": "\u06a9", "\u0623": "\u0627", "\u0625": "\u0627", "\u0622": "\u0627"}
)
# Beyond CJK (ingest.normalize): Thai, Lao, Myanmar, Khmer are written without spaces; Hangul
# words carry particles (확진자는 = 확진자 + 는), so bigrams find the word inside them.
_BIGRAM_RANGES = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))


def _bigram_script(char: str) -> bool:
    code = ord(char)
    return is_no_space_script(char) or any(a <= code <= b for a, b in _BIGRAM_RANGES)


def _fold(text: str) -> str:
    folded = _HYPHEN_BREAK.sub("", unicodedata.normalize("NFKC", text)).translate(_INVISIBLE)
    folded = _GAP.sub(_gap, folded).casefold()
    folded = unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFD", folded)))
    return folded.translate(_LETTER_FOLDS)


def _gap(match: re.Match) -> str:
    # Whitespace between two CJK characters is a line break inside a sentence, not a word break.
    text, start, end = match.string, match.start(), match.end()
    return "" if is_no_space_script(text[start - 1]) and is_no_space_script(text[end]) else " "


def lexical_tokens(text: str) -> list[str]:
    """The BM25 tokens of ``text`` (a chunk's or a query's).

    >>> lexical_tokens("The ﬁnal Top-5 accuracy: 65.2%")
    ['the', 'final', 'top', '5', 'accuracy', '65', '2']
    >>> lexical_tokens("Café Müller")
    ['cafe', 'muller']
    >>> lexical_tokens("梁振英道歉 확진자는 Wehr\\u00admauer")
    ['梁振', '振英', '英道', '道歉', '확진', '진자', '자는', 'wehrmauer']
    """
    folded = _fold(text)
    tokens: list[str] = []
    for match in _WORD.finditer(folded):
        word = match.group()
        if word.isascii():
            tokens.append(word)
            continue
        start = 0
        while start < len(word):
            bigrams = _bigram_script(word[start])
            end = start + 1
            while end < len(word) and _bigram_script(word[end]) == bigrams:
                end += 1
            piece = word[start:end]
            if not bigrams:
                tokens.append(piece)
            elif len(piece) == 1:
                tokens.append(piece)
            else:
                tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            start = end
    return tokens


def lexical_texts(chunks: Iterable[pa.RecordBatch], hidden_text: pa.Table) -> Iterator[str]:
    """What each chunk gives the lexical index, in row order: its text, with the runs a reader
    cannot see (``hidden_text`` rows) blanked, as they are left out of what it embeds.

    ``chunks``: batches with the columns doc_id, start, text and n_hidden of chunks.parquet.
    """
    runs_by_doc: dict[str, HiddenText] = {}
    if hidden_text.num_rows:
        doc_ids = hidden_text.column("doc_id").to_pylist()
        for doc_id in dict.fromkeys(doc_ids):
            rows = hidden_text.filter(pa.compute.equal(hidden_text.column("doc_id"), doc_id))
            runs_by_doc[doc_id] = HiddenText(hidden_run_records(rows))
    for batch in chunks:
        columns = batch.to_pydict()
        for doc_id, start, text, n_hidden in zip(columns["doc_id"], columns["start"], columns["text"], columns["n_hidden"]):
            hidden = runs_by_doc.get(doc_id) if n_hidden else None
            yield hidden.visible_in(text, start) if hidden else text


def lexical_table(texts: Iterable[str]) -> pa.Table:
    """The BM25 table of ``texts`` (chunk i has vector_id i), weights computed by bm25s;
    its schema metadata holds the settings a reader checks (``lexical_metadata``).

    >>> table = lexical_table(["overage is billed per call", "billed monthly"])
    >>> dict(zip(table["token"].to_pylist(), table["vector_ids"].to_pylist()))["billed"]
    [0, 1]
    """
    import bm25s

    vocabulary: dict[str, int] = {}
    corpus_ids: list[list[int]] = []
    for text in texts:
        corpus_ids.append([vocabulary.setdefault(token, len(vocabulary)) for token in lexical_tokens(text)])
    if not vocabulary:
        return LEXICAL.empty_table().replace_schema_metadata(lexical_metadata(len(corpus_ids)))
    retriever = bm25s.BM25(k1=K1, b=B, method=METHOD)
    # Token ids are ours (the tuple form): bm25s builds no vocabulary of its own.
    retriever.index((corpus_ids, vocabulary), create_empty_token=False, show_progress=False)
    scores = retriever.scores
    indptr = np.asarray(scores["indptr"], dtype=np.int64)
    column_of = retriever.vocab_dict  # token -> column of the score matrix
    tokens = sorted(column_of, key=column_of.__getitem__)
    if len(tokens) != len(indptr) - 1:
        raise ValueError(f"bm25s gave {len(indptr) - 1} score columns for {len(tokens)} tokens")
    offsets = pa.array(indptr.astype(np.int32))
    return pa.table(
        [
            pa.array(tokens, pa.string()),
            pa.ListArray.from_arrays(offsets, pa.array(np.asarray(scores["indices"], dtype=np.int32))),
            pa.ListArray.from_arrays(offsets, pa.array(np.asarray(scores["data"], dtype=np.float32))),
        ],
        schema=LEXICAL.with_metadata(lexical_metadata(len(corpus_ids))),
    )


def lexical_metadata(n_chunks: int) -> dict[bytes, bytes]:
    """What a reader checks before it scores a query against the table."""
    settings = {"tokenizer_version": TOKENIZER_VERSION, "k1": K1, "b": B, "method": METHOD, "n_chunks": n_chunks}
    return {META_LEXICAL: json.dumps(settings, sort_keys=True).encode("utf-8")}


def write_lexical(path: Path, texts: Iterable[str], model_id: str, model_dim: int) -> int:
    """Build the BM25 table of the chunk ``texts`` (in vector_id order) and write it to
    ``path``; returns the number of distinct tokens."""
    table = lexical_table(texts)
    metadata = {**with_metadata("lexical", model_id, model_dim).metadata, **table.schema.metadata}
    pq.write_table(table.replace_schema_metadata(metadata), path, compression="zstd")
    return table.num_rows
