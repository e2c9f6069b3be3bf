"""How hybrid search's fusion was chosen: the "tune" questions only, replayed offline, and the
choice itself cross-validated.

Each tune question of ``benchmarks.retrieval`` is searched once, dense and lexical, to the depth
hybrid search reads (``index.search.fusion.candidates``), and its two rankings kept; every
fusion below is then the same rankings fused another way, in milliseconds, with the library's
own ``fuse``, ``dense_weight`` and ``standard_scores``. The held-out questions are never read
here: their figures come from ``benchmarks.retrieval`` on the settings chosen.

Each family of fusions is a grid of settings. "in-sample" is the setting best on all the tune
questions (recall@5 + MRR@10), which flatters it: it is chosen and scored on the same questions.
"CV" is what choosing that way gives on questions the choice did not see: the tune questions
are cut into ``FOLDS`` folds (each language spread evenly over them), the setting is chosen on
four and scored on the fifth, and every question's out-of-fold rank is pooled; repeated with
``REPEATS`` shuffles, the figures are the mean and standard deviation over the repeats.

    python -m benchmarks.fusion --index DIR      # DIR: an index of ../shared/corpus
"""

from __future__ import annotations

import argparse
import collections
import itertools
import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.retrieval import ROOT, Question, answering_chunks, figures_by_group, load_questions

DEPTH_K = 10  # hits scored (MRR@10): rankings are read to candidates(10)
RRF_K = 60
FOLDS, REPEATS = 5, 20

Ranked = Callable[["Replay"], list[str]]  # a fusion: a question's two rankings -> chunk ids, best first
FirstRanks = dict[str, int | None]  # question id -> rank of the first answering chunk within 10


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


def first_ranks(rows: list[Replay], relevant: dict[str, set[str]], ranked: Ranked) -> FirstRanks:
    ranks = {}
    for row in rows:
        ids = ranked(row)[:DEPTH_K]
        ranks[row.question.qid] = next((i for i, c in enumerate(ids, start=1) if c in relevant[row.question.qid]), None)
    return ranks


def weighted_rrf(row: Replay, dense_weight: float) -> list[str]:
    """Reciprocal rank fusion (k = 60) with the dense ranking weighed (1: equal weights, the hybrid
    search before the z-score fusion, ties broken as it broke them)."""
    fused: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for which, (ranking, weight) in enumerate(((row.dense, dense_weight), (row.lexical, 1.0))):
        for position, hit in enumerate(ranking, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight / (RRF_K + position)
            first_seen.setdefault(hit.chunk_id, (position, which))
    return sorted(fused, key=lambda c: (-fused[c], first_seen[c]))


def top_standing(ranking: list) -> float:
    """How far a ranking's first chunk stands out of its ranking, in standard units (0 if empty)."""
    from index.search.fusion import standard_scores

    return standard_scores(ranking)[0][ranking[0].chunk_id] if ranking else 0.0


def near_ties_reordered(row: Replay, tie: float, weight: float) -> list[str]:
    """The lexical order, except that runs of lexical scores within ``tie`` standard deviations of
    the run's first are reordered by the dense ranking's score (where ``weight`` > 0); the dense
    ranking fills in below."""
    from index.search.fusion import fuse, standard_scores

    if weight == 0.0 or not row.lexical:
        return [h.chunk_id for h in fuse([(row.lexical, 1.0), (row.dense, 0.0)], 2 * DEPTH_K)]
    dense, dense_absent = standard_scores(row.dense)
    spread = statistics.pstdev(h.score for h in row.lexical) or 1.0
    runs: list[list[str]] = []
    head = row.lexical[0].score
    for hit in row.lexical:
        if not runs or head - hit.score > tie * spread:
            runs.append([])
            head = hit.score
        runs[-1].append(hit.chunk_id)
    ordered = [c for run in runs for c in sorted(run, key=lambda c: -dense.get(c, dense_absent))]  # stable
    lexical = set(ordered)
    return ordered + [h.chunk_id for h in row.dense if h.chunk_id not in lexical]


def families(multilingual: bool) -> dict[str, dict[tuple, Ranked]]:
    """Every fusion measured, by family, each a grid of settings."""
    from index.search.fusion import dense_weight, fuse

    def z_fused(row: Replay, base: float, unknown_language: float, trust: float = 1.0) -> list[str]:
        weight = trust * dense_weight(row.question.question, multilingual, base=base, unknown_language=unknown_language)
        return [h.chunk_id for h in fuse([(row.lexical, 1 - weight), (row.dense, weight)], 2 * DEPTH_K)]

    def script(row: Replay, unknown_language: float) -> float:  # the trust in the dense ranking, 0-1
        return dense_weight(row.question.question, multilingual, base=1.0, unknown_language=unknown_language)

    bases, languages = (0.0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7), (0.0, 0.2, 0.4, 0.6, 1.0)
    return {
        "z-scores, w = base x script x language": {
            (b, u): lambda row, b=b, u=u: z_fused(row, b, u) for b, u in itertools.product(bases, languages)},
        "  and w = 0 where lexical top-1 z >= T": {
            (b, u, t): lambda row, b=b, u=u, t=t: z_fused(row, b, u, float(top_standing(row.lexical) < t))
            for b, u, t in itertools.product((0.3, 0.4, 0.5, 0.6, 0.7), (0.0, 0.4, 1.0), (3, 4, 4.5, 5, 6, 99))},
        "  and w x min(1, dense top-1 z / D)": {
            (b, u, d): lambda row, b=b, u=u, d=d: z_fused(row, b, u, min(1.0, max(0.0, top_standing(row.dense) / d)))
            for b, u, d in itertools.product((0.4, 0.5, 0.6, 0.7, 0.8), (0.0, 0.4, 1.0), (1, 3, 4, 5, 6))},
        "  and w x 2 clip(0.5 + s (dense - lexical top-1 z))": {
            (b, u, s): lambda row, b=b, u=u, s=s: z_fused(
                row, b, u, 2 * min(1.0, max(0.0, 0.5 + s * (top_standing(row.dense) - top_standing(row.lexical)))))
            for b, u, s in itertools.product((0.2, 0.3, 0.4, 0.5), (0.0, 0.4, 1.0), (0.0, 0.1, 0.2, 0.3, 0.5))},
        "lexical, dense reorders near-ties (eps std)": {
            (e, u): lambda row, e=e, u=u: near_ties_reordered(row, e, script(row, u))
            for e, u in itertools.product((0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5), (0.0, 1.0))},
        "RRF, dense weighed base x script x language": {
            (b, u): lambda row, b=b, u=u: weighted_rrf(row, b * script(row, u))
            for b, u in itertools.product((0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0), (0.0, 0.3, 0.6, 1.0))},
    }


def objective(ranks: FirstRanks, qids: list[str]) -> float:
    """recall@5 + MRR@10 over ``qids``: what a setting is chosen by."""
    return sum((r <= 5) + 1 / r for r in (ranks[q] for q in qids) if r is not None) / len(qids)


def folds(questions: list[Question], seed: int) -> list[list[str]]:
    """The question ids cut into ``FOLDS`` folds, each language dealt out over them in turn."""
    shuffle = random.Random(seed).shuffle
    by_language: dict[str, list[str]] = collections.defaultdict(list)
    for q in questions:
        by_language[q.lang].append(q.qid)
    dealt: list[list[str]] = [[] for _ in range(FOLDS)]
    turn = itertools.cycle(range(FOLDS))
    for lang in sorted(by_language):
        shuffle(by_language[lang])
        for qid in by_language[lang]:
            dealt[next(turn)].append(qid)
    return dealt


def cross_validated(grid: dict[tuple, FirstRanks], questions: list[Question]) -> tuple[list[FirstRanks], collections.Counter]:
    """Each repeat's out-of-fold ranks (a question ranked by the setting chosen without it), and
    how often each setting was chosen."""
    every = [q.qid for q in questions]
    out_of_fold, chosen = [], collections.Counter()
    for seed in range(REPEATS):
        ranks: FirstRanks = {}
        for fold in folds(questions, seed):
            held = set(fold)
            choosing = [q for q in every if q not in held]
            best = max(grid, key=lambda setting: objective(grid[setting], choosing))  # the first of equals
            chosen[best] += 1
            ranks.update({q: grid[best][q] for q in fold})
        out_of_fold.append(ranks)
    return out_of_fold, chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", required=True, help="an index of ../shared/corpus")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))

    rows, relevant, multilingual = replays(Path(args.index))
    questions = [row.question for row in rows]

    def figures(ranks: FirstRanks) -> dict[str, dict]:
        return figures_by_group(questions, ranks)["tune"]

    def say(name: str, groups: dict[str, dict], spread: dict[str, dict] | None = None) -> None:
        print(f"{name:<46}" + "  ".join(
            f"{g} {f['recall_at_5']:.3f}/{f['mrr_at_10']:.3f}"
            + (f" ±{spread[g]['recall_at_5']:.3f}/{spread[g]['mrr_at_10']:.3f}" if spread else "")
            for g, f in groups.items()))

    print(f"== fusion on {len(rows)} tune questions, recall@5/MRR@10 (multilingual model: {multilingual})")
    say("dense", figures(first_ranks(rows, relevant, lambda row: [h.chunk_id for h in row.dense])))
    say("lexical", figures(first_ranks(rows, relevant, lambda row: [h.chunk_id for h in row.lexical])))
    say("RRF, equal weights", figures(first_ranks(rows, relevant, lambda row: weighted_rrf(row, 1.0))))
    print(f"== each family: in-sample best; {FOLDS}-fold CV, mean ± sd over {REPEATS} shuffles")
    for family, settings in families(multilingual).items():
        grid = {setting: first_ranks(rows, relevant, ranked) for setting, ranked in settings.items()}
        best = max(grid, key=lambda setting: objective(grid[setting], [q.qid for q in questions]))
        say(f"{family} {best}", figures(grid[best]))
        out_of_fold, chosen = cross_validated(grid, questions)
        repeats = [figures(ranks) for ranks in out_of_fold]
        mean, spread = ({g: {m: statistics_of([r[g][m] for r in repeats]) for m in ("recall_at_5", "mrr_at_10")}
                         for g in repeats[0]} for statistics_of in (statistics.fmean, statistics.pstdev))
        say("  CV", mean, spread)
        print("    chosen in the folds: " + ", ".join(f"{s} {n}x" for s, n in chosen.most_common(3)))


if __name__ == "__main__":
    main()
