"""Retrieval quality per search mode on the labelled questions over ../shared/corpus.

tests/data/qa_shared_corpus.jsonl holds questions a reader would ask, each with
the document that answers it and the exact answer text, written from the
documents' text before any search was run. A chunk answers a question when it
is a chunk of that document holding an occurrence of the answer text whole (or,
where no chunk holds it whole, overlapping an occurrence by half its length).

recall@5: the share of questions with an answering chunk among the first 5 hits.
MRR@10: the mean of 1/rank of the first answering chunk within 10 hits (0 if none).

Each question has a ``split``: "tune" (what any choice of settings may be measured on) or
"heldout" (about a third, by a hash of its id: ``split_of``; never used to choose anything).
The figures are given per split and per language; the held-out ones are the ones to report.

    python -m benchmarks.retrieval --index build/shared-index      # an index of ../shared/corpus
    python -m benchmarks.retrieval --build                          # builds one first (real model)
    python -m benchmarks.retrieval --index DIR --modes lexical      # one mode (no model loaded)
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpus"
QUESTIONS = ROOT / "tests" / "data" / "qa_shared_corpus.jsonl"
MODES = ("dense", "lexical", "hybrid")
SPLITS = ("tune", "heldout")


def split_of(qid: str) -> str:
    """The fixed split of a question: "heldout" for a third of the ids (by their hash), else "tune".

    >>> split_of("dpr-01"), split_of("dpr-03")
    ('heldout', 'tune')
    """
    return "heldout" if hashlib.sha256(qid.encode("utf-8")).digest()[0] % 3 == 0 else "tune"


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    doc_id: str
    lang: str
    question: str
    answer: str
    split: str = "tune"


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Question(r["id"], r["doc_id"], r["lang"], r["question"], r["answer"], r.get("split") or split_of(r["id"]))
            for r in rows]


def answer_spans(doc_text: str, answer: str) -> list[tuple[int, int]]:
    """Every occurrence of ``answer`` in the document text, as [start, end)."""
    spans, at = [], doc_text.find(answer)
    while at >= 0:
        spans.append((at, at + len(answer)))
        at = doc_text.find(answer, at + 1)
    return spans


def answering_chunks(idx, question: Question) -> set[str]:
    doc = idx.document(question.doc_id)
    if doc is None or not doc.doc_version:
        return set()
    spans = answer_spans(idx.doc_text(doc.doc_version), question.answer)
    chunks = idx.chunks_of(question.doc_id)
    whole = {c.chunk_id for c in chunks for a, b in spans if c.start <= a and b <= c.end}
    if whole:
        return whole
    return {
        c.chunk_id for c in chunks for a, b in spans if min(b, c.end) - max(a, c.start) >= (b - a) / 2
    }


@dataclass(frozen=True, slots=True)
class ModeResult:
    mode: str
    recall_at_5: float
    mrr_at_10: float
    first_ranks: dict[str, int | None]  # question id -> rank of the first answering chunk (within 10)
    seconds_per_query: float


def evaluate(
    questions: list[Question], relevant: dict[str, set[str]], ranked: Callable[[str], list[str]], mode: str
) -> ModeResult:
    """recall@5 and MRR@10 of ``ranked`` (a question -> chunk ids, best first)."""
    first: dict[str, int | None] = {}
    started = time.perf_counter()
    for q in questions:
        ids = ranked(q.question)[:10]
        first[q.qid] = next((rank for rank, c in enumerate(ids, start=1) if c in relevant[q.qid]), None)
    seconds = (time.perf_counter() - started) / max(1, len(questions))
    n = len(questions)
    recall = sum(1 for r in first.values() if r is not None and r <= 5) / n
    mrr = sum(1 / r for r in first.values() if r is not None) / n
    return ModeResult(mode, recall, mrr, first, seconds)


def bench_retrieval(index_dir: Path, modes=MODES, questions_path: Path = QUESTIONS, report=None) -> dict:
    """The figures per mode, split and language, as a dict (and printed lines through ``report``)."""
    import index

    say = report or print
    idx = index.open(index_dir)
    questions = load_questions(questions_path)
    relevant = {q.qid: answering_chunks(idx, q) for q in questions}
    unanswerable = sorted(q.qid for q in questions if not relevant[q.qid])
    questions = [q for q in questions if relevant[q.qid]]
    say(f"== retrieval: {len(questions)} labelled questions over {len({q.doc_id for q in questions})} documents")
    if unanswerable:
        say(f"  not counted (answer in no indexed chunk): {', '.join(unanswerable)}")
    results = {}
    for mode in modes:
        idx.search(questions[0].question, k=10, mode=mode)  # load the model and tables first
        result = evaluate(questions, relevant, lambda text, m=mode: [h.chunk_id for h in idx.search(text, k=10, mode=m)], mode)
        groups = figures_by_group(questions, result.first_ranks)
        say(f"  {mode:<8} ({result.seconds_per_query * 1000:.1f} ms/query)")
        for split in SPLITS:
            line = "  ".join(f"{lang} {f['recall_at_5']:.3f}/{f['mrr_at_10']:.3f} (n={f['n']})"
                             for lang, f in groups[split].items())
            say(f"    {split + (' (final)' if split == 'heldout' else ''):<16} recall@5/MRR@10: {line}")
        results[mode] = {
            "recall_at_5": round(result.recall_at_5, 4),
            "mrr_at_10": round(result.mrr_at_10, 4),
            "splits": groups,
            "ms_per_query": round(result.seconds_per_query * 1000, 2),
            "first_ranks": result.first_ranks,
        }
    return {"questions": len(questions), "unanswerable": unanswerable, "modes": results}


def figures_by_group(questions: list[Question], first_ranks: dict[str, int | None]) -> dict[str, dict[str, dict]]:
    """recall@5 and MRR@10 per split, over all its questions ("all") and per language.

    >>> qs = [Question("a", "d", "en", "?", "!", "tune"), Question("b", "d", "de", "?", "!", "tune")]
    >>> figures_by_group(qs, {"a": 1, "b": 7})["tune"]["all"]
    {'n': 2, 'recall_at_5': 0.5, 'mrr_at_10': 0.5714}
    """
    ranks: dict[tuple[str, str], list[int | None]] = collections.defaultdict(list)
    for q in questions:
        for group in ("all", q.lang):
            ranks[q.split, group].append(first_ranks[q.qid])
    groups: dict[str, dict[str, dict]] = {}
    for split in SPLITS:
        langs = sorted({lang for s, lang in ranks if s == split and lang != "all"}, key=lambda g: (-len(ranks[split, g]), g))
        groups[split] = {}
        for group in ["all", *langs] if (split, "all") in ranks else []:
            found = ranks[split, group]
            groups[split][group] = {
                "n": len(found),
                "recall_at_5": round(sum(1 for r in found if r is not None and r <= 5) / len(found), 4),
                "mrr_at_10": round(sum(1 / r for r in found if r is not None) / len(found), 4),
            }
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", help="an index of ../shared/corpus")
    parser.add_argument("--build", action="store_true", help="build the index first, with the real model")
    parser.add_argument("--corpus", default=str(SHARED))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("-o", "--output", default="build/bench-retrieval.json")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    index_dir = Path(args.index) if args.index else Path(tempfile.mkdtemp(prefix="spanindex-retrieval-"))
    if args.build or not args.index:
        from ingest.build import BuildSettings, build_index

        build_index(args.corpus, index_dir, BuildSettings())
    figures = bench_retrieval(index_dir, tuple(args.modes.split(",")))
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
