"""A document's own date as its format writes it, as ISO 8601 (UTC where a time is given).

PDF writes ``D:YYYYMMDDHHmmSSOHH'mm'`` (PDF 32000-1, 7.9.4: every part after the year may be
left out; O is ``+``, ``-`` or ``Z``), HTML ``article:published_time`` and ``<time datetime>``
ISO 8601, office core properties W3CDTF (ISO 8601's profile). A date with a time becomes
``YYYY-MM-DDTHH:MM:SSZ`` in UTC (a time without a zone is read as UTC, as PDF's spec says
of a missing offset); a date alone stays a date (``2024-03-01``, ``2024-03``, ``2024``), so
text comparison orders them (``created >= '2024'``). Anything else is None: no date is guessed.
"""

from __future__ import annotations

import datetime as dt
import re

_PDF = re.compile(r"D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(?:([Zz+-])(\d{2})?'?(\d{2})?'?)?\s*$")
_ISO = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?"
                  r"\s*(?:([Zz])|([+-])(\d{2}):?(\d{2})?)?)?)?)?$")


def iso_date(raw: str | None) -> str | None:
    """``raw`` (a PDF date or ISO 8601) as ISO 8601, UTC where it has a time; None if it is neither.

    >>> iso_date("D:20230704153000+02'00'"), iso_date("D:2021"), iso_date("2024-03-01T09:30:00-05:00")
    ('2023-07-04T13:30:00Z', '2021', '2024-03-01T14:30:00Z')
    >>> iso_date("2024-03-01"), iso_date("2024-13-01"), iso_date("last Tuesday")
    ('2024-03-01', None, None)
    """
    if not raw:
        return None
    text = raw.strip()
    pdf = _PDF.match(text)
    if pdf:
        year, month, day, hour, minute, second, sign, off_h, off_m = pdf.groups()
        zone = None if sign is None else ("Z" if sign in "Zz" else sign)
        return _assemble(year, month, day, hour, minute, second, zone, off_h, off_m)
    iso = _ISO.match(text)
    if iso:
        year, month, day, hour, minute, second, zulu, sign, off_h, off_m = iso.groups()
        return _assemble(year, month, day, hour, minute, second, "Z" if zulu else sign, off_h, off_m)
    return None


def _assemble(year, month, day, hour, minute, second, zone, off_h, off_m) -> str | None:
    try:
        if hour is None:  # a date alone (or a year and month, or a year): kept as precise as it is
            parts = [int(year), int(month or 1), int(day or 1)]
            dt.date(*parts)  # checked, not changed
            return "-".join(p for p in (year, month, day) if p)
        offset = dt.timedelta(hours=int(off_h or 0), minutes=int(off_m or 0))
        if zone == "-":
            offset = -offset
        moment = dt.datetime(int(year), int(month or 1), int(day or 1), int(hour), int(minute or 0),
                             int(second or 0), tzinfo=dt.timezone(offset))
    except ValueError:
        return None
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
