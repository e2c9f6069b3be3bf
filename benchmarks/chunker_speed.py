"""The chunker against one pass of the model's tokenizer with offsets, on real documents.

The tokenizer pass (``tokenizer.encode(text).offsets``: tokens and their character offsets, as
Python objects) is work the chunker must do anyway, so its speed is the ceiling. Runs alternate
(tokenizer, chunker, tokenizer, ...), each figure is the median of its runs, and times are the
process's CPU time (both are single-threaded): on a shared machine a neighbour's load then
stretches neither. The chunker makes that pass in calls of ~2,000 characters, which costs less
than one call per text (``tokenizer_in_pieces_vs_one_call``, measured in the same rounds).
Also checks what the speed must not cost: every chunk an exact slice of its document and none
over the token limit.

`python -m benchmarks.chunker_speed [--profile]`
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.corpus import document_texts


def measure(rounds: int = 5) -> dict:
    from ingest.embed.model import load_tokenizer, resolve_model
    from ingest.text.chunker import chunk_spans, encode_in_pieces
    from schemas.records import ChunkerSettings

    texts = [d.text for d in document_texts()]
    tokenizer = load_tokenizer(resolve_model())
    settings = ChunkerSettings()
    chars = sum(len(t) for t in texts)
    tokenize_s, chunk_s, pieces_s = [], [], []
    spans = []
    for _ in range(rounds):
        started = time.process_time()
        for text in texts:
            tokenizer.encode(text, add_special_tokens=False).offsets
        tokenize_s.append(time.process_time() - started)
        started = time.process_time()
        spans = [chunk_spans(text, tokenizer, settings) for text in texts]
        chunk_s.append(time.process_time() - started)
        started = time.process_time()
        for text in texts:  # the same pass as the chunker makes it: in calls of ~2,000 characters
            encode_in_pieces(text, tokenizer)
        pieces_s.append(time.process_time() - started)
    from ingest.text.chunker import embed_text

    flat = [(t, s) for t, ss in zip(texts, spans) for s in ss]
    total = len(flat)
    # the chunk's text is text[start:end]; what the model embeds is derived from that slice
    exact = sum(0 <= s.start < s.end <= len(t) and embed_text(t[s.start : s.end]).startswith(s.embed_text)
                for t, s in flat)
    counted = tokenizer.encode_batch([s.embed_text for _, s in flat])  # with [CLS] and [SEP]
    over = sum(len(e.ids) > settings.max_tokens for e in counted)
    miscounted = sum(len(e.ids) != s.n_tokens for e, (_, s) in zip(counted, flat))
    tok, chk = statistics.median(tokenize_s), statistics.median(chunk_s)
    return {
        "documents": len(texts),
        "mb": round(chars / 1e6, 3),
        "tokenizer_mb_per_s": round(chars / tok / 1e6, 2),
        "chunker_mb_per_s": round(chars / chk / 1e6, 2),
        "chunker_vs_tokenizer": round(tok / chk, 3),
        # what the chunker's own tokenizer pass costs against one call per text (below 1: cheaper)
        "tokenizer_in_pieces_vs_one_call": round(statistics.median(pieces_s) / tok, 3),
        "chunks": total,
        "exact_slices": exact / total if total else 1.0,
        "chunks_over_limit": over,
        "token_counts_wrong": miscounted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", action="store_true", help="cProfile one chunker pass (top 25 by own time)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.profile:
        import cProfile
        import pstats

        from ingest.embed.model import load_tokenizer, resolve_model
        from ingest.text.chunker import chunk_spans
        from schemas.records import ChunkerSettings

        texts = [d.text for d in document_texts()]
        tokenizer = load_tokenizer(resolve_model())
        profiler = cProfile.Profile()
        profiler.enable()
        for text in texts:
            chunk_spans(text, tokenizer, ChunkerSettings())
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        return
    result = measure(args.rounds)
    print(result)


if __name__ == "__main__":
    main()
