"""The real texts the benchmarks run on: every readable document of the shared corpus and of
sample_corpus/, parsed once and cached under .bench/ (keyed by the file's bytes and the parser
version, so an edited file or a new parser is parsed again).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schemas.records import HiddenRun

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"
# ../shared/corpus beside the checkout; SPANINDEX_SHARED_CORPUS (as for the tests) or SHARED_CORPUS
# names it where the checkout is elsewhere (a worktree)
SHARED = Path(os.environ.get("SPANINDEX_SHARED_CORPUS") or os.environ.get("SHARED_CORPUS")
              or ROOT.parent / "shared" / "corpus")
CACHE = ROOT / ".bench"


@dataclass(frozen=True, slots=True)
class CorpusText:
    doc_id: str  # "shared/pdf/x.pdf" or "sample/docs/y.md"
    text: str
    hidden: tuple[HiddenRun, ...] = ()  # the parser's HiddenRuns: what the build leaves out of the embedded texts


def folder_size(folder: Path) -> dict[str, int]:
    """How many files a corpus folder holds and their bytes (what a benchmark reports it ran on)."""
    sizes = [p.stat().st_size for p in folder.rglob("*") if p.is_file()]
    return {"files": len(sizes), "bytes": sum(sizes)}


def corpora_named(args: list[str]) -> list[Path]:
    """The corpus folders a benchmark's command line names; none: sample_corpus, and the shared corpus where present."""
    return [Path(a) for a in args] or [SAMPLE, *([SHARED] if SHARED.is_dir() else [])]


def corpus_folders() -> list[tuple[str, Path]]:
    folders = [("sample", SAMPLE)]
    if SHARED.is_dir():
        folders.insert(0, ("shared", SHARED))
    return folders


def document_texts() -> list[CorpusText]:
    """The text of every document that parses with text (failures and empty ones left out)."""
    from ingest.corpus import discover
    from ingest.formats.parse import PARSER_VERSION, media_type_of, parse_document
    from schemas.records import DocStatus, HiddenReason, HiddenRun

    cache_dir = CACHE / "texts"
    cache_dir.mkdir(parents=True, exist_ok=True)
    texts = []
    for prefix, folder in corpus_folders():
        for found in discover(folder).files:
            doc_id, path = found.doc_id, found.path
            source = path.read_bytes()
            key = hashlib.sha256(source + f"parser{PARSER_VERSION}".encode()).hexdigest()[:24]
            cached = cache_dir / f"{key}.json"
            entry = json.loads(cached.read_text(encoding="utf-8")) if cached.is_file() else {}
            if "hidden" not in entry:  # absent, or cached before hidden runs were kept
                outcome = parse_document(source, doc_id, media_type_of(doc_id))
                ok = outcome.parsed is not None and outcome.record.status is DocStatus.OK
                entry = {
                    "doc_id": doc_id,
                    "text": outcome.parsed.text if ok else None,
                    "hidden": [[r.start, r.end, r.reason.value] for r in outcome.parsed.hidden_runs] if ok else [],
                }
                # json keeps lone surrogates as escapes; the text is the parser's, unchanged
                cached.write_text(json.dumps(entry), encoding="utf-8")
            if entry["text"]:
                hidden = tuple(HiddenRun(a, b, HiddenReason(r)) for a, b, r in entry["hidden"])
                texts.append(CorpusText(f"{prefix}/{doc_id}", entry["text"], hidden))
    return texts


def chunk_texts(texts: list[CorpusText] | None = None) -> list[str]:
    """The normalised chunk texts the model embeds for those documents, in corpus order."""
    from ingest.embed.model import load_tokenizer, resolve_model
    from ingest.text.chunker import chunk_spans
    from schemas.records import ChunkerSettings

    tokenizer = load_tokenizer(resolve_model())
    out = []
    for doc in texts if texts is not None else document_texts():
        out.extend(span.embed_text for span in chunk_spans(doc.text, tokenizer, ChunkerSettings(), doc.hidden))
    return out
