"""Regenerate sample_corpus/: a small, deterministic knowledge base for tests and benchmarks.

The corpus belongs to an invented SaaS company, Northwind Cloud. Every document holds
sentences that appear in no other document, so that search and quote-verification tests
have something exact to find, and each file exercises one awkward corner of parsing:
page labels, two columns with ligatures and hyphenation, a rotated page, a scanned page,
a crop box, non-Latin scripts, HTML entities and hidden elements, legacy encodings,
CRLF text, and files that must fail cleanly.

Running the script twice gives byte-identical files. The one exception is
bad/encrypted.pdf: AES-256 encryption in MuPDF draws fresh random salts and IVs on every
save, so the script keeps an existing copy whenever it still decrypts (password "secret")
to the intended text, and writes a new one only when it does not.

Usage:
    .venv/bin/python scripts/make_sample_corpus.py            # writes ./sample_corpus/
    .venv/bin/python scripts/make_sample_corpus.py --out /tmp/corpus
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

REPO_ROOT = Path(__file__).resolve().parent.parent
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SERIF_TTF = str(FONT_DIR / "DejaVuSerif.ttf")
SERIF_BOLD_TTF = str(FONT_DIR / "DejaVuSerif-Bold.ttf")
SANS_TTF = str(FONT_DIR / "DejaVuSans.ttf")

# Fixed dates keep PDF bytes stable; PyMuPDF would otherwise stamp the wall clock.
PDF_DATE = "D:20240901090000Z"
LETTER = (612.0, 792.0)
A4 = (595.0, 842.0)
SOFT_HYPHEN = "\u00ad"  # marks where the layout may break a word and print a hyphen


# --------------------------------------------------------------------------- PDF layout


@dataclass(frozen=True)
class Face:
    """A font as a page names it (`name`) and as the layout measures it (`file`)."""

    name: str
    file: str | None = None  # None: a base-14 font, Latin-1 only, not embedded

    def length(self, text: str, size: float) -> float:
        return _measuring_font(self.name, self.file).text_length(text, fontsize=size)

    def ascent(self, size: float) -> float:
        return _measuring_font(self.name, self.file).ascender * size


@functools.lru_cache(maxsize=None)
def _measuring_font(name: str, file: str | None) -> pymupdf.Font:
    return pymupdf.Font(fontfile=file) if file else pymupdf.Font(name)


HELV, HELV_BOLD = Face("helv"), Face("hebo")
TIMES, TIMES_BOLD = Face("tiro"), Face("tibo")
SERIF, SERIF_BOLD = Face("dvserif", SERIF_TTF), Face("dvserifb", SERIF_BOLD_TTF)
SANS = Face("dvsans", SANS_TTF)


def wrap(text: str, face: Face, size: float, width: float) -> list[str]:
    """Greedy line breaking; a word may split at a soft hyphen, printing "-" at the break.

    >>> wrap("a b", HELV, 10, 500)
    ['a b']
    """
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        plain = word.replace(SOFT_HYPHEN, "")
        joined = f"{current} {plain}" if current else plain
        if face.length(joined, size) <= width:
            current = joined
            continue
        pieces = word.split(SOFT_HYPHEN)
        for cut in range(len(pieces) - 1, 0, -1):
            head = "".join(pieces[:cut]) + "-"
            with_head = f"{current} {head}" if current else head
            if face.length(with_head, size) <= width:
                lines.append(with_head)
                current = "".join(pieces[cut:])
                break
        else:
            if current:
                lines.append(current)
            current = plain
    if current:
        lines.append(current)
    return lines


def put_text(page: pymupdf.Page, x: float, baseline: float, text: str, face: Face,
             size: float, color: tuple[float, float, float] = (0, 0, 0)) -> None:
    page.insert_text((x, baseline), text, fontname=face.name, fontfile=face.file,
                     fontsize=size, color=color)


class PageFlow:
    """Pours text blocks into columns, column after column, page after page.

    Each column is filled completely before the next one starts, so the content
    stream holds the text in reading order (left column, then right column).
    """

    def __init__(self, doc: pymupdf.Document, page_size: tuple[float, float],
                 columns: list[tuple[float, float]], top: float, bottom: float,
                 finish_page: Callable[[pymupdf.Page, int], None] | None = None) -> None:
        self.doc = doc
        self.page_size = page_size
        self.columns = columns
        self.top = top
        self.bottom = bottom
        self.finish_page = finish_page
        self.page: pymupdf.Page | None = None
        self.column = 0
        self.y = top

    def new_page(self, top: float | None = None) -> pymupdf.Page:
        self._finish()
        self.page = self.doc.new_page(width=self.page_size[0], height=self.page_size[1])
        self.column = 0
        self.y = self.top if top is None else top
        return self.page

    def close(self) -> None:
        self._finish()
        self.page = None

    def _finish(self) -> None:
        if self.page is not None and self.finish_page is not None:
            self.finish_page(self.page, self.page.number)

    def _advance_column(self) -> None:
        if self.column + 1 < len(self.columns):
            self.column += 1
            self.y = self.top
        else:
            self.new_page()

    @property
    def width(self) -> float:
        left, right = self.columns[self.column]
        return right - left

    def reserve(self, height: float) -> float:
        """Room for `height` points in the current column; returns the top y."""
        if self.page is None:
            self.new_page()
        if self.y + height > self.bottom:
            self._advance_column()
        top = self.y
        self.y += height
        return top

    def block(self, text: str, face: Face, size: float, leading: float,
              space_after: float = 0.0, keep_with_next: int = 0) -> None:
        if self.page is None:
            self.new_page()
        lines = wrap(text, face, size, self.width)
        if keep_with_next and self.y + leading * (len(lines) + keep_with_next) > self.bottom:
            self._advance_column()
        for line in lines:
            if self.y + leading > self.bottom:
                self._advance_column()
            left = self.columns[self.column][0]
            put_text(self.page, left, self.y + face.ascent(size), line, face, size)
            self.y += leading
        self.y += space_after


def pdf_bytes(doc: pymupdf.Document, title: str, subject: str, **save_options: object) -> bytes:
    """Serialise with fixed metadata, subset fonts and no fresh file ID."""
    doc.set_metadata({
        "title": title,
        "author": "Northwind Cloud",
        "subject": subject,
        "keywords": "northwind, sample corpus",
        "creator": "Northwind Cloud Publishing",
        "producer": "PyMuPDF",
        "creationDate": PDF_DATE,
        "modDate": PDF_DATE,
    })
    doc.subset_fonts()
    return doc.tobytes(garbage=3, deflate=True, no_new_id=True, **save_options)


def check_page_count(doc: pymupdf.Document, expected: int, what: str) -> None:
    # Content edits can silently push text onto another page; the corpus README and the
    # tests rely on these page counts.
    if doc.page_count != expected:
        raise RuntimeError(f"{what}: laid out {doc.page_count} pages, expected {expected}")


# ------------------------------------------------------------- pricing/rate-card.pdf

RATE_CARD_PLANS = [
    ("Plan", "Monthly price", "Included API calls", "Seats", "Overage per 1,000 calls"),
    ("Starter", "$49", "250,000", "5", "$0.20"),
    ("Growth", "$399", "5,000,000", "25", "$0.12"),
    ("Scale", "$1,450", "25,000,000", "100", "$0.08"),
    ("Enterprise", "Custom", "Custom", "Unlimited", "Negotiated"),
]
RATE_CARD_STORAGE = [
    ("Resource", "Unit", "List price"),
    ("Hot object storage", "GB-month", "$0.023"),
    ("Archive storage", "GB-month", "$0.004"),
    ("Egress after the first 100 GB", "GB", "$0.05"),
    ("Dedicated IP address", "address-month", "$6.00"),
    ("Additional audit-log retention", "year", "$180.00"),
]
RATE_CARD_SUPPORT = [
    ("Support tier", "Response target", "Price"),
    ("Basic", "1 business day", "Included"),
    ("Priority", "4 hours", "10% of monthly spend, minimum $250"),
    ("Premier", "30 minutes, 24x7", "$4,000 per month"),
]

RATE_CARD_SECTIONS = [
    ("1. Plans at a glance", [
        "Northwind Cloud sells four subscription plans. Each plan includes a monthly "
        "allowance of API calls and seats; usage above the allowance is billed as overage "
        "at the end of the month. List prices below are in US dollars and exclude sales "
        "tax and VAT.",
        "The Starter plan is meant for teams evaluating the platform and is limited to a "
        "single production workspace. Customers who outgrow Starter can upgrade at any "
        "time, and the unused part of the month is credited against the first Growth "
        "invoice.",
    ], RATE_CARD_PLANS, [
        "Seats are named users with write access. Read-only viewers are free on every plan "
        "and do not count towards the seat limit.",
        "Enterprise pricing starts at a committed annual spend of $60,000 and includes "
        "single sign-on, a 99.95% availability commitment and a dedicated onboarding "
        "engineer for the first 90 days.",
    ]),
    ("2. Usage, storage and support", [
        "Growth plan overage is billed at $0.12 per 1,000 API calls. Starter overage is "
        "billed at $0.20 per 1,000 calls and Scale overage at $0.08 per 1,000 calls; "
        "partial blocks of 1,000 calls are rounded up. Usage is metered per workspace and "
        "summed across all workspaces of the same account.",
        "Storage and network resources are billed separately from the plan fee at the "
        "rates in the table below. Storage is measured as the daily average over the "
        "billing month.",
    ], RATE_CARD_STORAGE, [
        "Support is sold in three tiers. The response target is the time to a first "
        "human reply for a severity-1 ticket; lower severities have longer targets, "
        "listed in the support policy.",
    ], RATE_CARD_SUPPORT),
    ("3. Discounts and billing terms", [
        "Customers who prepay a full year receive a 15% discount on the plan fee. A "
        "three-year commitment raises the discount to 22%, with the price locked for the "
        "whole term. Registered nonprofits and accredited schools receive 30% off any "
        "plan except Enterprise.",
        "Invoices are issued on the first business day of each month and are payable "
        "within 30 days. Balances more than 30 days overdue accrue a late fee of 1.5% per "
        "month, and accounts more than 60 days overdue are moved to read-only mode after "
        "two written reminders.",
        "Prices in euros are the US dollar list price multiplied by 0.93 and rounded to "
        "the nearest whole euro; prices in pounds sterling use a factor of 0.79. The "
        "exchange factors are reviewed every January and July.",
        "This rate card replaces the rate card dated 1 September 2023. Existing customers "
        "keep their current prices until the first renewal after 1 March 2024, and any "
        "increase at renewal is capped at 7% per year.",
        "Questions about this rate card go to the Revenue Operations desk at "
        "pricing@northwind.example or +1 503 555 0142, Monday to Friday, 8:00 to 17:00 "
        "Pacific time.",
    ]),
]


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

# Ligature characters (U+FB00 to U+FB04: ﬀ ﬁ ﬂ ﬃ ﬄ) are typed literally so that the text
# layer holds them, as it does in PDFs from typesetting software.
HANDBOOK_SECTIONS = [
    ("1. Working from anywhere", [
        "Northwind Cloud is a remote-ﬁrst company: there is no head oﬃce that anyone is "
        "expected to commute to, although the Portland and Dublin hubs are open to staff "
        "every weekday from 8:00 to 19:00. Employees may work from any of the 14 approved "
        "countries for up to 45 days per calendar year without prior approval. Longer "
        "stays need sign-oﬀ from People Operations, because payroll, tax and data-"
        "protection rules change once a stay passes the local threshold.",
        "We ask that you keep a “core overlap” of four hours with your team’s home time "
        "zone. Meetings that cross more than three zones are recorded and shared within "
        "24 hours, so nobody has to join a call at 2 a.m. to stay informed — the "
        "recording, its transcript and a short written summary are the oﬃcial record.",
    ]),
    ("2. Equipment and home oﬃce", [
        "New employees choose a laptop from the standard catalogue during their ﬁrst "
        "week; the default is a 14-inch machine with 32 GB of memory. Every employee also "
        "receives a one-time home-oﬃce allowance of $1,200 (or €1,100 in the euro "
        "countries) for a desk, chair, monitor and headset. Receipts are ﬁled in "
        "Ledgerline within 60 days of purchase; items bought later are not reimbursed.",
        "Laptops stay the property of Northwind Cloud and are refreshed every three "
        "years. A damaged device is replaced within ﬁve business days; a lost or stolen "
        "device must be reported to the service desk at once, because the security team "
        "wipes it remotely before the next check-in with the management infrastructure.",
    ]),
    ("3. Travel and expenses", [
        "All ﬁnancial approvals follow a single workﬂow in Ledgerline: the employee "
        "submits the claim, the manager approves it, and Finance pays approved claims in "
        "the next Thursday payment run. Claims under $75 need no receipt. Hotel stays are "
        "reimbursed up to $240 per night in tier-one cities such as London, New York and "
        "Tokyo, and up to $170 per night elsewhere.",
        "Economy class is the default for ﬂights under six hours; for longer ﬂights, "
        "premium economy is allowed when it costs less than 1.6 times the economy fare. "
        "The per diem for meals is $68 in the United States and €60 in Europe; alcohol is "
        "never reimbursable, not even at customer dinners. Managers who approve "
        "their own expenses break policy, and the claim will be returned.",
    ]),
    ("4. Onboarding", [
        "The onboarding workﬂow lasts 30 days and is tracked in a shared checklist with "
        "37 items. During the ﬁrst week, every engineer ships a small change to "
        "production with a buddy; this is not a test, but a way to make the deploy "
        "pipeline feel routine. Buddies are paired across teams on purpose, so that new "
        "staﬀ meet people outside their own reporting line.",
        "By day 30, new employees should have met their manager for four one-to-ones, "
        "read the engineering principles, and completed the security course, "
        "which takes about 90 minutes and includes a short quiz with a pass mark of 80%.",
    ]),
    ("5. Time oﬀ and leave", [
        "Full-time employees receive 27 days of paid holiday per year plus the public "
        "holidays of their country of employment. Unused holiday carries over up to a "
        "maximum of ﬁve days, which must be taken by 31 March of the following year. "
        "Parental leave is 20 weeks at full pay for every parent, regardless of gender or "
        "how the child joins the family.",
        "Sick leave does not need a doctor’s note for the ﬁrst three consecutive days. "
        "We would rather you rest than “push through” an illness and infect the team; "
        "managers are measured on how well their teams recover, not on attendance "
        "statistics.",
    ]),
    ("6. Security basics", [
        "Hardware security keys are mandatory for every account that can reach "
        "production or customer data; passwords alone are not accepted anywhere in the "
        "company. Lost keys are replaced the same day at either hub. Please never "
        "forward a customer’s data to a personal email address — not even to work on it "
        "over the weekend.",
        "Suspected phishing messages are reported with the “Report” button in the mail "
        "client; the security team answers within 30 minutes during working hours. The "
        "team runs a simulated phishing campaign every quarter, and the results are "
        "shared per department, never per person, to keep the exercise about learning "
        "rather than blame.",
    ]),
    ("7. Pay and performance reviews", [
        "Salaries are reviewed once a year, in April, against the published salary bands; "
        "there is no separate negotiation round. Each review combines a self-assessment, "
        "written feedback from two peers and the manager’s summary, and the result is one "
        "of four ratings. Out-of-cycle raises are possible after a promotion, and they are "
        "backdated to the ﬁrst day of the month in which the promotion was conﬁrmed.",
        "Equity grants vest over four years with a one-year cliﬀ. Employees in countries "
        "where stock options are taxed on grant receive restricted stock units instead, so "
        "that nobody pays tax on value they cannot yet sell. The compensation team "
        "publishes the band for every open role in the job advert.",
    ]),
    ("8. Learning and conferences", [
        "Every employee has a learning budget of $2,000 per year for courses, books and "
        "certiﬁcations, plus three learning days that do not count as holiday. Speakers "
        "accepted at a conference get travel and the ticket paid in full, on top of the "
        "learning budget. Unused budget does not roll over; it resets on 1 January.",
        "Engineers may spend up to 10% of their time on open-source projects that the "
        "platform depends on. Contributions go out under the author’s own name, and "
        "the legal team pre-approves the licences most often used — MIT, Apache 2.0 and "
        "BSD — so that small ﬁxes do not wait for a review.",
    ]),
    ("9. Health and wellbeing", [
        "Northwind pays for private health insurance in every country where it is "
        "customary, including dental cover for dependants. Employees also receive a "
        "wellbeing allowance of $50 per month, paid with salary, which can go towards a "
        "gym, a sports club, therapy or anything else that helps; nobody asks for a "
        "receipt. The employee assistance line is conﬁdential and open 24 hours a day.",
        "On-call engineers receive a ﬂat allowance of $350 for each week on the rota, "
        "and any night in which they are paged after 23:00 earns a late start the next "
        "morning. Nobody is on call for more than one week in four; teams too small for "
        "that rota share it with a neighbouring team.",
    ]),
    ("10. Code of conduct", [
        "We expect everyone to be kind, direct and specific. Criticise work, not people; "
        "assume good intent, and say so when a message reads diﬀerently from how it was "
        "probably meant. Harassment of any kind leads to disciplinary action, up to and "
        "including dismissal, whether it happens in a meeting, in chat, or at an "
        "after-work event.",
        "Concerns can be raised with a manager, with People Operations, or anonymously "
        "through the ethics line run by an independent provider. Reports are acknowledged "
        "within two business days, and retaliation against anyone who raises a concern in "
        "good faith is itself a breach of this code.",
    ]),
    ("11. Working with customers", [
        "Customer visits are planned with the account team at least two weeks ahead, "
        "and every visit has a written agenda that the customer has seen. Gifts from "
        "customers or vendors worth more than $100 are declined politely or handed to "
        "People Operations, who raﬄe them among all staﬀ at the end of the year. Meals "
        "with a customer are ﬁne as long as they would look reasonable in a newspaper.",
        "Never promise a feature, a date or a discount that is not already on the public "
        "roadmap or the rate card. Solutions engineers may share architecture diagrams "
        "of our infrastructure only under a signed non-disclosure agreement, and only the "
        "versions published in the sales library, which the security team reviews every "
        "quarter. Requests for anything more detailed — penetration-test reports, "
        "data-centre addresses, staﬀ lists — go to the trust team, who answer within ﬁve "
        "business days.",
    ]),
    ("12. Privacy of employee data", [
        "People Operations stores employee records in a single HR system with access "
        "limited to nine named people. Managers see salary, rating and leave data for "
        "their own reports only, and the audit log of who viewed which record is "
        "reviewed every month by the Data Protection Oﬃcer. Employees can download a copy "
        "of everything held about them from the self-service portal at any time.",
        "Monitoring of work devices is limited to what the security team needs to keep "
        "the infrastructure safe: malware detection, disk encryption status and "
        "operating-system patch levels. We do not read private messages, track keystrokes "
        "or take screenshots, and we never use security telemetry in a performance "
        "review — a rule written into every manager’s contract since 2021.",
    ]),
    ("13. Leaving Northwind", [
        "Employees who resign give the notice period in their contract, usually four "
        "weeks. On the last day, the manager collects the laptop and security keys, and "
        "access is revoked automatically at 18:00 local time by the identity workﬂow. "
        "Final pay includes unused holiday and any outstanding expense claims; ﬁnancial "
        "questions after departure go to payroll@northwind.example.",
    ]),
]


# Break points the handbook layout may use, as a typesetter's hyphenation list would.
HANDBOOK_HYPHENATION = (
    "infra-structure", "reim-bursed", "reim-bursable", "ex-penses", "prin-ci-ples",
    "com-pen-sation", "contri-butions", "neigh-bouring", "acknow-ledged", "thresh-old",
    "head-set", "em-ploy-ees", "em-ployee", "man-age-ment", "com-pany", "pro-duc-tion",
    "in-sur-ance", "de-pen-dants", "dis-ci-plinary", "ap-proval", "ap-proved",
    "re-tali-ation", "promo-tion", "regard-less", "auto-mati-cally", "out-stand-ing",
    "pur-chase", "con-fer-ence", "archi-tec-ture", "pene-tra-tion", "dis-clo-sure",
    "tele-metry", "per-for-mance", "oper-ating", "en-cryp-tion", "to-mor-row", "cata-logue",
    "simu-lated", "de-part-ment",
    "re-quests", "pay-ment", "assess-ment", "negoti-ation", "allow-ance", "pro-vider",
)


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

REPORT_SUMMARY = [
    "Platform availability for the third quarter of 2024 was 99.982 percent across all "
    "regions, against a commitment of 99.95 percent. Total customer-facing downtime was "
    "23 minutes, spread over three incidents, and no customer data was lost.",
    "On 2 July 2024 a DNS change in us-east caused 11 minutes of failed API calls for "
    "roughly 8 percent of requests. On 19 August 2024 a storage controller in "
    "ap-northeast failed over slowly and writes stalled for 9 minutes. On 23 September "
    "2024 an expired internal certificate interrupted webhook delivery for 3 minutes; "
    "all queued webhooks were delivered within the following hour.",
    "Paying customers grew from 3,874 to 4,212 during the quarter, and API traffic rose "
    "by 17 percent to 41.6 billion calls. Peak traffic of 212,000 requests per second "
    "was recorded on 30 September 2024 during quarter-end reporting.",
    "Capacity headroom stayed above the 35 percent target in every region except "
    "ap-northeast, where it fell to 29 percent in late August. Additional hosts for Osaka "
    "were ordered on 4 September 2024 and are due in the fourth quarter.",
]
REPORT_REGIONS = [
    ("Region", "Data center", "Availability", "p95 latency", "Incidents"),
    ("us-east", "Ashburn, Virginia", "99.971%", "41 ms", "1"),
    ("us-west", "Hillsboro, Oregon", "99.998%", "36 ms", "0"),
    ("eu-central", "Frankfurt", "99.993%", "38 ms", "0"),
    ("eu-west", "Dublin", "99.996%", "44 ms", "0"),
    ("ap-northeast", "Osaka", "99.965%", "57 ms", "1"),
    ("sa-east", "São Paulo", "99.989%", "63 ms", "1"),
]
REPORT_MEMO = [
    "NORTHWIND CLOUD INC. - INTERNAL MEMORANDUM",
    "",
    "To:      Site Reliability Engineering",
    "From:    Dana Whitaker, Chief Financial Officer",
    "Date:    9 October 2024",
    "Subject: Osaka capacity",
    "",
    "The board approved a capital budget of $2.4 million",
    "for the Osaka region on 9 October 2024.",
    "",
    "Purchase orders above $250,000 still need a second",
    "signature from the VP Engineering. Please file the",
    "vendor quotes in the finance share by 25 October.",
    "",
    "",
    "Signed: ____________________   D. Whitaker",
]
REPORT_GLOSSARY = [
    ("Availability", "The share of one-minute intervals in which synthetic probes saw "
     "successful API responses, measured per region."),
    ("Restorable backup", "A backup that passed a test restore within the last 30 days; "
     "older backups count as unverified in this report."),
    ("Headroom", "Spare capacity at the daily peak, as a percentage of installed "
     "capacity."),
    ("Sev-1", "An incident with customer-visible impact in more than one region or on "
     "more than 5 percent of requests."),
]


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

MULTILINGUAL_HTML = """\
<h1>Customer notice: where your data lives</h1>
<p>Northwind Cloud publishes this notice in nine languages for customers in 31 countries.
Each paragraph says the same thing: the region a workspace was created in is where its
data stays.</p>
<p><b>Deutsch:</b> Die Daten unserer Kunden in Köln, München und Zürich werden
ausschließlich im Rechenzentrum Frankfurt gespeichert. Größere Änderungen kündigen wir
30 Tage im Voraus an.</p>
<p><b>Ελληνικά:</b> Τα δεδομένα των πελατών της Northwind αποθηκεύονται στη Φρανκφούρτη
και δεν μεταφέρονται ποτέ εκτός Ευρωπαϊκής Ένωσης.</p>
<p><b>Русский:</b> Данные клиентов Northwind хранятся во Франкфурте; резервные копии
хранятся в Дублине в течение 35 дней.</p>
<p><b>한국어:</b> 서울 고객의 데이터는 오사카 리전에 저장됩니다.</p>
<p dir="rtl" lang="ar">يتم تخزين بيانات عملاء نورثويند في فرانكفورت لمدة خمس سنوات.</p>
<p dir="rtl" lang="he">הנתונים של לקוחות נורת׳ווינד נשמרים בפרנקפורט ובדבלין.</p>
"""
MULTILINGUAL_CSS = (
    "@font-face {font-family: dvsans; src: url(DejaVuSans.ttf);}"
    "body {font-family: dvsans; font-size: 11pt; line-height: 1.4;}"
    "h1 {font-size: 17pt;} p {margin-bottom: 9pt;}"
)
MULTILINGUAL_PAGE_TWO = [
    ("Regional contacts", SANS, 15),
    ("", SANS, 11),
    ("Frankfurt office: Datenschutzbeauftragte Jürgen Weiß, Tel. +49 69 5550 1842", SANS, 11),
    ("Athens partner: Νίκος Παπαδόπουλος, υπεύθυνος συμμόρφωσης", SANS, 11),
    ("Moscow reseller: Ирина Волкова, отдел по работе с клиентами", SANS, 11),
    ("", SANS, 11),
    ("中文：北风云在上海设有客户支持中心，工作时间为北京时间九点到十八点。", Face("china-s"), 12),
    ("日本語：大阪リージョンのデータは東京のバックアップに毎晩複製されます。", Face("japan"), 12),
    ("", SANS, 11),
    ("Support hours in Shanghai and Osaka follow local public holidays.", SANS, 11),
]


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
    if more:
        raise RuntimeError("intl/multilingual.pdf: page 1 text does not fit on one page")
    doc = pymupdf.open("pdf", buffer.getvalue())
    page = doc.new_page(width=A4[0], height=A4[1])
    for index, (line, face, size) in enumerate(MULTILINGUAL_PAGE_TWO):
        if line:
            put_text(page, 60, 90 + 24 * index, line, face, size)
    check_page_count(doc, 2, "intl/multilingual.pdf")
    return pdf_bytes(doc, "Northwind Cloud data residency notice",
                     "Data residency notice in several languages")


# ------------------------------------------------------------------------ HTML pages

FAQ_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Northwind Cloud FAQ &amp; Support Answers</title>
<style>
  /* stylemarkerpangolin: theme for the help centre */
  body { font-family: Georgia, serif; max-width: 46em; margin: 2em auto; }
  .price::after { content: " (excl. VAT)"; }
</style>
<script>
  // scriptmarkerquokka: help-centre banner, injected client-side only
  var bannerHtml = "<div class=\\"banner\\">scriptmarkerquokka</div>";
  if (document.body && bannerHtml.length > 0) { document.body.insertAdjacentHTML("afterbegin", bannerHtml); }
</script>
</head>
<body>
<!-- commentmarkerokapi: legal still has to review the refund answer -->
<header>
<h1>Frequently asked questions</h1>
<p>Answers from the <b>North</b>wind Cloud support team, last updated 3&nbsp;May&nbsp;2024.</p>
</header>
<main>
<h2 id="billing">Billing &amp; invoices</h2>
<p>Invoices are issued on the <b><i>first business day</i></b> of each month and can be
downloaded as PDF from <a href="https://app.northwind.example/billing">the billing page</a>.
Northwind&#8217;s finance team can re-issue an invoice with a purchase-order number within
two business days.</p>
<p>Refunds for annual plans are pro-rated to the day when a cancellation arrives within
the first 60 days &#x2014; after that, the plan runs until the end of its term.</p>
<div hidden>hiddenmarkeraxolotl: draft answer about crypto payments, not published.</div>
<p style="display:none">displaynonemarkernarwhal: old answer about fax invoices.</p>
<h2 id="support">Support</h2>
<p>Our support team in Montr&eacute;al answers &quot;Priority&quot; tickets within
4&nbsp;hours and Standard tickets within 1&nbsp;business&nbsp;day.
The Northwind status page posts incident updates every 30 minutes until an incident is resolved.</p>
<p>Quotas are checked with <code>limit &lt; usage</code> and <code>usage &gt; 0</code>
before a request is accepted; rejected requests return HTTP 429 with a
<span class="mono">Retry-After</span> header.</p>
<table>
<thead>
<tr><th>Region</th><th>Support hours (local time)</th><th>Languages</th></tr>
</thead>
<tbody>
<tr><td>Americas</td><td>07:00&ndash;20:00, Monday to Friday</td><td>English, Spanish</td></tr>
<tr><td>Europe</td><td>08:00&ndash;18:00, Monday to Friday</td><td>English, German, French</td></tr>
<tr><td>Asia Pacific</td><td>09:00&ndash;18:00, Monday to Saturday</td><td>English, Japanese</td></tr>
</tbody>
</table>
<h2 id="limits">Limits</h2>
<ul>
<li>Each workspace can hold up to <b>500</b> API keys.</li>
<li>Webhook payloads are capped at 256&nbsp;KB.
  <ul>
  <li>Larger events are sent as a link that stays valid for 24 hours.</li>
  </ul>
</li>
<li>Audit logs are kept for <span class="price">400 days</span> on the Scale plan.</li>
</ul>
<ol>
<li>Open <i>Settings</i>.</li>
<li>Choose <i>API keys</i> and press <b>Rotate</b>.</li>
</ol>
<h2 id="cli">Checking usage from the command line</h2>
<pre>
$ nw usage --month 2024-04
  workspace        api_calls
  acme-prod        4,812,330

  acme-staging       118,902


total              4,931,232
</pre>
<h2 id="contact">Postal address</h2>
<p>Northwind Cloud Inc.<br>410 Harbor Street<br>Portland, OR 97209<br>United States</p>
</main>
</body>
</html>
"""

LEGACY_1252_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="windows-1252">
<title>Northwind Cloud Europe \u2013 Reseller Notice</title>
</head>
<body>
<h1>Reseller notice for Germany, Austria and Switzerland</h1>
<p>This page was exported from the old partner portal in 2011 and is kept for reference.</p>
<p>The reseller margin for M\u00fcller und S\u00f6hne GmbH is fixed at 18 percent until 31 December 2025.
The Team bundle costs \u20ac29 per seat per month; the \u201cPlus\u201d bundle costs \u20ac49.</p>
<p>Orders placed through the Stra\u00dfburger Stra\u00dfe office in Berlin are invoiced in euros \u2013
never in Swiss francs \u2014 and ship with a printed caf\u00e9-style quick-start card.</p>
<p>Contact: Ren\u00e9 Gr\u00fcnwald, partner desk, 09:00\u201317:00 CET.</p>
</body>
</html>
"""

NO_CHARSET_HTML = """\
<HTML>
<HEAD>
<TITLE>Northwind Cloud Partner Directory</TITLE>
</HEAD>
<BODY BGCOLOR="#FFFFFF" TEXT="#000000">
<H1>Partner Directory</H1>
<P>This directory lists certified implementation partners as of April 2019.
<P><FONT FACE="Verdana" SIZE="2" COLOR="#333366">Our partner in Lyon runs a naïve café, €42 per seat per month for the Starter bundle.</FONT>
<P>Partners by country:
<UL>
<LI>France: Brasserie Numérique SARL, Lyon
<LI>Spain: Niño Sistemas S.L., Málaga
<LI>Denmark: Ærø Data ApS, Odense
</UL>
<P>To become a partner, complete the 12-hour certification and pass the exam with a score of 75 or more.
<HR>
<P><FONT SIZE="1">Page maintained by the alliances team.</FONT>
</BODY>
</HTML>
"""


def build_legacy_1252() -> bytes:
    data = LEGACY_1252_HTML.encode("cp1252")
    for byte in (b"\x93", b"\x94", b"\x96", b"\x97", b"\x80", b"\xe9", b"\xfc", b"\xdf"):
        if byte not in data:
            raise RuntimeError(f"web/legacy-1252.html: byte {byte!r} missing")
    return data


# ------------------------------------------------------------- Markdown and plain text

GETTING_STARTED_MD = """\
# Getting started with Northwind Cloud

This guide takes you from a new account to your first API call. It assumes you have
an account on the **Starter** plan or above and a terminal with `curl` installed.

## 1. Install the CLI

The `nw` command-line tool runs on Linux, macOS and Windows. Version 4.2 or later is
required for the commands below.

```bash
curl -fsSL https://get.northwind.example/install.sh | sh
nw --version
# nw 4.2.1 (build 2024-03-19)
```

## 2. Create a workspace

Run nw init --region eu-central to create your first workspace in under two minutes.
The region cannot be changed later, so pick the one closest to *your users*, not to
your developers.

- `eu-central` (Frankfurt) and `eu-west` (Dublin) keep data inside the EU.
- `us-east` (Virginia) and `us-west` (Oregon) serve North America.
- `ap-northeast` (Osaka) serves Japan and Korea.
  - Osaka workspaces are backed up to Tokyo every night.

## 3. Make your first API call

1. Create an API key with `nw keys create --name first-key`.
2. Export it: `export NW_API_KEY=nwk_live_...`.
3. Call the health endpoint:

   ```bash
   curl -H "Authorization: Bearer $NW_API_KEY" https://api.northwind.example/v2/health
   ```

A healthy workspace answers with `{"status": "ok"}` in about 40 milliseconds.

## Plans compared

| Plan       | API calls included | Seats     | Support  |
|------------|-------------------:|-----------|----------|
| Starter    |            250,000 | 5         | Basic    |
| Growth     |          5,000,000 | 25        | Priority |
| Scale      |         25,000,000 | 100       | Priority |
| Enterprise |             Custom | Unlimited | Premier  |

> Tip: new workspaces get a 14-day trial of the Growth plan's limits, whatever plan
> the account is on.

## Next steps

- Read the [API reference](https://docs.northwind.example/api/v2) and the
  [webhook guide](https://docs.northwind.example/webhooks).
- Join the community forum, where the developer relations team answers questions on
  weekdays.
- If something breaks, __do not__ rotate every key at once: rotate one, test it, then
  rotate the rest.
"""

RELEASE_NOTES_TXT = """\
NORTHWIND CLOUD RELEASE NOTES
=============================

Version 4.2.1 - 19 March 2024
Fixed a crash in "nw usage" when a workspace had no traffic in the selected month.
The Windows installer now adds nw.exe to the user PATH instead of the system PATH.

Version 4.2.0 - 12 March 2024
Version 4.2.0 was released on 12 March 2024 and raised the webhook retry limit from 5 to 8 attempts.
Retries now back off exponentially, starting at 30 seconds and capped at 1 hour.
The API gains a /v2/usage/daily endpoint; the older /v1/usage endpoint is deprecated
and will be removed on 30 September 2024.

Version 4.1.3 - 6 February 2024
Audit-log exports larger than 2 GB are now split into numbered parts.
Known issue: exports started before the upgrade must be restarted.

Version 4.1.0 - 9 January 2024
Added single sign-on with SAML 2.0 for the Scale plan (previously Enterprise only).
Café-style status badges were replaced by plain text labels — thanks to the 212
customers who answered the accessibility survey.

Support for TLS 1.0 and 1.1 ended with this release.
"""


class Dice:
    """Deterministic choices from SHA-256, independent of Python's `random` and its version.

    >>> Dice("x").pick(["a", "b"]) in ("a", "b")
    True
    """

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._rolls = 0

    def below(self, bound: int) -> int:
        self._rolls += 1
        digest = hashlib.sha256(f"{self._seed}:{self._rolls}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % bound

    def between(self, low: int, high: int) -> int:
        return low + self.below(high - low + 1)

    def pick(self, options: list[str] | tuple[str, ...]) -> str:
        return options[self.below(len(options))]


POLICY_TEAMS = ("Platform", "Identity", "Data Engineering", "Billing", "Customer Support",
                "Site Reliability", "Security Operations", "Finance Systems",
                "Developer Experience", "Compliance")
POLICY_SYSTEMS = ("Ledgerline", "the Atlas data warehouse", "the Harbor API gateway",
                  "the Beacon status service", "the Quill document store",
                  "the Meridian billing engine", "the Tern job scheduler",
                  "the Keystone identity service", "the Lumen analytics cluster")
POLICY_DATA = ("restricted", "confidential", "customer personal", "payment card", "internal")
POLICY_PEOPLE = (("Priya Raman", "Chief Information Security Officer"),
                 ("Tomás Herrera", "Head of Platform"),
                 ("Ingrid Solberg", "Data Protection Officer"),
                 ("Marcus Oyelaran", "VP Engineering"),
                 ("Hannah Kowalczyk", "Director of Compliance"),
                 ("Kenji Watanabe", "Head of Site Reliability"),
                 ("Aisha Bello", "Head of Customer Support"),
                 ("Lukas Brandt", "Finance Systems Lead"))
POLICY_REGIONS = ("eu-central (Frankfurt)", "us-east (Virginia)", "ap-northeast (Osaka)",
                  "eu-west (Dublin)", "us-west (Oregon)")
POLICY_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
                 "September", "October", "November", "December")
POLICY_TOOLS = ("Watchtower", "the Vaultkeeper secrets manager", "Sentinel", "Lookout")
POLICY_TEMPLATES = (
    "The {team} team reviews access to {system} every {review_days} days and removes "
    "accounts that have been idle for more than {idle_days} days.",
    "Requests to export {data} data from {system} must be approved by {person}, the "
    "{role}, within {small} business days.",
    "Backups of {system} are retained for {days} days in {region} and copied nightly to "
    "a second region.",
    "During {month}, the {team} team recorded {n} policy exceptions, of which {m} were "
    "closed within the agreed window.",
    "Encryption keys for {system} rotate every {days} days; a rotation that fails twice "
    "opens a severity-{sev} incident.",
    "No more than {patch_pct} percent of production hosts in {region} may be patched at "
    "once, so that capacity never falls below the agreed reserve.",
    "Contractors who handle {data} data complete the security course within {small} days "
    "of their start date.",
    "Where {system} stores {data} data, field-level masking hides all but the last {small} "
    "characters from support staff.",
    "{person} ({role}) owns this control and reports on it to the Security Council every "
    "quarter.",
    "An audit in {month} sampled {n} change tickets for {system} and found {m} without a "
    "linked review.",
    "Log entries from {system} are kept for {days} days and can be searched by the {team} "
    "team only.",
    "If a laptop holding {data} data is lost, its owner reports it to the service desk "
    "within {small} hours.",
    "Vendors that process {data} data sign the data processing addendum before their "
    "first invoice is paid.",
    "The recovery point objective for {system} is {rpo} minutes and the recovery time "
    "objective is {small} hours.",
    "Restore drills for {system} run every quarter; the drill in {month} restored {n} "
    "gigabytes in {small} hours.",
    "Privileged sessions on {system} are recorded, and the recordings are kept for {days} "
    "days.",
    "Changes to firewall rules in {region} need two approvals, one of them from the "
    "{team} team.",
    "Customer requests to delete {data} data are completed within {small} days and "
    "confirmed in writing.",
    "Staff may not copy {data} data to personal storage, removable media or unmanaged "
    "devices.",
    "Alerts from {tool} that stay unacknowledged for {small} minutes page the secondary "
    "on-call engineer.",
    "The {team} team keeps a register of {n} approved third-party libraries for {system}.",
    "A risk rated high needs a named owner and a remediation date no later than {days} "
    "days after it is logged.",
    "Test environments for {system} use synthetic data, and production {data} data is "
    "never copied into them.",
    "In {month}, {person} approved an exception that lets {system} keep audit logs in "
    "{region} for {days} days.",
    "Service-account passwords for {system} are at least {chars} characters long and are "
    "stored only in {tool}.",
    "Security training completion reached {pct} percent in {month}, against a target of "
    "95 percent.",
)
POLICY_SECTIONS = (
    ("Purpose and scope", ("Who this policy covers", "Systems in scope", "Exceptions")),
    ("Roles and responsibilities", ("Control owners", "The Security Council",
                                    "Managers and staff")),
    ("Data classification", ("Classification levels", "Labelling", "Handling rules")),
    ("Access control", ("Joiners, movers and leavers", "Privileged access",
                        "Access reviews")),
    ("Encryption and key management", ("Data at rest", "Data in transit", "Key rotation")),
    ("Logging and monitoring", ("What is logged", "Retention", "Alerting")),
    ("Backup and recovery", ("Backup schedule", "Restore testing", "Recovery objectives",
                             "Review history")),
    ("Change management", ("Standard changes", "Emergency changes", "Firewall changes")),
    ("Vendor management", ("Due diligence", "Contracts", "Ongoing review")),
    ("Incident response", ("Severity levels", "Communication", "Post-incident review")),
    ("Training and awareness", ("Mandatory courses", "Phishing exercises")),
    ("Review of this policy", ("Review cycle", "Version history")),
)
POLICY_FIXED_SENTENCES = {
    (7, 4): "Section 7.4 of this policy was last reviewed by the Security Council on 21 "
            "August 2024.",
    (1, 1): "This policy applies to all 612 employees and 48 long-term contractors of "
            "Northwind Cloud, in every country where the company operates.",
    (12, 2): "Version 3.0 of this policy replaced version 2.6 on 1 October 2024 after a "
             "consultation that collected 143 comments.",
}


def _policy_sentence(dice: Dice) -> str:
    person, role = POLICY_PEOPLE[dice.below(len(POLICY_PEOPLE))]
    n = dice.between(12, 480)
    slots = {
        "team": dice.pick(POLICY_TEAMS), "system": dice.pick(POLICY_SYSTEMS),
        "data": dice.pick(POLICY_DATA), "person": person, "role": role,
        "region": dice.pick(POLICY_REGIONS), "tool": dice.pick(POLICY_TOOLS),
        "month": f"{dice.pick(POLICY_MONTHS)} {dice.between(2022, 2024)}",
        "days": str(dice.pick(("7", "14", "30", "45", "60", "90", "180", "365", "400"))),
        "n": f"{n:,}", "m": str(dice.between(0, min(n, 9))), "small": str(dice.between(2, 10)),
        "pct": str(dice.between(81, 99)), "sev": str(dice.between(1, 3)),
        "patch_pct": str(dice.between(5, 25)), "idle_days": str(dice.between(30, 120)),
        "review_days": dice.pick(("30", "60", "90")),
        "rpo": str(dice.pick(("5", "15", "30", "60"))), "chars": str(dice.between(24, 64)),
    }
    sentence = dice.pick(POLICY_TEMPLATES).format(**slots)
    return sentence[0].upper() + sentence[1:]


def build_long_policy() -> str:
    dice = Dice("northwind-security-policy-v3")
    used: set[str] = set()

    def fresh_sentence() -> str:
        # A sentence that occurs twice would make a quote match ambiguous; roll again.
        while (sentence := _policy_sentence(dice)) in used:
            pass
        used.add(sentence)
        return sentence

    parts = [
        "# Northwind Cloud Information Security and Data Handling Policy\n",
        "Policy owner: Priya Raman, Chief Information Security Officer. Version 3.0, "
        "effective 1 October 2024. Classification: internal.\n",
    ]
    for section_number, (title, subsections) in enumerate(POLICY_SECTIONS, start=1):
        parts.append(f"## {section_number}. {title}\n")
        for sub_number, subtitle in enumerate(subsections, start=1):
            parts.append(f"### {section_number}.{sub_number} {subtitle}\n")
            for paragraph_index in range(dice.between(1, 2)):
                sentences = [fresh_sentence() for _ in range(dice.between(4, 6))]
                fixed = POLICY_FIXED_SENTENCES.get((section_number, sub_number))
                if fixed and paragraph_index == 0:
                    sentences.insert(1, fixed)
                parts.append(" ".join(sentences) + "\n")
            if dice.below(4) == 0:
                parts.append("\n".join(f"- {fresh_sentence()}" for _ in range(3)) + "\n")
    return "\n".join(parts)


# ----------------------------------------------------------------------------- bad input

ENCRYPTED_TEXT = [
    "Salary bands 2024 (restricted)",
    "This salary band table is encrypted and must never be indexed.",
    "Band L4: $142,000 to $171,000. Band L5: $168,000 to $204,000.",
]


def _encrypted_plain_doc() -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=LETTER[0], height=LETTER[1])
    for index, line in enumerate(ENCRYPTED_TEXT):
        put_text(page, 72, 90 + 20 * index, line, HELV, 11)
    return doc


def _page_texts(doc: pymupdf.Document) -> list[str]:
    return [page.get_text() for page in doc]


def build_encrypted(existing: bytes | None) -> bytes:
    """AES-256 with user password "secret"; an existing file that still fits is kept.

    MuPDF draws random salts and IVs on every encrypted save, so rewriting would change
    the bytes on every run for no reason.
    """
    expected = _page_texts(_encrypted_plain_doc())
    if existing:
        try:
            old = pymupdf.open("pdf", existing)
        except pymupdf.FileDataError:
            old = None
        if (old is not None and old.needs_pass and old.authenticate("secret")
                and "AES" in (old.metadata or {}).get("encryption", "")
                and "256" in old.metadata["encryption"] and _page_texts(old) == expected):
            return existing
    doc = _encrypted_plain_doc()
    return pdf_bytes(doc, "Salary bands 2024", "Restricted", encryption=pymupdf.PDF_ENCRYPT_AES_256,
                     user_pw="secret", owner_pw="owner")


def build_truncated() -> bytes:
    doc = pymupdf.open()
    flow = PageFlow(doc, LETTER, [(72, 540)], top=72, bottom=720)
    flow.block("Northwind Cloud Capacity Forecast 2025 (export interrupted)", HELV_BOLD, 14, 20,
               space_after=8)
    for month in ("January", "February", "March", "April", "May", "June"):
        if month != "January":
            flow.new_page()
        flow.block(f"Forecast for {month} 2025: the Osaka region needs 18 more storage "
                   f"hosts and 6 more API hosts to keep 35 percent headroom at peak.",
                   HELV, 11, 15, space_after=6)
    flow.close()
    whole = pdf_bytes(doc, "Capacity Forecast 2025", "Truncated on purpose")
    return whole[: len(whole) * 2 // 5]


def build_junk() -> bytes:
    block = hashlib.sha256(b"northwind-junk").digest()
    junk = bytearray()
    while len(junk) < 2048:
        block = hashlib.sha256(block).digest()
        junk += block
    for position in range(0, 2048, 61):
        junk[position] = 0
    return bytes(junk[:2048])


UNSUPPORTED_XYZ = (
    b"NWXYZ\x01\x00\x02"
    b"Northwind Cloud workspace snapshot, format 2 (proprietary; no parser exists).\n"
    b"workspace=acme-prod region=eu-central taken=2024-04-30T23:00:00Z\n"
)


# --------------------------------------------------------------------------------- main

README_LINES = [
    ("pricing/rate-card.pdf", "4-page Letter PDF in base-14 Helvetica: title metadata, "
     "page labels (cover i, then 1-3), headings, a table of contents and price tables drawn "
     "as text lines between rules, a repeated footer."),
    ("handbook/two-column.pdf", "3-page A4 PDF in two columns (left column first in the "
     "content stream), embedded DejaVu Serif subset, ligature characters U+FB00 to U+FB04"
     " in the text layer, words hyphenated at line ends, curly quotes, em dashes."),
    ("reports/rotated-and-scanned.pdf", "4 pages: a normal page; a /Rotate 90 page with "
     "text upright in landscape; a scanned page that is only an image, with no text layer; "
     "a page whose crop box is smaller than its media box."),
    ("intl/multilingual.pdf", "2 pages: HTML-laid-out German, Greek, Russian, Korean, and "
     "shaped right-to-left Arabic and Hebrew (Arabic extracts as presentation forms); then "
     "Chinese and Japanese in PyMuPDF's built-in, non-embedded CJK fonts."),
    ("web/faq.html", "UTF-8 HTML: title, named and numeric entities, nested inline tags, a "
     "word split across tags, script (with a closing div tag inside a string), style, "
     "comment, hidden and display:none elements that must not be indexed, table, nested "
     "lists, pre block with blank lines, br line breaks."),
    ("web/legacy-1252.html", "windows-1252 bytes declared by meta charset: curly quotes "
     "0x93/0x94, dashes 0x96/0x97, euro 0x80, e-acute, u-umlaut, sharp s."),
    ("web/no-charset.html", "UTF-8 bytes with no charset declaration; uppercase tags, "
     "unclosed P and LI, a FONT tag."),
    ("docs/getting-started.md", "Markdown with LF line endings: headings, nested lists, "
     "fenced code blocks (one inside a list), a table, a blockquote, links, emphasis."),
    ("docs/release-notes.txt", "Plain UTF-8 text with CRLF line endings, version numbers "
     "and dates."),
    ("docs/long-policy.md", "30-40 KB of Markdown generated from seeded templates, for "
     "chunking-stability benchmarks."),
    ("bad/truncated.pdf", "The first 40% of the bytes of a valid 6-page PDF, cut inside "
     "an object, no xref or trailer; PyMuPDF refuses to open it. Must fail cleanly."),
    ("bad/encrypted.pdf", "AES-256 PDF with a user password: must fail cleanly, never be "
     "indexed."),
    ("bad/empty.txt", "Zero bytes."),
    ("bad/junk.html", "2 KB of pseudo-random binary bytes, with NULs, named .html."),
    ("bad/unsupported.xyz", "A file of an unknown type: the indexer skips it."),
    ("README.md", "This list (itself plain Markdown)."),
]


def build_readme() -> str:
    lines = [
        "# sample_corpus",
        "",
        "Generated by `scripts/make_sample_corpus.py`; do not edit by hand, rerun the script.",
        "Northwind Cloud is an invented company. One line per file, saying what it exercises:",
        "",
    ]
    lines += [f"- `{path}`: {purpose}" for path, purpose in README_LINES]
    return "\n".join(lines) + "\n"


def build_corpus(existing: Callable[[str], bytes | None]) -> dict[str, bytes]:
    """Every owned file of the corpus, relative path to bytes."""
    files = {
        "pricing/rate-card.pdf": build_rate_card(),
        "handbook/two-column.pdf": build_handbook(),
        "reports/rotated-and-scanned.pdf": build_report(),
        "intl/multilingual.pdf": build_multilingual(),
        "web/faq.html": FAQ_HTML.encode("utf-8"),
        "web/legacy-1252.html": build_legacy_1252(),
        "web/no-charset.html": NO_CHARSET_HTML.encode("utf-8"),
        "docs/getting-started.md": GETTING_STARTED_MD.encode("utf-8"),
        "docs/release-notes.txt": RELEASE_NOTES_TXT.replace("\n", "\r\n").encode("utf-8"),
        "docs/long-policy.md": build_long_policy().encode("utf-8"),
        "bad/truncated.pdf": build_truncated(),
        "bad/encrypted.pdf": build_encrypted(existing("bad/encrypted.pdf")),
        "bad/empty.txt": b"",
        "bad/junk.html": build_junk(),
        "bad/unsupported.xyz": UNSUPPORTED_XYZ,
        "README.md": build_readme().encode("utf-8"),
    }
    if sorted(files) != sorted(path for path, _ in README_LINES):
        raise RuntimeError("README_LINES and the generated files are out of step")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Example: .venv/bin/python "
                                            "scripts/make_sample_corpus.py --out /tmp/corpus")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "sample_corpus",
                        help="corpus folder (default: sample_corpus/ in the repository)")
    args = parser.parse_args(argv)
    out: Path = args.out

    def existing(relative: str) -> bytes | None:
        path = out / relative
        return path.read_bytes() if path.is_file() else None

    files = build_corpus(existing)
    total = 0
    for relative, data in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.write_bytes(data)
        total += len(data)
        print(f"{len(data):>9,}  {relative}")
    print(f"{total:>9,}  total bytes in {len(files)} files under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
