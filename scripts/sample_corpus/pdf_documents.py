"""Builders for the four well-formed PDFs, each returning the file's bytes.

pricing/rate-card.pdf (page labels, tables, footers), handbook/two-column.pdf (two columns,
ligatures, hyphenation), reports/rotated-and-scanned.pdf (a rotated page, a scanned page, a
crop box) and intl/multilingual.pdf (shaped RTL scripts, non-embedded CJK fonts). Their text
comes from `content_pdf`; each builder checks its page count before returning.
"""

from __future__ import annotations

import io
import re

import pymupdf

from .checks import check_fits_on_page, check_page_count
from .content_pdf import (
    HANDBOOK_HYPHENATION,
    HANDBOOK_SECTIONS,
    MULTILINGUAL_CSS,
    MULTILINGUAL_HTML,
    MULTILINGUAL_PAGE_TWO,
    RATE_CARD_SECTIONS,
    REPORT_GLOSSARY,
    REPORT_MEMO,
    REPORT_REGIONS,
    REPORT_SUMMARY,
)
from .pdf_layout import (
    A4,
    FONT_DIR,
    HELV,
    HELV_BOLD,
    LETTER,
    SERIF,
    SERIF_BOLD,
    SOFT_HYPHEN,
    TIMES,
    TIMES_BOLD,
    Face,
    PageFlow,
    pdf_bytes,
    put_text,
    wrap,
)

# ------------------------------------------------------------- pricing/rate-card.pdf

def _draw_table(page: pymupdf.Page, top: float, left: float, widths: list[float],
                rows: list[tuple[str, ...]], size: float = 9.5, row_height: float = 18) -> float:
    """Cells as plain text lines between thin rules; returns the y below the table."""
    y = top
    page.draw_line((left, y), (left + sum(widths), y), width=0.8)
    for index, row in enumerate(rows):
        face = HELV_BOLD if index == 0 else HELV
        x = left
        for cell, width in zip(row, widths):
            put_text(page, x + 3, y + 12.5, cell, face, size)
            x += width
        y += row_height
        page.draw_line((left, y), (left + sum(widths), y), width=0.8 if index == 0 else 0.3)
    return y


def _rate_card_footer(page: pymupdf.Page, number: int) -> None:
    if number == 0:
        return
    footer = f"Northwind Cloud Rate Card 2024 | Confidential | Page {number}"
    put_text(page, 72, 750, footer, HELV, 8, color=(0.35, 0.35, 0.35))


def build_rate_card() -> bytes:
    doc = pymupdf.open()
    flow = PageFlow(doc, LETTER, [(72, 540)], top=72, bottom=720, finish_page=_rate_card_footer)
    cover = flow.new_page(top=215)
    put_text(cover, 72, 190, "Northwind Cloud Rate Card", HELV_BOLD, 28)
    flow.block("Plans, usage prices and billing terms for the 2024 price year", HELV, 14, 20,
               space_after=24)
    flow.block("Effective 1 March 2024. Version 2024.1, approved by the Pricing Committee "
               "on 12 February 2024.", HELV, 11, 15, space_after=8)
    flow.block("Prepared by Revenue Operations, Northwind Cloud Inc., 410 Harbor Street, "
               "Portland, Oregon 97209.", HELV, 11, 15, space_after=40)
    flow.block("Contents", HELV_BOLD, 13, 18, space_after=4)
    for (heading, *_), page_number in zip(RATE_CARD_SECTIONS, (1, 2, 3)):
        flow.block(f"{heading} ........................................ {page_number}",
                   HELV, 11, 16)
    for heading, *parts in RATE_CARD_SECTIONS:
        flow.new_page()
        flow.block(heading, HELV_BOLD, 16, 24, space_after=6)
        for part in parts:
            if isinstance(part[0], str):
                for paragraph in part:
                    flow.block(paragraph, HELV, 10.5, 14.5, space_after=8)
            else:
                widths = [100, 90, 110, 60, 108] if len(part[0]) == 5 else [170, 110, 188]
                top = flow.reserve(18 * len(part) + 14)
                flow.y = _draw_table(flow.page, top, 72, widths, part) + 14
    flow.close()
    check_page_count(doc, 4, "pricing/rate-card.pdf")
    doc.set_page_labels([
        {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
        {"startpage": 1, "prefix": "", "style": "D", "firstpagenum": 1},
    ])
    return pdf_bytes(doc, "Northwind Cloud Rate Card 2024", "Plans, usage prices and billing terms")


# ----------------------------------------------------------- handbook/two-column.pdf

def _hyphenate(text: str) -> str:
    for pattern in HANDBOOK_HYPHENATION:
        text = re.sub(rf"\b{pattern.replace('-', '')}\b", pattern.replace("-", SOFT_HYPHEN), text)
    return text


def _handbook_footer(page: pymupdf.Page, number: int) -> None:
    footer = f"Northwind Cloud Employee Handbook, edition 7 — page {number + 1} of 3"
    put_text(page, 60, 810, footer, SERIF, 8, color=(0.35, 0.35, 0.35))


def build_handbook() -> bytes:
    doc = pymupdf.open()
    gutter = 22
    middle = A4[0] / 2
    flow = PageFlow(doc, A4, [(60, middle - gutter / 2), (middle + gutter / 2, A4[0] - 60)],
                    top=60, bottom=785, finish_page=_handbook_footer)
    page = flow.new_page(top=135)
    put_text(page, 60, 92, "Employee Handbook (excerpt)", SERIF_BOLD, 22)
    put_text(page, 60, 115, "Policies for all Northwind Cloud staﬀ, revised 1 June 2024",
             SERIF, 11)
    for heading, paragraphs in HANDBOOK_SECTIONS:
        flow.block(heading, SERIF_BOLD, 11, 16, space_after=3, keep_with_next=3)
        for paragraph in paragraphs:
            flow.block(_hyphenate(paragraph), SERIF, 10.5, 14.5, space_after=7)
        flow.y += 6
    flow.close()
    check_page_count(doc, 3, "handbook/two-column.pdf")
    return pdf_bytes(doc, "Northwind Cloud Employee Handbook", "Two-column handbook excerpt")


# -------------------------------------------------- reports/rotated-and-scanned.pdf

def _scanned_memo_pixmap() -> pymupdf.Pixmap:
    """Typewritten memo rendered to a grey bitmap, the way a flatbed scan arrives."""
    paper = pymupdf.open()
    sheet = paper.new_page(width=LETTER[0], height=LETTER[1])
    for index, line in enumerate(REPORT_MEMO):
        sheet.insert_text((90, 110 + 17 * index), line, fontname="cour", fontsize=11.5)
    sheet.draw_line((90, 92), (522, 92), width=1.2)
    return sheet.get_pixmap(dpi=100, colorspace=pymupdf.csGRAY)


def build_report() -> bytes:
    doc = pymupdf.open()
    flow = PageFlow(doc, LETTER, [(72, 540)], top=72, bottom=720)

    # Page 1: an ordinary page.
    flow.new_page()
    flow.block("Northwind Cloud Operations Report, Third Quarter 2024", TIMES_BOLD, 18, 24,
               space_after=4)
    flow.block("Prepared by the Site Reliability Engineering group, 14 October 2024",
               TIMES, 11, 15, space_after=16)
    for paragraph in REPORT_SUMMARY:
        flow.block(paragraph, TIMES, 11.5, 15.5, space_after=9)

    # Page 2: /Rotate 90, text drawn so that it reads upright in a landscape view.
    landscape = doc.new_page(width=LETTER[0], height=LETTER[1])
    landscape.set_rotation(90)

    def upright(x: float, y: float, text: str, face: Face, size: float) -> None:
        point = pymupdf.Point(x, y) * landscape.derotation_matrix
        landscape.insert_text(point, text, fontname=face.name, fontsize=size, rotate=90)

    upright(72, 80, "Regional performance, third quarter 2024", TIMES_BOLD, 16)
    note = ("All latency figures on this page were measured from synthetic probes in "
            "São Paulo, Virginia and Singapore, every 60 seconds.")
    for index, line in enumerate(wrap(note, TIMES, 11, 640)):
        upright(72, 108 + 15 * index, line, TIMES, 11)
    widths = [120, 170, 110, 110, 90]
    for row_index, row in enumerate(REPORT_REGIONS):
        x = 72.0
        for cell, width in zip(row, widths):
            upright(x, 170 + 22 * row_index, cell, TIMES_BOLD if row_index == 0 else TIMES, 11)
            x += width

    # Page 3: a scan, no text layer at all.
    scan = doc.new_page(width=LETTER[0], height=LETTER[1])
    scan.insert_image(scan.rect, pixmap=_scanned_memo_pixmap())

    # Page 4: text only inside a crop box that is smaller than the media box.
    crop = pymupdf.Rect(90, 108, 522, 684)
    flow = PageFlow(doc, LETTER, [(crop.x0 + 18, crop.x1 - 18)], top=crop.y0 + 18,
                    bottom=crop.y1 - 18)
    cropped = flow.new_page()
    flow.block("Appendix C: Definitions used in this report", TIMES_BOLD, 14, 20,
               space_after=8)
    for term, definition in REPORT_GLOSSARY:
        flow.block(f"{term}. {definition}", TIMES, 11, 15, space_after=8)
    flow.block("Appendix C was added at the request of the audit committee on 11 October "
               "2024 and applies to all quarterly reports from Q3 2024 onwards.",
               TIMES, 11, 15)
    cropped.set_cropbox(crop)

    check_page_count(doc, 4, "reports/rotated-and-scanned.pdf")
    return pdf_bytes(doc, "Northwind Cloud Operations Report Q3 2024",
                     "Quarterly availability, incidents and capacity")


# ----------------------------------------------------------- intl/multilingual.pdf

def build_multilingual() -> bytes:
    # Page 1 goes through the HTML layout engine, which shapes Arabic and orders RTL
    # runs visually; page 2 is plain insert_text with the built-in, non-embedded CJK fonts.
    story = pymupdf.Story(html=MULTILINGUAL_HTML, user_css=MULTILINGUAL_CSS,
                          archive=pymupdf.Archive(str(FONT_DIR)))
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    device = writer.begin_page(pymupdf.Rect(0, 0, *A4))
    more, _ = story.place(pymupdf.Rect(60, 60, A4[0] - 60, A4[1] - 60))
    story.draw(device)
    writer.end_page()
    writer.close()
    check_fits_on_page(more, "intl/multilingual.pdf", 1)
    doc = pymupdf.open("pdf", buffer.getvalue())
    page = doc.new_page(width=A4[0], height=A4[1])
    for index, (line, face, size) in enumerate(MULTILINGUAL_PAGE_TWO):
        if line:
            put_text(page, 60, 90 + 24 * index, line, face, size)
    check_page_count(doc, 2, "intl/multilingual.pdf")
    return pdf_bytes(doc, "Northwind Cloud data residency notice",
                     "Data residency notice in several languages")
