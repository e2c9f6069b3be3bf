"""A document's own date (documents.created): PDF CreationDate, HTML article:published_time or
the first <time datetime>, office core properties' dcterms:created; ISO 8601, UTC where timed;
null where the document has none; filtered on as `created`."""

from __future__ import annotations

import datetime as dt
import io

import pymupdf
import pytest
from hypothesis import given
from hypothesis import strategies as st

import index
from ingest.build import BuildSettings, build_index
from ingest.formats import parse_document
from ingest.formats.dates import iso_date
from schemas.records import MediaType

from doubles import HashingEmbedder

TEXT = "The rollout of filtered search is planned for the second quarter of the year."


def _pdf(creation_date: str | None) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), TEXT)
    if creation_date is not None:
        doc.set_metadata({"creationDate": creation_date})
    return doc.tobytes()


def _docx(created: dt.datetime | None) -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_paragraph(TEXT)
    document.core_properties.created = created
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _created(source: bytes, name: str, media_type: MediaType) -> str | None:
    outcome = parse_document(source, name, media_type)
    assert outcome.record.status == "ok", outcome.record.error
    return outcome.record.created


@pytest.mark.parametrize("raw, expected", [
    ("D:20230704153000+02'00'", "2023-07-04T13:30:00Z"),
    ("D:20230704153000Z", "2023-07-04T15:30:00Z"),
    ("D:20230704", "2023-07-04"),
    ("D:2023", "2023"),
    ("not a date", None),
    (None, None),
])
def test_pdf_creation_date_is_iso_utc(raw, expected):
    assert _created(_pdf(raw), "a.pdf", MediaType.PDF) == expected


@pytest.mark.parametrize("html, expected", [
    (('<head><meta property="article:published_time" content="2024-05-02T08:00:00+02:00"></head>'
      '<p>Posted <time datetime="2020-01-01">then</time></p>'), "2024-05-02T06:00:00Z"),
    ("<p>Posted <time datetime='2023-11-05'>Nov 5</time> and <time datetime='2021-01-01'>x</time></p>", "2023-11-05"),
    ("<!-- <time datetime='2019-01-01'> --><script>'<time datetime=\"2018-01-01\">'</script><p>x</p>", None),
    ("<p>undated</p>", None),
])
def test_html_published_time_or_first_time_element(html, expected):
    assert _created(f"<html><body>{TEXT}{html}</body></html>".encode(), "a.html", MediaType.HTML) == expected


def test_office_core_created_is_iso_utc():
    created = dt.datetime(2022, 3, 4, 5, 6, 7)
    assert _created(_docx(created), "a.docx", MediaType.DOCX) == "2022-03-04T05:06:07Z"


@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)),
       st.integers(-14 * 60, 14 * 60))
def test_a_timed_date_in_any_zone_is_the_same_instant_in_utc(moment, offset_minutes):
    zone = dt.timezone(dt.timedelta(minutes=offset_minutes))
    local = moment.replace(microsecond=0, tzinfo=zone)
    expected = local.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert iso_date(local.isoformat()) == expected
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    assert iso_date(f"D:{local:%Y%m%d%H%M%S}{sign}{hours:02d}'{minutes:02d}'") == expected


def test_created_is_a_filter_column(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "old.pdf").write_bytes(_pdf("D:20190101120000Z"))
    (corpus / "new.pdf").write_bytes(_pdf("D:20250301120000Z"))
    (corpus / "undated.md").write_text(TEXT)
    out = tmp_path / "index"
    build_index(corpus, out, BuildSettings(workers=1), embedder=HashingEmbedder())
    idx = index.open(out, embedder=HashingEmbedder())
    assert idx.documents_where("created >= '2024-01-01'") == ["new.pdf"]
    assert idx.documents_where("created IS NULL") == ["undated.md"]
    hits = idx.search("rollout filtered search", k=5, mode="dense", where="created < '2020'")
    assert hits and {h.doc_id for h in hits} == {"old.pdf"}
