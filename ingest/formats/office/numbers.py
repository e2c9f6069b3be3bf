"""A cell's number as Excel displays it under its number format (en-US conventions).

Covers the built-in formats and the common custom ones: digit placeholders (0 # ?), thousands
separators and scaling commas, percent, scientific, simple fractions, literal text (quoted,
escaped, ``_x`` spaces), colours and locale tags (ignored), sections for positive;negative;zero,
and dates and times (y m d h s, AM/PM, elapsed [h] [m] [s], fractions of seconds) from the 1900
or 1904 date system. General shows at most 11 characters, as in a column of standard width.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

BUILTIN = {
    0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00", 5: '"$"#,##0_);("$"#,##0)',
    6: '"$"#,##0_);[Red]("$"#,##0)', 7: '"$"#,##0.00_);("$"#,##0.00)', 8: '"$"#,##0.00_);[Red]("$"#,##0.00)',
    9: "0%", 10: "0.00%", 11: "0.00E+00", 12: "# ?/?", 13: "# ??/??", 14: "m/d/yyyy", 15: "d-mmm-yy",
    16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM", 19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss",
    22: "m/d/yyyy h:mm", 37: "#,##0 ;(#,##0)", 38: "#,##0 ;[Red](#,##0)", 39: "#,##0.00;(#,##0.00)",
    40: "#,##0.00;[Red](#,##0.00)", 41: '_(* #,##0_);_(* (#,##0);_(* "-"_);_(@_)',
    42: '_("$"* #,##0_);_("$"* (#,##0);_("$"* "-"_);_(@_)',
    43: '_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)',
    44: '_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_);_(@_)',
    45: "mm:ss", 46: "[h]:mm:ss", 47: "mm:ss.0", 48: "##0.0E+0", 49: "@",
}
_TOKEN = re.compile(r'"[^"]*"|\\.|_.|\*.|\[[^\]]*\]|AM/PM|am/pm|A/P|a/p|[eE][+-]|[yY]+|[mM]+|[dD]+|[hH]+|[sS]+|'
                    r"General|.", re.S)
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def format_value(value: float, code: str, date1904: bool = False) -> str:
    """``value`` under the number format ``code``.

    >>> format_value(0.5, "0.0%"), format_value(45658, "yyyy-mm-dd"), format_value(1234.5, "#,##0.00")
    ('50.0%', '2025-01-01', '1,234.50')
    >>> format_value(-3, '0;(0)'), format_value(1/3, "General"), format_value(45658.75, "m/d/yyyy h:mm AM/PM")
    ('(3)', '0.333333333', '1/1/2025 6:00 PM')
    """
    sections = _sections(code)
    if value < 0 and len(sections) >= 2 and sections[1]:
        section, value = sections[1], -value  # the negative section shows the magnitude
    elif value == 0 and len(sections) >= 3:
        section = sections[2]
    else:
        section = sections[0]
    tokens = _TOKEN.findall(section)
    if any(t.lower() == "general" for t in tokens):
        return "".join(general(value) if t.lower() == "general" else _literal(t) for t in tokens)
    if _is_date(tokens):
        return _date(value, tokens, date1904)
    return _number(value, tokens)


def general(value: float) -> str:
    """Excel's General: the shortest form that fits 11 characters.

    >>> general(42.0), general(0.1), general(1234567890123.0), general(2/3), general(1e-12)
    ('42', '0.1', '1.23457E+12', '0.666666667', '1E-12')
    """
    if value == 0:
        return "0"
    if value == int(value) and abs(value) < 1e11:
        return str(int(value))
    text = repr(value)
    if "e" not in text and len(text) <= 11:
        return text
    if 1e-9 <= abs(value) < 1e11:
        width = 11 - (1 if value < 0 else 0)
        digits = len(str(int(abs(value))))
        text = f"{value:.{max(width - digits - 1, 0)}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        if text not in ("0", "-0"):
            return text
    for precision in range(5, -1, -1):
        mantissa, exponent = f"{value:.{precision}E}".split("E")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        text = f"{mantissa}E{exponent[0]}{int(exponent[1:]):02d}"
        if len(text) <= 11:
            return text
    return text


def _sections(code: str) -> list[str]:
    sections, current, quoted, bracket = [], [], False, False
    for ch in code:
        if ch == '"' and not bracket:
            quoted = not quoted
        elif ch == "[" and not quoted:
            bracket = True
        elif ch == "]" and not quoted:
            bracket = False
        if ch == ";" and not quoted and not bracket:
            sections.append("".join(current))
            current = []
        else:
            current.append(ch)
    sections.append("".join(current))
    return sections


def _is_date(tokens: list[str]) -> bool:
    return any(t[0] in "yYmMdDhHsS" for t in tokens if t[0] not in '"\\_*[') or any(t.lower() in ("[h]", "[hh]", "[m]", "[mm]", "[s]", "[ss]") for t in tokens)


def _literal(token: str) -> str:
    if token.startswith('"'):
        return token[1:-1]
    if token.startswith("\\"):
        return token[1:]
    if token.startswith("_"):
        return " "  # the width of the next character: a space does
    if token.startswith("*") or token.startswith("["):
        return _currency(token) if token.startswith("[$") else ""
    return token


def _currency(token: str) -> str:
    return token[2:-1].split("-")[0]  # "[$€-407]" -> "€"; "[$-409]" (a locale alone) -> ""


def _number(value: float, tokens: list[str]) -> str:
    placeholders = [i for i, t in enumerate(tokens) if t in ("0", "#", "?")]
    if not placeholders:
        return "".join(_literal(t) if t != "@" else general(value) for t in tokens)
    first, last = placeholders[0], placeholders[-1]
    body = tokens[first:last + 1]
    prefix = "".join(_literal(t) for t in tokens[:first] if t != "%")
    suffix = "".join(_literal(t) for t in tokens[last + 1:] if t != ",")
    scale = 100 ** sum(1 for t in tokens if t == "%")
    trailing_commas = 0
    for t in tokens[last + 1:]:
        if t != ",":
            break
        trailing_commas += 1
    value = value * scale / 1000 ** trailing_commas
    negative = value < 0
    value = abs(value)
    if "/" in body:
        text = _fraction(value, body)
    elif any(t.lower() in ("e+", "e-") for t in body):
        text = _scientific(value, body)
    else:
        text = _fixed(value, body)
    sign = "-" if negative and any(ch in "123456789" for ch in text) else ""  # Excel shows no "-0.00"
    return sign + prefix + text + suffix


def _fixed(value: float, body: list[str]) -> str:
    point = body.index(".") if "." in body else len(body)
    integer_part, decimal_part = body[:point], [t for t in body[point + 1:] if t in ("0", "#", "?")]
    grouping = "," in integer_part
    # Excel rounds half away from zero, on the decimal digits it stores (repr), not the binary value
    rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-len(decimal_part)), ROUND_HALF_UP)
    whole_text, _, fraction_digits = f"{rounded:f}".partition(".")
    whole = int(whole_text)
    if any(t not in ("0", "#", "?", ",") for t in integer_part):  # literals among the digits: "000-0000"
        integer_text = _fill_from_right(whole, integer_part)
    else:
        integer_text = _fill_integer(whole, [t for t in integer_part if t != ","], grouping)
    if not decimal_part:
        return integer_text + ("." if "." in body else "")
    decimals = list(fraction_digits)
    for i in range(len(decimal_part) - 1, -1, -1):  # optional trailing places drop their zeros
        if decimals[i] == "0" and decimal_part[i] in ("#", "?"):
            decimals[i] = "" if decimal_part[i] == "#" else " "
        else:
            break
    return integer_text + "." + "".join(decimals)


def _fill_integer(whole: int, placeholders: list[str], grouping: bool) -> str:
    digits = str(whole) if whole else ""
    minimum = "".join(placeholders).lstrip("#")  # 0 and ? places always show
    if len(digits) < len(minimum):
        pad = minimum[:len(minimum) - len(digits)]
        digits = pad.replace("?", " ") + digits
    text = digits
    if grouping and text.strip():
        core = text.lstrip(" ")
        text = text[:len(text) - len(core)] + f"{int(core):,}" if core.isdigit() else text
    return text


def _fill_from_right(whole: int, places: list[str]) -> str:
    digits = str(whole) if whole else ""
    out, left = [], len(digits)
    for token in reversed(places):
        if token in ("0", "#", "?"):
            if left:
                out.append(digits[left - 1])
                left -= 1
            else:
                out.append({"0": "0", "?": " "}.get(token, ""))
        elif token != ",":
            out.append(_literal(token))
    return digits[:left] + "".join(reversed(out))  # digits beyond the places go in front


def _scientific(value: float, body: list[str]) -> str:
    e_at = next(i for i, t in enumerate(body) if t.lower() in ("e+", "e-"))
    mantissa_part, exponent_part = body[:e_at], body[e_at + 1:]
    point = mantissa_part.index(".") if "." in mantissa_part else len(mantissa_part)
    decimals = sum(1 for t in mantissa_part[point + 1:] if t in ("0", "#", "?"))
    integer_places = max(sum(1 for t in mantissa_part[:point] if t in ("0", "#", "?")), 1)
    exponent = 0 if value == 0 else math.floor(math.log10(value))
    exponent -= exponent % integer_places if integer_places > 1 else 0  # engineering: ##0.0E+0
    mantissa = value / 10 ** exponent if value else 0.0
    text = f"{mantissa:.{decimals}f}"
    sign = "-" if exponent < 0 else ("+" if body[e_at][1] == "+" else "")
    width = sum(1 for t in exponent_part if t in ("0", "#", "?"))
    return f"{text}{body[e_at][0].upper()}{sign}{abs(exponent):0{width}d}"


def _fraction(value: float, body: list[str]) -> str:
    slash = body.index("/")
    denominator_places = sum(1 for t in body[slash + 1:] if t in ("0", "#", "?"))
    whole_part = " " in body[:slash] or body[:slash].count("#") + body[:slash].count("0") > 1
    whole = int(value) if whole_part else 0
    fraction = Fraction(value - whole).limit_denominator(10 ** max(denominator_places, 1) - 1)
    if fraction == 1:
        whole, fraction = whole + 1, Fraction(0)
    if fraction == 0:
        return str(whole)
    head = f"{whole} " if whole else ""
    return f"{head}{fraction.numerator}/{fraction.denominator}"


def _date(value: float, tokens: list[str], date1904: bool) -> str:
    moment = _datetime(value, date1904)
    twelve = any(t.lower() in ("am/pm", "a/p") for t in tokens)
    out = []
    for i, token in enumerate(tokens):
        lower = token.lower()
        if lower.startswith("y"):
            out.append(str(moment.year) if len(token) > 2 else f"{moment.year % 100:02d}")
        elif lower.startswith("m") and _is_minute(tokens, i):
            out.append(f"{moment.minute:02d}" if len(token) > 1 else str(moment.minute))
        elif lower.startswith("m"):
            out.append(_month(moment.month, len(token)))
        elif lower.startswith("d"):
            out.append(_day(moment, len(token)))
        elif lower.startswith("h"):
            hour = moment.hour % 12 or 12 if twelve else moment.hour
            out.append(f"{hour:02d}" if len(token) > 1 else str(hour))
        elif lower.startswith("s"):
            out.append(f"{moment.second:02d}" if len(token) > 1 else str(moment.second))
        elif lower in ("am/pm", "a/p"):
            text = "AM" if moment.hour < 12 else "PM"
            out.append(text if lower == "am/pm" else text[0].lower() if token[0].islower() else text[0])
        elif lower in ("[h]", "[hh]"):
            out.append(str(int(round(value * 86400)) // 3600))
        elif lower in ("[m]", "[mm]"):
            out.append(str(int(round(value * 86400)) // 60))
        elif lower in ("[s]", "[ss]"):
            out.append(str(int(round(value * 86400))))
        elif token == "0" and out and out[-1] == ".":  # fractions of a second: "ss.0"
            out.append(str(moment.microsecond // 100000))
        else:
            out.append(_literal(token))
    return "".join(out)


def _is_minute(tokens: list[str], i: int) -> bool:
    """An "m" right after an hour or right before a second is a minute."""
    before = next((t.lower() for t in reversed(tokens[:i]) if t[0].lower() in "ymdhs" or t.startswith("[")), "")
    after = next((t.lower() for t in tokens[i + 1:] if t[0].lower() in "ymdhs" or t.startswith("[")), "")
    return before.startswith(("h", "[h")) or after.startswith(("s", "[s"))


def _month(month: int, width: int) -> str:
    name = _MONTHS[month - 1]
    return {1: str(month), 2: f"{month:02d}", 3: name[:3], 5: name[0]}.get(width, name)


def _day(moment: datetime, width: int) -> str:
    name = _DAYS[moment.weekday()]
    return {1: str(moment.day), 2: f"{moment.day:02d}", 3: name[:3]}.get(width, name)


def _datetime(value: float, date1904: bool) -> datetime:
    if date1904:
        base = datetime(1904, 1, 1)
    elif value < 60:  # Excel counts a 29 February 1900 that never was: serials below it start a day later
        base = datetime(1899, 12, 31)
    else:
        base = datetime(1899, 12, 30)
    seconds = round(value * 86400 * 10) / 10  # Excel shows times rounded to tenths of a second
    return base + timedelta(seconds=seconds)
