"""An answer as the viewer shows it: its claims in order, each with its numbered citation markers.

The self-contained report (``index.viewer.report``) and the server's verify page
render the same ``AnswerView``s with the same templates; ``Links`` says where
each finds what the page does not carry itself (page images, original files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from index.citations.verify import summarize
from index.viewer.source_views import PageView, SourceView, ViewBuilder
from schemas.citations import Citation, ClaimRecord, ClaimVerdict, VerifySummary


class ClaimState(StrEnum):
    VERIFIED = "verified"
    UNVERIFIED = "unverified"
    ABSTENTION = "abstention"  # no support given: the model said it had no source
    DROPPED = "dropped"  # removed from the answer by policy
    INVALID = "invalid"


_BADGES = {
    ClaimState.VERIFIED: "",
    ClaimState.UNVERIFIED: "unverified",
    ClaimState.ABSTENTION: "abstention: no source given",
    ClaimState.DROPPED: "dropped by policy",
    ClaimState.INVALID: "invalid",
}


@dataclass(frozen=True, slots=True)
class Marker:
    """One citation of one claim: its number in the answer, popup text and source view."""

    number: int
    key: str  # the id of its view in the panel
    citation: Citation
    view: SourceView

    @property
    def verified(self) -> bool:
        return self.citation.status.verified

    @property
    def quote(self) -> str:
        return self.citation.quote if self.verified else self.citation.model_quote


@dataclass(frozen=True, slots=True)
class ClaimView:
    record: ClaimRecord
    state: ClaimState
    badge: str
    markers: tuple[Marker, ...]

    @property
    def failures(self) -> tuple[Marker, ...]:
        return tuple(m for m in self.markers if not m.verified)


@dataclass(frozen=True, slots=True)
class AnswerView:
    answer_id: str
    claims: tuple[ClaimView, ...]
    summary: VerifySummary


@dataclass(frozen=True, slots=True)
class Links:
    """Where the page finds what it does not carry itself."""

    page_image: Callable[[PageView], tuple[str, str]]  # (attribute, value) for the <img>
    source_file: Callable[[str, int | None], str]  # the original file (PDF: at #page=N); "" for none
    live_page: Callable[[str, str], str] | None = None  # (doc_id, locator) -> a page that honours it
    chunk: Callable[[str], str] | None = None  # chunk id -> its inspector
    shared_html: Callable[[str], str] | None = None  # doc_id -> key of the one marked copy of its page


_VERDICT_STATES = {
    ClaimVerdict.VERIFIED: ClaimState.VERIFIED,
    ClaimVerdict.UNVERIFIED: ClaimState.UNVERIFIED,
    ClaimVerdict.UNSUPPORTED: ClaimState.ABSTENTION,
    ClaimVerdict.INVALID: ClaimState.INVALID,
}


def claim_state(record: ClaimRecord) -> ClaimState:
    return ClaimState.DROPPED if record.dropped else _VERDICT_STATES[record.verdict]


def answer_views(records: Iterable[ClaimRecord], views: ViewBuilder) -> list[AnswerView]:
    """Records grouped by answer, in order; citations numbered through each answer."""
    grouped: dict[str, list[ClaimRecord]] = {}
    for record in records:
        grouped.setdefault(record.answer_id, []).append(record)
    answers = []
    for a, (answer_id, answer_records) in enumerate(grouped.items()):
        number, claims = 0, []
        for record in answer_records:
            markers = []
            for citation in record.citations:
                number += 1
                markers.append(Marker(number, f"a{a}-c{number}", citation, views.citation(citation)))
            state = claim_state(record)
            badge = _BADGES[state]
            if record.dropped:  # and what it was before the policy removed it
                badge += " · " + (_BADGES[_VERDICT_STATES[record.verdict]] or "verified")
            claims.append(ClaimView(record, state, badge, tuple(markers)))
        answers.append(AnswerView(answer_id, tuple(claims), summarize(answer_records)))
    return answers


def page_views(answers: Iterable[AnswerView]) -> list[PageView]:
    """Every page a report shows, once each."""
    seen: dict[tuple[str, int], PageView] = {}
    for answer in answers:
        for claim in answer.claims:
            for marker in claim.markers:
                for page in marker.view.pages:
                    seen.setdefault((page.doc_id, page.page), page)
    return list(seen.values())
