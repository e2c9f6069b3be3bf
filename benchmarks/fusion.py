"""How hybrid search's fusion was chosen: the "tune" questions only, replayed offline.

Each tune question of ``benchmarks.retrieval`` is searched once, dense and lexical, to the depth
hybrid search reads (``index.search.fusion.candidates``), and its two rankings kept; every
fusion below is then the same rankings fused another way, in milliseconds, with the library's
own ``fuse`` and ``dense_weight``. The held-out questions are never read here: their figures
come from ``benchmarks.retrieval`` on the settings chosen.

    python -m benchmarks.fusion --index DIR      # DIR: an index of ../shared/corpus
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.retrieval import ROOT, Question, answering_chunks, figures_by_group, load_questions

DEPTH_K = 10  # hits scored (MRR@10): rankings are read to candidates(10)
RRF_K = 60


@dataclass(frozen=True, slots=True)
class Replay:
    question: Question
    dense: list  # SearchHits, best first
    lexical: list


def replays(index_dir: Path) -> tuple[list[Replay], dict[str, set[str]], bool]:
    """The tune questions' two rankings, the chunks that answer each, and whether the model is multilingual."""
    import index
    from index.search.fusion import candidates
    from index.search.modes import dense_search, lexical_search
    from ingest.embed import is_multilingual

    idx = index.open(index_dir)
    questions = [q for q in load_questions() if q.split == "tune"]
    relevant = {q.qid: answering_chunks(idx, q) for q in questions}
    depth = candidates(DEPTH_K)
    found = [Replay(q, dense_search(idx, q.question, depth), lexical_search(idx, q.question, depth))
             for q in questions if relevant[q.qid]]
    return found, relevant, is_multilingual(idx.manifest.model_id)


def first_ranks(rows: list[Replay], relevant: dict[str, set[str]], ranked) -> dict[str, int | None]:
    ranks = {}
    for row in rows:
        ids = ranked(row)[:DEPTH_K]
        ranks[row.question.qid] = next((i for i, c in enumerate(ids, start=1) if c in relevant[row.question.qid]), None)
    return ranks


def weighted_rrf(row: Replay, dense_weight: float) -> list[str]:
    """Reciprocal rank fusion (k = 60) with the dense ranking weighed (1: equal weights, the hybrid
    search before this fusion, ties broken as it broke them)."""
    fused: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for which, (ranking, weight) in enumerate(((row.dense, dense_weight), (row.lexical, 1.0))):
        for position, hit in enumerate(ranking, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight / (RRF_K + position)
            first_seen.setdefault(hit.chunk_id, (position, which))
    return sorted(fused, key=lambda c: (-fused[c], first_seen[c]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True, help="an index of ../shared/corpus")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from index.search.fusion import dense_weight, fuse

    rows, relevant, multilingual = replays(Path(args.index))
    questions = [row.question for row in rows]

    def line(name: str, ranked) -> None:
        groups = figures_by_group(questions, first_ranks(rows, relevant, ranked))["tune"]
        print(f"{name:<38}" + "  ".join(f"{g} {f['recall_at_5']:.3f}/{f['mrr_at_10']:.3f}" for g, f in groups.items()))

    def fused(row: Replay, base: float, unknown_language: float, agreement: float = 0.0) -> list[str]:
        weight = dense_weight(row.question.question, multilingual, base=base, unknown_language=unknown_language)
        weight *= (1 - agreement) + agreement * min(1.0, top_overlap(row) / 0.5)
        return [h.chunk_id for h in fuse([(row.lexical, 1 - weight), (row.dense, weight)], 2 * DEPTH_K)]

    print(f"== fusion on {len(rows)} tune questions, recall@5/MRR@10 (multilingual model: {multilingual})")
    line("dense", lambda row: [h.chunk_id for h in row.dense])
    line("lexical", lambda row: [h.chunk_id for h in row.lexical])
    line("RRF, equal weights", lambda row: weighted_rrf(row, 1.0))
    line("RRF, dense weighed 0.3 x script x 0.3",  # the best weighted RRF
         lambda row: weighted_rrf(row, dense_weight(row.question.question, multilingual, base=0.3, unknown_language=0.3)))
    for base, unknown_language in itertools.product((0.4, 0.5, 0.6), (0.2, 0.4, 0.6, 1.0)):
        line(f"z-scores, w {base} x script x {unknown_language}",
             lambda row, b=base, u=unknown_language: fused(row, b, u))
    for agreement in (0.5, 1.0):
        line(f"  the chosen one x agreement {agreement}", lambda row, a=agreement: fused(row, 0.5, 0.4, a))


def top_overlap(row: Replay) -> float:
    """The share of the dense top 10 that the lexical top 10 holds too."""
    return len({h.chunk_id for h in row.dense[:10]} & {h.chunk_id for h in row.lexical[:10]}) / 10


if __name__ == "__main__":
    main()
