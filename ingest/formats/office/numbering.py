"""DOCX list numbering: the labels ("3.2", "a)", "•") Word draws before numbered paragraphs.

A label is generated text, never in the XML: it becomes a synthetic run. Counters follow
Word's model in the common cases: one set of counters per abstract numbering (lists that share
one continue each other) unless a numbering instance overrides a level's start, a level
restarts when a higher level advances, and ``%2`` in a level's text is level 2's counter in
that level's format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest.formats.office.xml_positions import Element

# Symbol and Wingdings bullets are private-use code points; show what the font draws.
SYMBOL_BULLETS = {"\uf0b7": "\u2022", "\uf0a7": "\u25aa", "\uf0a8": "\u25aa", "\uf0d8": "\u27a2", "\uf076": "\u2756",
            "\uf0fc": "\u2713", "\uf06e": "\u25a0", "\uf0e0": "\u27a2", "\uf02d": "-", "\uf0be": "\u2014"}
_SUFFIX = {"tab": "\t", "space": " ", "nothing": ""}


@dataclass(frozen=True, slots=True)
class Level:
    start: int = 1
    fmt: str = "decimal"  # w:numFmt
    text: str = "%1."  # w:lvlText
    suffix: str = "\t"
    restart_after: int | None = None  # w:lvlRestart: restart when this level (1-based) advances; 0 never


@dataclass(slots=True)
class Numbering:
    """numbering.xml read: levels by abstract numbering, and the numbering instances."""

    abstract: dict[str, dict[int, Level]] = field(default_factory=dict)
    instances: dict[str, tuple[str, dict[int, int]]] = field(default_factory=dict)  # numId -> (abstractId, start overrides)
    _counters: dict[str, dict[int, int]] = field(default_factory=dict)
    _started: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, root: Element | None) -> Numbering:
        numbering = cls()
        if root is None:
            return numbering
        for abstract in root.children_named("w:abstractNum"):
            levels = {}
            for lvl in abstract.children_named("w:lvl"):
                levels[_int(lvl.attrs.get("w:ilvl"), 0)] = _level(lvl)
            numbering.abstract[abstract.attrs.get("w:abstractNumId", "")] = levels
        for num in root.children_named("w:num"):
            abstract_id = _val(num.child("w:abstractNumId")) or ""
            overrides = {}
            for override in num.children_named("w:lvlOverride"):
                start = _val(override.child("w:startOverride"))
                if start is not None:
                    overrides[_int(override.attrs.get("w:ilvl"), 0)] = _int(start, 1)
            numbering.instances[num.attrs.get("w:numId", "")] = (abstract_id, overrides)
        return numbering

    def label(self, num_id: str, ilvl: int) -> str:
        """The label of the next paragraph of list ``num_id`` at level ``ilvl`` (counting it).

        >>> n = Numbering({"0": {0: Level(), 1: Level(fmt="lowerLetter", text="%2)", suffix=" ")}},
        ...               {"5": ("0", {})})
        >>> [n.label("5", 0), n.label("5", 1), n.label("5", 1), n.label("5", 0), n.label("5", 1)]
        ['1.\\t', 'a) ', 'b) ', '2.\\t', 'a) ']
        """
        if num_id not in self.instances:
            return ""
        abstract_id, overrides = self.instances[num_id]
        levels = self.abstract.get(abstract_id, {})
        if ilvl not in levels:
            return ""
        # A numbering instance that overrides a start begins counting anew the first time it is used.
        key = num_id if overrides else abstract_id
        counters = self._counters.setdefault(key, {})
        if overrides and num_id not in self._started:
            self._started.add(num_id)
            counters.clear()
        start_of = {lvl: overrides.get(lvl, level.start) for lvl, level in levels.items()}
        counters[ilvl] = counters[ilvl] + 1 if ilvl in counters else start_of[ilvl]
        for deeper, level in levels.items():
            # A deeper level restarts when a higher one advances, or only when level
            # ``restart_after`` (1-based) or a higher one does; 0: never.
            restart = level.restart_after
            if deeper > ilvl and (restart is None or (restart != 0 and ilvl <= restart - 1)):
                counters.pop(deeper, None)
        level = levels[ilvl]
        if level.fmt == "none":
            return ""
        if level.fmt == "bullet":
            return "".join(SYMBOL_BULLETS.get(ch, ch) for ch in level.text) + level.suffix
        text = level.text
        for lvl in sorted(levels, reverse=True):  # %10 never occurs (nine levels), but go high to low
            if f"%{lvl + 1}" in text:
                value = counters.get(lvl, start_of.get(lvl, 1))
                text = text.replace(f"%{lvl + 1}", format_number(value, levels[lvl].fmt))
        return text + level.suffix if text else ""


def format_number(value: int, fmt: str) -> str:
    """A counter in a Word number format.

    >>> [format_number(4, f) for f in ("decimal", "lowerLetter", "upperRoman", "decimalZero")]
    ['4', 'd', 'IV', '04']
    >>> format_number(28, "lowerLetter")
    'bb'
    """
    if fmt in ("lowerLetter", "upperLetter"):
        letter = chr(ord("a") + (value - 1) % 26) * ((value - 1) // 26 + 1) if value > 0 else ""
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman"):
        roman = _roman(value)
        return roman.lower() if fmt == "lowerRoman" else roman
    if fmt == "decimalZero":
        return f"{value:02d}"
    if fmt == "ordinal":
        suffix = "th" if 10 <= value % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")
        return f"{value}{suffix}"
    return str(value)


def _roman(value: int) -> str:
    if value <= 0:
        return str(value)
    out = []
    for number, letters in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                            (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        count, value = divmod(value, number)
        out.append(letters * count)
    return "".join(out)


def _level(lvl: Element) -> Level:
    restart = _val(lvl.child("w:lvlRestart"))
    return Level(
        start=_int(_val(lvl.child("w:start")), 1),
        fmt=_val(lvl.child("w:numFmt")) or "decimal",
        text=_val(lvl.child("w:lvlText")) or "",
        suffix=_SUFFIX.get(_val(lvl.child("w:suff")) or "tab", "\t"),
        restart_after=_int(restart, 0) if restart is not None else None,
    )


def _val(element: Element | None) -> str | None:
    return element.attrs.get("w:val") if element is not None else None


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
