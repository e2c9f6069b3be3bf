"""Office parsing: spanindex's DOCX, PPTX and XLSX parsers (text plus every character's part and
range) against python-docx, python-pptx and openpyxl extracting the text alone, on the same files;
and LibreOffice rendering the DOCX and PPTX files to PDF (seconds a page), the alignment of the
rendered glyphs to the document text apart.

``python -m benchmarks.office [FOLDER]`` (default: ../shared/corpus/office); parsing: medians of 3
rounds; rendering: one round, after one file rendered to warm LibreOffice's profile up.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OFFICE = ROOT.parent / "shared" / "corpus" / "office"


def _docx_text(path: Path) -> str:
    import docx

    document = docx.Document(str(path))
    cells = [c.text for t in document.tables for row in t.rows for c in row.cells]
    return "\n".join([p.text for p in document.paragraphs] + cells)


def _pptx_text(path: Path) -> str:
    import pptx

    return "\n".join(shape.text_frame.text for slide in pptx.Presentation(str(path)).slides
                     for shape in slide.shapes if shape.has_text_frame)


def _xlsx_text(path: Path) -> str:
    import openpyxl

    book = openpyxl.load_workbook(str(path), data_only=True)
    return "\n".join("\t".join("" if v is None else str(v) for v in row)
                     for sheet in book.worksheets for row in sheet.iter_rows(values_only=True))


PEERS = {".docx": ("python-docx", _docx_text), ".pptx": ("python-pptx", _pptx_text),
         ".xlsx": ("openpyxl", _xlsx_text), ".xlsm": ("openpyxl", _xlsx_text)}


def _median_seconds(work, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(folder: Path = OFFICE) -> dict:
    """Per format: files, seconds for ours and the peer's, and the ratio; {} without the folder."""
    from ingest.formats.office import parse_docx, parse_pptx, parse_xlsx

    ours = {".docx": parse_docx, ".pptx": parse_pptx, ".xlsx": parse_xlsx, ".xlsm": parse_xlsx}
    results = {}
    for suffix, (peer_name, peer) in PEERS.items():
        files = sorted(folder.glob(f"*{suffix}")) if folder.is_dir() else []
        if suffix == ".docx":  # python-docx cannot open Strict OOXML: compare the files both read
            files = [f for f in files if _reads(peer, f)]
        if not files:
            continue
        sources = [(f, f.read_bytes()) for f in files]
        mine = _median_seconds(lambda: [ours[suffix](data, f.name) for f, data in sources])
        theirs = _median_seconds(lambda: [peer(f) for f, _ in sources])
        results[suffix.lstrip(".")] = {"files": len(files), "spanindex_s": round(mine, 4),
                                       f"{peer_name}_s": round(theirs, 4), "ratio": round(mine / theirs, 3)}
        print(f"  {suffix}: {len(files)} files, spanindex (text + map) {mine * 1000 / len(files):.1f} ms a file, "
              f"{peer_name} (text only) {theirs * 1000 / len(files):.1f} ms a file: {mine / theirs:.3g}x its time")
    rendered = render(folder)
    if rendered:
        results["render"] = rendered
    return results


def render(folder: Path = OFFICE) -> dict:
    """Per format (DOCX, PPTX): LibreOffice's seconds to render the files to PDF, their pages and
    seconds a page; the alignment's seconds (and a page) apart; the share of characters boxed.
    {} where LibreOffice is missing or there are no files."""
    from ingest.formats.office import parse_docx, parse_pptx
    from ingest.formats.office.align import align_rendered
    from ingest.formats.office.render import office_renderer_engine, office_renderer_unavailable, render_pdf

    reason = office_renderer_unavailable()
    if reason is not None:
        print(f"  rendering: skipped ({reason})")
        return {}
    formats = [(suffix, parse, sorted(folder.glob(f"*{suffix}")) if folder.is_dir() else [])
               for suffix, parse in ((".docx", parse_docx), (".pptx", parse_pptx))]
    formats = [(suffix, parse, files) for suffix, parse, files in formats if files]
    if not formats:
        return {}
    suffix, _, files = formats[0]
    render_pdf(files[0].read_bytes(), suffix)  # the process's profile is made (and LibreOffice restarted) once
    results: dict = {"engine": office_renderer_engine()}
    for suffix, parse, files in formats:
        render_s = align_s = 0.0
        pages = source_chars = boxed = 0
        for path in files:
            source = path.read_bytes()
            doc = parse(source, path.name)
            started = time.perf_counter()
            pdf = render_pdf(source, suffix, doc_id=path.name)
            render_s += time.perf_counter() - started
            layout = align_rendered(doc, pdf)
            align_s += layout.seconds
            pages += layout.n_pages
            source_chars += layout.source_chars
            boxed += layout.boxed
        results[suffix.lstrip(".")] = {
            "files": len(files), "pages": pages, "render_s": round(render_s, 3),
            "render_s_per_file": round(render_s / len(files), 3), "render_s_per_page": round(render_s / pages, 4), "align_s": round(align_s, 4),
            "align_s_per_page": round(align_s / pages, 5), "boxed_share": round(boxed / max(source_chars, 1), 4),
        }
        print(f"  {suffix} rendered by {results['engine']}: {len(files)} files, {pages} pages, {render_s:.2f} s "
              f"({render_s / len(files):.2f} s a file, {render_s / pages:.3f} s a page: mostly LibreOffice starting); alignment {align_s:.3f} s ({align_s * 1000 / pages:.1f} ms a page); "
              f"{boxed / max(source_chars, 1):.1%} of their characters boxed")
    return results


def _reads(peer, path: Path) -> bool:
    try:
        peer(path)
    except Exception:  # noqa: BLE001 - a file the peer cannot open is left out of the comparison
        return False
    return True


if __name__ == "__main__":
    print("== office parsing")
    run(Path(sys.argv[1]) if len(sys.argv) > 1 else OFFICE)
