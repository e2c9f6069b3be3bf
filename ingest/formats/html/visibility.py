"""Hidden HTML text as far as the source alone can tell, without a browser.

The parser already leaves out what ``hidden``, inline ``display:none`` and inline
``visibility:hidden`` hide. What it keeps, this module judges from the inline
``style`` attributes and the presentational attributes (``<font color>``,
``bgcolor``) of the elements the text sits in, as the tree builder of
``ingest.formats.html.parser`` opens and closes them: a font under 1 px (``font-size:0``,
``font: 0/0 a``), transparent text or ``opacity:0``, text in the colour of the
background an ancestor declares, text moved off the page (a large negative
offset, margin, indent or translation), clipped away (``clip: rect(0 0 0 0)``,
``clip-path: inset(50%)``, a 1-px box with ``overflow:hidden``), scaled to nothing,
or ``content-visibility:hidden``. Inside ``aria-hidden="true"`` such text is hidden
from every reader: the reason is then ``aria_hidden``.

The tree builder keeps each open element's ``Style`` on its stack and tells its
text builder the reason in force, so the verdicts come with the parse itself
(``ParsedDocument.hidden_runs``). What style sheets do (a class that hides, a dark
page background) is beyond the source: ``ingest.formats.html.layout`` asks a browser.
``SOURCE_ONLY`` says so, for the build to tell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape

from ingest.formats.html.css_values import (
    Color,
    background_color,
    contrast,
    declarations,
    font_shorthand_size,
    font_size_px,
    length_px,
    over,
    parse_color,
)
from ingest.formats.html.tokens import parse_attrs
from schemas.records import HiddenReason, HiddenRun

SOURCE_ONLY = ("hidden text judged from the HTML source alone (hidden attributes and inline styles); "
               "what style sheets hide needs --html-layout")

MIN_CONTRAST = 1.1  # as ingest.formats.html.boxes
MIN_ALPHA = 0.05
FAR = -500.0  # px: an offset this far up or left puts text off any page
_WHITE: Color = (255.0, 255.0, 255.0, 1.0)
_UNKNOWN = "unknown"  # a background this module cannot read (an image, a gradient)
_STYLE_SHEET = re.compile(r"<style[\s>]|<link[^>]+stylesheet", re.I)
_ATTRS_OF_INTEREST = re.compile(r"style|color|aria-hidden|bgcolor", re.I)
_TRANSLATE = re.compile(r"translate(?:x|y|3d)?\(\s*([^,)\s]+)(?:\s*,\s*([^,)\s]+))?", re.I)
_SCALE = re.compile(r"scale(?:x|y|3d)?\(\s*([^,)\s]+)(?:\s*,\s*([^,)\s]+))?", re.I)
_INSET = re.compile(r"inset\(\s*([^\s)]+)", re.I)
_CLIP_RECT = re.compile(r"rect\(([^)]*)\)", re.I)
_HEX_COLOR = re.compile(r"[0-9a-f]{6}\Z", re.I)


@dataclass(frozen=True, slots=True)
class Style:
    """What an element passes to its content: a reason hiding all of it, and inherited values."""

    hides: HiddenReason | None = None  # opacity, position, clip, transform, ...: the whole subtree
    font_px: float = 16.0
    color: Color | None = None  # declared on it or an ancestor; None: the page's default
    background: Color | str | None = None  # the nearest declared one; None: none declared
    painted: bool = False  # text drawn some other way (background-clip:text, a shadow, a stroke)
    aria_hidden: bool = False


ROOT_STYLE = Style()


class InlineStyles:
    """The styles the tree builder of ``ingest.formats.html.parser`` keeps on its stack of open elements.

    >>> from ingest.formats.html.parser import parse_html_text
    >>> doc = parse_html_text('<p>Seen <span style="font-size:0">unseen</span> <b style="color:#fff">white</b></p>', "p.html")
    >>> [(doc.text[r.start:r.end], r.reason.value) for r in doc.hidden_runs]
    [('unseen', 'tiny'), ('white', 'background_color')]
    """

    def __init__(self, source: str) -> None:
        self.source = source
        # A page without style sheets has the browser's white background.
        self.plain_page = _STYLE_SHEET.search(source) is None

    def child(self, parent: Style, attrs_at: int, end: int) -> Style:
        """The style of an element whose start tag's attributes are ``source[attrs_at:end - 1]``."""
        if _ATTRS_OF_INTEREST.search(self.source, attrs_at, end) is None:
            return parent
        return _element_style(parent, parse_attrs(self.source, attrs_at, end - 1))

    def reason(self, style: Style) -> HiddenReason | None:
        """Why text with this style is hidden; None: as far as the source tells, it is seen."""
        reason = style.hides
        if reason is None and style.font_px < 1:
            reason = HiddenReason.TINY
        if reason is None and style.color is not None and not style.painted:
            if style.color[3] < MIN_ALPHA:
                reason = HiddenReason.TRANSPARENT
            else:
                under = style.background
                if under is None and self.plain_page:
                    under = _WHITE
                if isinstance(under, tuple):
                    under = over(under, _WHITE)
                    if contrast(over(style.color, under), under) < MIN_CONTRAST:
                        reason = HiddenReason.BACKGROUND_COLOR
        if reason is not None and style.aria_hidden:
            return HiddenReason.ARIA_HIDDEN
        return reason


def hidden_runs(text: str, pieces: list) -> tuple[HiddenRun, ...]:
    """``[start, end, reason]`` pieces of text as runs: trimmed of whitespace at their ends, and
    pieces of one reason separated only by whitespace joined.

    >>> hidden_runs("a  b c", [[0, 3, HiddenReason.TINY], [3, 4, HiddenReason.TINY]])
    (HiddenRun(start=0, end=4, reason=<HiddenReason.TINY: 'tiny'>),)
    """
    runs: list[HiddenRun] = []
    for start, end, reason in pieces:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            continue
        if runs and runs[-1].reason is reason and not text[runs[-1].end:start].strip():
            runs[-1] = HiddenRun(runs[-1].start, end, reason)
        else:
            runs.append(HiddenRun(start, end, reason))
    return tuple(runs)


def _element_style(parent: Style, attrs: dict[str, str]) -> Style:
    css = declarations(unescape(attrs.get("style", "")))
    font_px = parent.font_px
    if "font" in css:
        size = font_shorthand_size(css["font"], parent.font_px)
        font_px = size if size is not None else font_px
    if "font-size" in css:
        size = font_size_px(css["font-size"], parent.font_px)
        font_px = size if size is not None else font_px
    color = parent.color
    legacy = attrs.get("color")
    if legacy is not None:
        color = _legacy_color(legacy) or color
    if "color" in css:
        color = parse_color(css["color"]) or color
    if "-webkit-text-fill-color" in css:
        color = parse_color(css["-webkit-text-fill-color"]) or color
    background = parent.background
    own = _own_background(attrs, css)
    if own is not None:
        background = own if isinstance(own, str) or own[3] >= 1 or not isinstance(background, tuple) \
            else over(own, background)
    painted = parent.painted or css.get("background-clip") == "text" \
        or css.get("-webkit-background-clip") == "text" \
        or css.get("text-shadow", "none") != "none" or _stroked(css)
    aria = parent.aria_hidden or attrs.get("aria-hidden", "").strip().lower() == "true"
    hides = parent.hides or _hiding(css, font_px)
    return Style(hides, font_px, color, background, painted, aria)


def _legacy_color(value: str) -> Color | None:
    value = value.strip()
    if _HEX_COLOR.match(value):
        value = "#" + value
    return parse_color(value)


def _own_background(attrs: dict[str, str], css: dict[str, str]) -> Color | str | None:
    if "background-image" in css and css["background-image"] != "none":
        return _UNKNOWN
    if "background-color" in css:
        return parse_color(css["background-color"]) or _UNKNOWN
    if "background" in css:
        return background_color(css["background"]) or _UNKNOWN
    if "bgcolor" in attrs:
        return _legacy_color(attrs["bgcolor"]) or _UNKNOWN
    if "background" in attrs:
        return _UNKNOWN  # an image
    return None


def _stroked(css: dict[str, str]) -> bool:
    width = css.get("-webkit-text-stroke-width") or css.get("-webkit-text-stroke", "").split(" ")[0]
    size = length_px(width) if width else None
    return bool(size and size > 0)


def _hiding(css: dict[str, str], font_px: float) -> HiddenReason | None:
    """A reason in an element's own declarations that hides everything inside it."""
    if not css:
        return None
    if css.get("content-visibility") == "hidden" or css.get("visibility") == "collapse":
        return HiddenReason.CSS_HIDDEN
    opacity = css.get("opacity")
    if opacity is not None:
        try:
            value = float(opacity[:-1]) / 100 if opacity.endswith("%") else float(opacity)
        except ValueError:
            value = 1.0
        if value < MIN_ALPHA:
            return HiddenReason.TRANSPARENT
    if _far_off(css, font_px):
        return HiddenReason.OFF_PAGE
    if _clipped(css, font_px):
        return HiddenReason.CLIPPED
    transform = css.get("transform", "")
    for m in _SCALE.finditer(transform):
        factors = [_number(v) for v in m.groups() if v]
        if any(f is not None and abs(f) < 0.01 for f in factors):
            return HiddenReason.ZERO_SIZE
    return None


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _far_off(css: dict[str, str], font_px: float) -> bool:
    offsets = []
    if css.get("position", "static") != "static":
        offsets += [css.get(side) for side in ("left", "top", "right", "bottom")]
    offsets += [css.get("margin-left"), css.get("margin-top"), css.get("text-indent")]
    for m in _TRANSLATE.finditer(css.get("transform", "")):
        offsets += list(m.groups())
    return any(value is not None and (length_px(value, font_px) or 0) <= FAR for value in offsets)


def _clipped(css: dict[str, str], font_px: float) -> bool:
    clip = _CLIP_RECT.search(css.get("clip", ""))
    if clip and css.get("position") in ("absolute", "fixed"):
        sides = [length_px(v, font_px) for v in re.split(r"[\s,]+", clip.group(1).strip())]
        if len(sides) == 4 and None not in sides and (sides[0] >= sides[2] or sides[3] >= sides[1]):
            return True
    path = css.get("clip-path", "")
    inset = _INSET.search(path)
    if inset and inset.group(1).endswith("%") and _number(inset.group(1)[:-1]) is not None \
            and float(inset.group(1)[:-1]) >= 50:
        return True
    if re.match(r"(circle|ellipse)\(\s*0(px|%)?[\s)]", path):
        return True
    overflow = {css.get("overflow", ""), css.get("overflow-x", ""), css.get("overflow-y", "")}
    if overflow & {"hidden", "clip"} or any(v.startswith(("hidden", "clip")) for v in overflow):
        for side in ("width", "height", "max-width", "max-height"):
            size = length_px(css[side], font_px) if side in css else None
            if size is not None and size <= 1:
                return True
    return False
