"""DOCX run formatting that decides whether a reader sees the text: hidden, tiny, or drawn in its background's colour.

A run's look is resolved as Word resolves it, property by property: the run's own ``w:rPr``,
then its character style (``w:rStyle``, along ``w:basedOn``), then its paragraph's style, then
the document defaults (``w:docDefaults``). Its background is the first of: the run's highlight
or shading, the paragraph's shading, the table cell's shading, the page colour
(``w:background``), white.

Verdicts, in this order: ``w:vanish``/``w:specVanish`` (hidden formatting); a size under 1 pt
(``w:sz`` below 2 half-points: tiny); a colour equal to the background's (background colour).
"auto" colours are never hidden: Word draws them dark on light and light on dark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from ingest.formats.office.xml_positions import Element
from schemas.records import HiddenReason

_OFF = frozenset({"0", "false", "off"})
WHITE = "FFFFFF"
# w:highlight's named colours (ECMA-376 ST_HighlightColor)
HIGHLIGHTS = {
    "black": "000000", "blue": "0000FF", "cyan": "00FFFF", "green": "00FF00", "magenta": "FF00FF",
    "red": "FF0000", "yellow": "FFFF00", "white": "FFFFFF", "darkBlue": "000080", "darkCyan": "008080",
    "darkGreen": "008000", "darkMagenta": "800080", "darkRed": "800000", "darkYellow": "808000",
    "darkGray": "808080", "lightGray": "C0C0C0",
}
MIN_HALF_POINTS = 2  # w:sz counts half-points: under 1 pt nobody reads it


@dataclass(frozen=True, slots=True)
class Look:
    """Run properties that decide visibility; None where this level does not set them."""

    vanish: bool | None = None
    color: str | None = None  # "RRGGBB" upper case, or "AUTO"
    half_points: int | None = None
    fill: str | None = None  # the run's highlight or shading

    def over(self, base: Look) -> Look:
        """This look with what it leaves unset taken from ``base``.

        >>> Look(color="FF0000").over(Look(color="000000", half_points=24))
        Look(vanish=None, color='FF0000', half_points=24, fill=None)
        """
        return Look(*(getattr(self, f.name) if getattr(self, f.name) is not None else getattr(base, f.name)
                      for f in fields(self)))

    def hidden_reason(self, background: str) -> HiddenReason | None:
        """Why a reader cannot see a run of this look over ``background`` ("RRGGBB").

        >>> Look(color="FFFFFF").hidden_reason("FFFFFF")
        <HiddenReason.BACKGROUND_COLOR: 'background_color'>
        >>> Look(color="FFFFFF", fill="000000").hidden_reason("FFFFFF") is None   # white on a black highlight
        True
        >>> Look(half_points=1).hidden_reason("FFFFFF")
        <HiddenReason.TINY: 'tiny'>
        >>> Look(color="AUTO").hidden_reason("000000") is None
        True
        """
        if self.vanish:
            return HiddenReason.HIDDEN_FORMATTING
        if self.half_points is not None and self.half_points < MIN_HALF_POINTS:
            return HiddenReason.TINY
        behind = self.fill or background
        if self.color is not None and self.color != "AUTO" and self.color == behind:
            return HiddenReason.BACKGROUND_COLOR
        return None


def read_look(properties: Element | None) -> Look:
    """The visibility-relevant properties a ``w:rPr`` sets."""
    if properties is None:
        return Look()
    flags = [f for f in (properties.child("w:vanish"), properties.child("w:specVanish")) if f is not None]
    vanish = any(f.attrs.get("w:val", "true").lower() not in _OFF for f in flags) if flags else None
    color = properties.child("w:color")
    size = properties.child("w:sz")
    return Look(vanish, _colour(color.attrs.get("w:val")) if color is not None else None,
                _int(size.attrs.get("w:val")) if size is not None else None, _fill(properties))


def shading(properties: Element | None) -> str | None:
    """The fill colour a ``w:pPr`` or ``w:tcPr`` shades its paragraph or cell with, if any."""
    shd = properties.child("w:shd") if properties is not None else None
    return _colour(shd.attrs.get("w:fill")) if shd is not None else None


def page_colour_of(document: Element) -> str:
    """The page colour of a ``w:document`` (``w:background``), white where it sets none or "auto"."""
    background = document.child("w:background")
    colour = _colour(background.attrs.get("w:color")) if background is not None else None
    return colour if colour not in (None, "AUTO") else WHITE


def _fill(properties: Element) -> str | None:
    highlight = properties.child("w:highlight")
    if highlight is not None and highlight.attrs.get("w:val") in HIGHLIGHTS:
        return HIGHLIGHTS[highlight.attrs["w:val"]]
    return shading(properties)


def _colour(value: str | None) -> str | None:
    """ "ff0000" -> "FF0000"; "auto" -> "AUTO"; anything else (a theme name alone, junk) -> None.

    >>> _colour("ff0000"), _colour("auto"), _colour("bogus")
    ('FF0000', 'AUTO', None)
    """
    if value is None:
        return None
    value = value.strip().upper()
    if value == "AUTO":
        return value
    if len(value) == 6 and all(c in "0123456789ABCDEF" for c in value):
        return value
    return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class _Style:
    based_on: str | None
    look: Look
    numbering: tuple[str, int] | None
    outline_level: int | None = None  # 0-based (w:outlineLvl; 9 is body text), or None where unset
    name: str = ""


_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.I)


class Styles:
    """The styles part: each style's run look and numbering, resolved along ``w:basedOn``."""

    def __init__(self, styles: dict[str, _Style], defaults: Look = Look()) -> None:
        self._styles, self.defaults = styles, defaults

    @classmethod
    def read(cls, root: Element | None, num_pr) -> Styles:
        """``num_pr`` reads a ``w:numPr`` into (numId, level), as the body's paragraphs do."""
        styles = {}
        for style in root.children_named("w:style") if root is not None else ():
            based_on = style.child("w:basedOn")
            name = style.child("w:name")
            styles[style.attrs.get("w:styleId", "")] = _Style(
                based_on.attrs.get("w:val") if based_on is not None else None,
                read_look(style.child("w:rPr")), num_pr(style.find("w:pPr", "w:numPr")),
                outline_level(style.child("w:pPr")), name.attrs.get("w:val", "") if name is not None else "")
        defaults = root.find("w:docDefaults", "w:rPrDefault", "w:rPr") if root is not None else None
        return cls(styles, read_look(defaults))

    def _chain(self, style_id: str | None):
        seen = set()
        while style_id and style_id in self._styles and style_id not in seen:  # basedOn loops happen
            seen.add(style_id)
            yield self._styles[style_id]
            style_id = self._styles[style_id].based_on

    def look(self, style_id: str | None) -> Look:
        resolved = Look()
        for style in self._chain(style_id):
            resolved = resolved.over(style.look)
        return resolved

    def run_look(self, properties: Element | None, paragraph_style: str | None) -> Look:
        """A run's resolved look: its own, its character style's, its paragraph style's, the defaults."""
        own = read_look(properties)
        character = properties.child("w:rStyle") if properties is not None else None
        by_character = self.look(character.attrs.get("w:val")) if character is not None else Look()
        return own.over(by_character).over(self.look(paragraph_style)).over(self.defaults)

    def numbering(self, style_id: str | None) -> tuple[str, int] | None:
        return next((s.numbering for s in self._chain(style_id) if s.numbering is not None), None)

    def outline_level(self, style_id: str | None) -> int | None:
        """The 0-based outline level a paragraph style gives (its own or along ``w:basedOn``; a
        built-in "heading N" style that sets none gives N - 1); None for body text."""
        for style in self._chain(style_id):
            if style.outline_level is not None:
                return style.outline_level if style.outline_level < 9 else None
            named = _HEADING_NAME.fullmatch(style.name.strip())
            if named:
                return int(named.group(1)) - 1
        return None


def outline_level(properties: Element | None) -> int | None:
    """The ``w:outlineLvl`` a ``w:pPr`` sets (0-based; 9 is body text), or None."""
    level = properties.child("w:outlineLvl") if properties is not None else None
    return _int(level.attrs.get("w:val")) if level is not None else None
