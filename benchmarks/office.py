"""Office parsing: spanindex's DOCX, PPTX and XLSX parsers (text plus every character's part and
range) against python-docx, python-pptx and openpyxl extracting the text alone, on the same files.

``python -m benchmarks.office [FOLDER]`` (default: ../shared/corpus/office); medians of 3 rounds.
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
