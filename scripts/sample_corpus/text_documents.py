"""Writers for the HTML, Markdown and plain-text files, each returning the file's content.

They fix what the corpus tests about each file: the encoding (UTF-8, or windows-1252 for the
legacy page), the line endings (CRLF for the release notes), and for docs/long-policy.md a
30-40 KB policy generated from seeded templates by `Dice`, which is deterministic across
Python versions. The words themselves live in `content_text`.
"""

from __future__ import annotations

import hashlib

from .checks import check_contains_bytes
from .content_text import (
    FAQ_HTML,
    GETTING_STARTED_MD,
    LEGACY_1252_HTML,
    NO_CHARSET_HTML,
    POLICY_DATA,
    POLICY_FIXED_SENTENCES,
    POLICY_MONTHS,
    POLICY_PEOPLE,
    POLICY_REGIONS,
    POLICY_SECTIONS,
    POLICY_SYSTEMS,
    POLICY_TEAMS,
    POLICY_TEMPLATES,
    POLICY_TOOLS,
    RELEASE_NOTES_TXT,
)

# ------------------------------------------------------------------------ HTML pages

def build_faq() -> bytes:
    return FAQ_HTML.encode("utf-8")


def build_legacy_1252() -> bytes:
    data = LEGACY_1252_HTML.encode("cp1252")
    # The page exists to carry these bytes (curly quotes, dashes, euro, accented letters);
    # an edit to the text must not quietly drop one.
    check_contains_bytes(data, (b"\x93", b"\x94", b"\x96", b"\x97", b"\x80", b"\xe9", b"\xfc",
                                b"\xdf"), "web/legacy-1252.html")
    return data


def build_no_charset() -> bytes:
    # UTF-8 bytes with no charset declaration: the parser has to detect the encoding.
    return NO_CHARSET_HTML.encode("utf-8")


# ------------------------------------------------------------- Markdown and plain text

def build_getting_started() -> bytes:
    return GETTING_STARTED_MD.encode("utf-8")


def build_release_notes() -> bytes:
    # CRLF line endings on purpose: the corpus has to exercise CRLF text.
    return RELEASE_NOTES_TXT.replace("\n", "\r\n").encode("utf-8")


# ----------------------------------------------------------------- docs/long-policy.md

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
