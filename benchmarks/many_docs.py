"""A generated corpus of many small documents (issue 25): what a build, a reindex, a compaction and
a first citation cost at 100,000 documents.

The corpus: ``n`` small files in folders of 1,000, one in a hundred a one-page PDF (so that the
first citation has a page and rectangles to find), the rest Markdown notes of 2 to 5 paragraphs
drawn from a Zipf-weighted vocabulary (so that BM25 has common and rare terms). It is generated
from a seed: two runs index the same bytes. Each step runs in a fresh process (its peak RSS is its
own): the full build; one file edited and the index built again; 1,000 files edited (one in each
hundred) and built again; ``compact``; the first resolve of a PDF quote in a fresh reader; search
p50 (dense and lexical) of 20 queries drawn from the notes' vocabulary. Builds embed with the hashing embedder, without OCR or office layout.

``python -m benchmarks.many_docs [N]`` (default: BENCH_MANY_DOCS, else 100000).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.reader_cost import _first_resolve, _quote
from benchmarks.reindex_cost import _BUILD, _SEARCH, _files, _run

_COMPACT = """
import index.cli
import json, re, sys
from pathlib import Path
from ingest.compact import compact_index
report = compact_index(sys.argv[1])
peak = int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
print(json.dumps({"seconds": report.seconds, "peak_mb": peak}))
"""

_WORDS = ("retention audit export policy invoice ledger nightly backup region tenant quota incident review "
          "contract renewal clause warranty shipment carrier customs tariff payroll bonus pension leave "
          "onboarding laptop badge access firewall certificate rotation latency throughput replica shard "
          "index query cache eviction schema migration rollback release sprint roadmap budget forecast "
          "variance approval signature vendor supplier procurement tender compliance privacy consent "
          "breach notification encryption key vault token session cookie browser mobile tablet printer "
          "scanner invoice receipt refund chargeback dispute escrow mortgage lease tenant landlord zoning "
          "permit inspection safety hazard training certificate expiry audit trail evidence hearing").split()


def _note(rng: random.Random, i: int) -> str:
    weights = [1 / (rank + 1) for rank in range(len(_WORDS))]
    paragraphs = []
    for _ in range(rng.randint(2, 5)):
        words = rng.choices(_WORDS, weights, k=rng.randint(25, 60))
        paragraphs.append(" ".join(words).capitalize() + f". Reference {i}-{len(paragraphs)}.")
    return f"# Note {i}\n\n" + "\n\n".join(paragraphs) + "\n"


def _pdf(path: Path, text: str) -> None:
    import pymupdf

    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(56, 56, 540, 780), text, fontsize=10)
        doc.save(path)


def generate(out: Path, n: int, seed: int = 25) -> Path:
    """``n`` small documents under ``out`` (see the docstring); the same bytes for the same seed."""
    rng = random.Random(seed)
    for i in range(n):
        folder = out / f"{i // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        note = _note(rng, i)
        if i % 100 == 0:
            sentences = note.replace("# ", "").replace("\n\n", " ")
            _pdf(folder / f"doc{i:06d}.pdf", f"Report {i}. The audit of region {i} was closed in March. {sentences}")
        else:
            (folder / f"doc{i:06d}.md").write_text(note, encoding="utf-8")
    return out


def _edit(corpus: Path, count: int) -> list[Path]:
    """A paragraph appended to ``count`` Markdown files spread over the corpus."""
    notes = sorted(corpus.rglob("*.md"))
    edited = []
    for path in notes[:: max(1, len(notes) // count)][:count]:
        with path.open("a", encoding="utf-8") as f:
            f.write("\nAn edit for the reindex benchmark: exports now run nightly.\n")
        edited.append(path)
    return edited


def _build(corpus: Path, index_dir: Path) -> dict:
    before = _files(index_dir) if index_dir.exists() else {}
    result = _run(_BUILD, corpus, index_dir)
    after = _files(index_dir)
    result["written_mb"] = sum(s for p, (ino, m, s) in after.items() if before.get(p) != (ino, m, s)) / 1e6
    return result


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def run(n: int | None = None) -> dict:
    n = n or int(os.environ.get("BENCH_MANY_DOCS", "100000"))
    work = Path(tempfile.mkdtemp(prefix="spanindex-many-"))
    try:
        started = time.perf_counter()
        corpus = generate(work / "corpus", n)
        print(f"  {n:,} documents generated in {time.perf_counter() - started:.0f} s ({_size_mb(corpus):.0f} MB)")
        index_dir = work / "index"
        steps = {"full": _build(corpus, index_dir)}
        steps["index_mb"] = _size_mb(index_dir)
        _edit(corpus, 1)
        steps["one_file"] = _build(corpus, index_dir)
        _edit(corpus, 1000)
        steps["thousand_files"] = _build(corpus, index_dir)
        steps["compact"] = _run(_COMPACT, index_dir)
        chunk_id, quote = _quote(index_dir)
        steps["resolve"] = _first_resolve(index_dir, chunk_id, quote, "groups")
        queries = work / "queries.txt"  # words the notes are made of: every query has hits to read
        rng = random.Random(7)
        queries.write_text("".join(" ".join(rng.sample(_WORDS, rng.randint(2, 4))) + "\n" for _ in range(20)))
        steps["search_p50_ms"] = _run(_SEARCH, index_dir, queries)
        full, one, thousand = steps["full"], steps["one_file"], steps["thousand_files"]
        print(f"  full build {full['seconds']:.0f} s, {full['chunks']:,} chunks, peak {full['peak_mb']:.0f} MB, "
              f"index {steps['index_mb']:.0f} MB")
        for name, step in (("one-file", one), ("1,000-file", thousand)):
            print(f"  {name} reindex {step['seconds']:.1f} s ({step['changed']} changed, {step['embedded']} chunks "
                  f"embedded), {step['written_mb']:.1f} MB written, peak {step['peak_mb']:.0f} MB, "
                  f"{step['segments']} segments{', merged' if step['merged'] else ''}")
        print(f"  compact {steps['compact']['seconds']:.1f} s, peak {steps['compact']['peak_mb']:.0f} MB; "
              f"first resolve {steps['resolve']['seconds']:.3f} s, reader peak {steps['resolve']['peak_mb']:.0f} MB; "
              f"search p50 dense {steps['search_p50_ms']['dense']:.1f} ms, "
              f"lexical {steps['search_p50_ms']['lexical']:.1f} ms")
        return {"documents": n, **steps}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(f"== {int(sys.argv[1]) if sys.argv[1:] else int(os.environ.get('BENCH_MANY_DOCS', '100000')):,} small documents")
    print(json.dumps(run(int(sys.argv[1]) if sys.argv[1:] else None), indent=1))
