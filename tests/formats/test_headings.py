"""Headings of real documents: real text at their offsets, and the sections chunks lie in.

Over every document of sample_corpus/ and ../shared/corpus/ (skipped when absent), as built
and stored (``built``), and for a known heading of a known document of each kind.
"""

from __future__ import annotations

import pymupdf
import pytest

from ingest.formats import media_type_of, parse_document
from ingest.text import chunk_spans, make_chunks
from schemas.records import ChunkerSettings, DocStatus, MediaType

from conftest import SAMPLE_CORPUS, SHARED_CORPUS, needs_shared_corpus


def _outline_titles(path) -> set[str]:
    with pymupdf.open(path) as doc:
        return {" ".join(str(title).split()) for _, title, *_ in doc.get_toc(simple=True)}


def test_every_chunks_headings_occur_in_its_document_before_its_start_in_order(built):
    """The one exception: a PDF outline entry whose words are not on its page (it stands at the
    page's start with the outline's words)."""
    idx, corpus = built
    with_headings = 0
    for doc in idx.documents():
        if doc.status is not DocStatus.OK:
            continue
        text = idx.doc_text(doc.doc_version)
        outline = _outline_titles(corpus / doc.doc_id) if doc.media_type is MediaType.PDF else set()
        for chunk in idx.chunks_of(doc.doc_id):
            at = 0
            for heading in chunk.headings:
                found = text.find(heading, at, chunk.start + len(heading))
                if found < 0:
                    assert heading in outline, (chunk.chunk_id, heading, chunk.headings)
                    continue
                assert heading == heading.strip() and heading, (chunk.chunk_id, heading)
                at = found + 1
            with_headings += bool(chunk.headings)
            assert chunk.title == idx.chunks_of(doc.doc_id)[0].title  # one title per document
    assert with_headings > 0


def _chunks(tokenizer, path, doc_id):
    parsed = parse_document(path.read_bytes(), doc_id, media_type_of(doc_id)).parsed
    return parsed, make_chunks(parsed, chunk_spans(parsed.text, tokenizer, ChunkerSettings(), parsed.hidden_runs))


@pytest.mark.parametrize("doc_id, heading_path, quote, title", [
    # DOCX Heading styles, numbered: the path of a paragraph under "2.1."
    ("office/docling__unit_test_headers_numbered.docx", ("2.\tSection 2", "2.1.\tSection 2.1"), "Detail A.1.1",
     "1. Section 1"),
    # HTML: the h1 then an h2
    ("html/trafilatura__wikipedia-tsne.html", ("t-distributed stochastic neighbor embedding", "Software[edit]"),
     "projection/TSNE.java", "t-distributed stochastic neighbor embedding - Wikipedia"),
    # PDF outline: a section inside its chapter
    ("pdf/GeoTopo-komprimiert.pdf", ("1 Topologische Grundbegriffe", "1.2 Metrische Räume"),
     "Metrik", "Geometrie und Topologie"),
])
def test_a_known_heading_is_in_the_path_of_a_chunk_under_it(tokenizer, doc_id, heading_path, quote, title):
    needs_shared_corpus()
    parsed, chunks = _chunks(tokenizer, SHARED_CORPUS / doc_id, doc_id)
    assert parsed.headings and all(parsed.text.startswith(h.text, h.start) or parsed.media_type is MediaType.PDF
                                   for h in parsed.headings)
    section_start = max(h.start for h in parsed.headings if h.text == heading_path[-1])
    under = [c for c in chunks if c.start >= section_start and quote in c.text]
    assert under, f"no chunk after {heading_path[-1]!r} holds {quote!r}"
    assert under[0].headings[-len(heading_path):] == heading_path
    assert all(c.title == title for c in chunks)


@pytest.mark.parametrize("doc_id, expected", [
    ("pricing/rate-card.pdf", "1. Plans at a glance"),  # font sizes: no outline
    ("docs/getting-started.md", None),
    ("web/faq.html", None),
])
def test_sample_documents_have_headings_that_are_their_own_text(doc_id, expected):
    parsed = parse_document((SAMPLE_CORPUS / doc_id).read_bytes(), doc_id, media_type_of(doc_id)).parsed
    assert parsed.headings
    assert [h.start for h in parsed.headings] == sorted(h.start for h in parsed.headings)
    for heading in parsed.headings:
        assert parsed.text[heading.start : heading.start + len(heading.text)] == heading.text
        assert 1 <= heading.level <= 6
    if expected is not None:
        assert expected in [h.text for h in parsed.headings]


def test_markdown_headings_are_atx_and_setext_lines_outside_code():
    from ingest.formats.text import parse_text

    source = "Guide\n=====\n\nIntro.\n\n## Install ##\n\n```sh\n# a comment, not a heading\n```\n\n### Linux\ntext\n"
    parsed = parse_text(source.encode(), "g.md", MediaType.MARKDOWN)
    assert [(h.level, h.text) for h in parsed.headings] == [(1, "Guide"), (2, "Install"), (3, "Linux")]
    assert [parsed.text[h.start : h.start + len(h.text)] for h in parsed.headings] == ["Guide", "Install", "Linux"]


def test_hidden_html_headings_are_no_headings():
    from ingest.formats.html.parser import parse_html

    parsed = parse_html(b"<h1>Shown</h1><h2 style='display:none'>Secret</h2><div hidden><h2>No</h2></div><h2></h2>"
                        b"<h2>Also <b>shown</b></h2>", "h.html")
    assert [(h.level, h.text) for h in parsed.headings] == [(1, "Shown"), (2, "Also shown")]
    unclosed = parse_html(b"<p>Intro</p><h3>Left <i>open", "u.html")  # the source ends inside the heading
    assert [(h.level, h.text) for h in unclosed.headings] == [(3, "Left open")]


@pytest.mark.parametrize("doc_id, expected", [
    ("office/docling__text_document_01.odt", [(1, "heading level 1.0"), (2, "Heading level 2: A")]),
    ("office/docling__epub_purvis_poetry.epub", [(1, "Poetry"), (2, "Imprint")]),
    ("office/docling__powerpoint_sample.pptx", [(1, "Test Table Slide"), (1, "Second slide title")]),
    ("office/docling__xlsx_01.xlsx", [(1, "Sheet1"), (1, "Sheet2"), (1, "Sheet3")]),
])
def test_office_headings_are_their_documents_headings_in_order(doc_id, expected):
    needs_shared_corpus()
    parsed = parse_document((SHARED_CORPUS / doc_id).read_bytes(), doc_id, media_type_of(doc_id)).parsed
    assert [(h.level, h.text) for h in parsed.headings][: len(expected)] == expected
    assert all(parsed.text.startswith(h.text, h.start) for h in parsed.headings)
