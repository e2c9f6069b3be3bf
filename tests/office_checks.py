"""The office map's rules, held on every document an office test parses (shared by the DOCX, PPTX
and XLSX tests)."""

from __future__ import annotations

import io
import zipfile

from ingest.formats.office.readback import office_run_problems


def parsed_and_checked(parse, source: bytes, doc_id: str):
    """``parse(source, doc_id)``, its runs tiling the text and each reading back from its part."""
    doc = parse(source, doc_id)
    archive = zipfile.ZipFile(io.BytesIO(source))
    assert office_run_problems(doc.text, doc.office_runs, lambda part: archive.read(part).decode("utf-8")) == []
    return doc
