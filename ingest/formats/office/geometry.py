"""Where a PPTX shape is drawn: its frame on the slide, from the slide's own geometry.

DrawingML places a shape with a transform (``a:xfrm``, or ``p:xfrm`` on a graphic frame): an
offset and an extent in EMU (914400 to the inch, 12700 to the point), a rotation in 60000ths of
a degree (clockwise) and flips. A group shape's transform also names the box its children are
drawn in (``a:chOff``/``a:chExt``); that box is mapped onto the group's own offset and extent,
so a child's frame on the slide is its box taken through every enclosing group in turn.

A frame here is the axis-aligned bounding box, in points from the slide's top left corner, of
the shape's box as drawn: rotated about its centre (a 90 or 270 degree turn swaps the box's
width and height about its centre; any other angle gives the box around the turned one) and
taken through the groups' scaling, flips and rotations. Flipping a lone shape leaves its box
where it is; flipping a group mirrors where its children lie.

A placeholder without its own transform is drawn where its layout's matching placeholder is,
else where the master's is; one with part of a transform (an offset, no extent: python-pptx
writes these when a placeholder is moved) takes the rest from there. ``match_placeholder`` says
which placeholder matches (ECMA-376 ``p:ph``: type "obj" and idx 0 when not given).

Everything here is pure: elements in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ingest.formats.office.xml_positions import Element

EMU_PER_POINT = 12700
# x' = a*x + b*y + c, y' = d*x + e*y + f
Affine = tuple[float, float, float, float, float, float]
IDENTITY: Affine = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)

_TITLES = frozenset({"title", "ctrTitle"})
# The body family: placeholder types that take their place from a body placeholder when no idx
# matches (python-pptx and PowerPoint agree: a layout's chart, table or picture placeholder is
# placed where the master's body is).
_BODIES = frozenset({"body", "subTitle", "obj", "chart", "tbl", "clipArt", "dgm", "media", "pic"})


@dataclass(frozen=True, slots=True)
class Xfrm:
    """A DrawingML transform in EMU; a part not written is None (a placeholder inherits it).
    ``child_*`` only on a group shape's: the space its children are placed in."""

    offset: tuple[int, int] | None
    extent: tuple[int, int] | None
    rot: int | None = None  # 60000ths of a degree, clockwise
    flip_h: bool = False
    flip_v: bool = False
    child_offset: tuple[int, int] | None = None
    child_extent: tuple[int, int] | None = None

    def inherit(self, base: Xfrm | None) -> Xfrm:
        """This transform with what it leaves out taken from ``base`` (a layout's placeholder).

        >>> Xfrm((10, 20), None).inherit(Xfrm((0, 0), (30, 40), 5400000))
        Xfrm(offset=(10, 20), extent=(30, 40), rot=5400000, flip_h=False, flip_v=False, child_offset=None, child_extent=None)
        """
        if base is None:
            return self
        return replace(self, offset=self.offset if self.offset is not None else base.offset,
                       extent=self.extent if self.extent is not None else base.extent,
                       rot=self.rot if self.rot is not None else base.rot)

    def complete(self) -> bool:
        return self.offset is not None and self.extent is not None


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A ``p:ph``: its type and idx with the defaults applied, and whether idx was written."""

    type: str = "obj"
    idx: int = 0
    explicit_idx: bool = False


def read_xfrm(xfrm: Element | None) -> Xfrm | None:
    """The transform an ``a:xfrm`` (or ``p:xfrm``) element states; None without the element.

    >>> from ingest.formats.office.xml_positions import parse_xml
    >>> root, _ = parse_xml(b'<xfrm rot="5400000" flipH="1"><off x="10" y="20"/><ext cx="30" cy="40"/>'
    ...                     b'</xfrm>', "s.xml", "d")
    >>> read_xfrm(root)
    Xfrm(offset=(10, 20), extent=(30, 40), rot=5400000, flip_h=True, flip_v=False, child_offset=None, child_extent=None)
    """
    if xfrm is None:
        return None
    return Xfrm(_pair(_child(xfrm, "off"), "x", "y"), _pair(_child(xfrm, "ext"), "cx", "cy"),
                _int(xfrm.attrs.get("rot")), _true(xfrm.attrs.get("flipH")), _true(xfrm.attrs.get("flipV")),
                _pair(_child(xfrm, "chOff"), "x", "y"), _pair(_child(xfrm, "chExt"), "cx", "cy"))


def on_slide(xfrm: Xfrm, to_slide: Affine) -> Xfrm:
    """``xfrm`` as a transform on the slide: itself where no group moves it, else its frame
    (a placeholder in a layout's group, for the slides that take their place from it).

    >>> on_slide(Xfrm((0, 0), (10, 10)), (2.0, 0.0, 5.0, 0.0, 2.0, 5.0))
    Xfrm(offset=(5, 5), extent=(20, 20), rot=None, flip_h=False, flip_v=False, child_offset=None, child_extent=None)
    """
    if to_slide == IDENTITY:
        return xfrm
    x0, y0, x1, y1 = (round(v * EMU_PER_POINT) for v in frame(xfrm, to_slide))
    return Xfrm((x0, y0), (x1 - x0, y1 - y0))


def compose(outer: Affine, inner: Affine) -> Affine:
    """``inner`` then ``outer``.

    >>> compose((2.0, 0.0, 0.0, 0.0, 2.0, 0.0), (1.0, 0.0, 5.0, 0.0, 1.0, 7.0))  # move, then double
    (2.0, 0.0, 10.0, 0.0, 2.0, 14.0)
    """
    a, b, c, d, e, f = outer
    p, q, r, s, t, u = inner
    return (a * p + b * s, a * q + b * t, a * r + b * u + c, d * p + e * s, d * q + e * t, d * r + e * u + f)


def group_transform(group: Xfrm) -> Affine:
    """What a group does to its children: their space (``chOff``/``chExt``) onto the group's box,
    then the group's flips and rotation about its centre.

    A group without a child offset or extent draws its children as they are placed (child space
    = its own box); a zero child extent scales by 1.

    >>> group_transform(Xfrm((1000, 2000), (400, 200), child_offset=(0, 0), child_extent=(200, 100)))
    (2.0, 0.0, 1000.0, 0.0, 2.0, 2000.0)
    >>> group_transform(Xfrm((0, 0), (100, 100), flip_h=True))  # children mirrored about x = 50
    (-1.0, 0.0, 100.0, 0.0, 1.0, 0.0)
    """
    x, y = group.offset or (0, 0)
    cx, cy = group.extent or (0, 0)
    child_x, child_y = group.child_offset or (x, y)
    child_cx, child_cy = group.child_extent or (cx, cy)
    scale_x = cx / child_cx if child_cx else 1.0
    scale_y = cy / child_cy if child_cy else 1.0
    placed: Affine = (scale_x, 0.0, x - child_x * scale_x, 0.0, scale_y, y - child_y * scale_y)
    centre_x, centre_y = x + cx / 2, y + cy / 2
    flipped = (-1.0 if group.flip_h else 1.0, 0.0, 2 * centre_x if group.flip_h else 0.0,
               0.0, -1.0 if group.flip_v else 1.0, 2 * centre_y if group.flip_v else 0.0)
    return compose(_rotation(group.rot or 0, centre_x, centre_y), compose(flipped, placed))


def frame(xfrm: Xfrm, to_slide: Affine = IDENTITY) -> tuple[float, float, float, float]:
    """The box ``xfrm`` draws, turned by its rotation and taken through ``to_slide`` (the
    enclosing groups), as (x0, y0, x1, y1) in points; an offset or extent not given is 0.

    >>> frame(Xfrm((12700, 25400), (127000, 63500)))
    (1.0, 2.0, 11.0, 7.0)
    >>> frame(Xfrm((0, 0), (127000, 63500), rot=5400000))  # a quarter turn about its centre
    (2.5, -2.5, 7.5, 7.5)
    """
    x, y = xfrm.offset or (0, 0)
    cx, cy = xfrm.extent or (0, 0)
    placed = compose(to_slide, _rotation(xfrm.rot or 0, x + cx / 2, y + cy / 2))
    a, b, c, d, e, f = placed
    corners = [(a * corner_x + b * corner_y + c, d * corner_x + e * corner_y + f)
               for corner_x in (x, x + cx) for corner_y in (y, y + cy)]
    across, down = [corner[0] for corner in corners], [corner[1] for corner in corners]
    return (_points(min(across)), _points(min(down)), _points(max(across)), _points(max(down)))


def clip(box: tuple[float, float, float, float], width: float, height: float) -> tuple[float, float, float, float]:
    """``box`` cut to the slide (``width`` x ``height`` points); a box off the slide shrinks to
    the nearest edge (no area, but still a place).

    >>> clip((-10.0, 5.0, 50.0, 900.0), 720.0, 540.0)
    (0.0, 5.0, 50.0, 540.0)
    >>> clip((800.0, 5.0, 900.0, 10.0), 720.0, 540.0)
    (720.0, 5.0, 720.0, 10.0)
    """
    x0, y0, x1, y1 = box
    return (min(max(x0, 0.0), width), min(max(y0, 0.0), height), min(max(x1, 0.0), width), min(max(y1, 0.0), height))


def read_placeholder(ph: Element) -> Placeholder:
    """A ``p:ph`` element's type and idx (ECMA-376 defaults: "obj" and 0).

    >>> from ingest.formats.office.xml_positions import parse_xml
    >>> read_placeholder(parse_xml(b'<ph type="body" idx="1"/>', "s.xml", "d")[0])
    Placeholder(type='body', idx=1, explicit_idx=True)
    """
    idx = _int(ph.attrs.get("idx"))
    return Placeholder(ph.attrs.get("type", "obj"), idx or 0, idx is not None)


def match_placeholder(wanted: Placeholder, candidates: Sequence[Placeholder]) -> int | None:
    """The index in ``candidates`` (a layout's or master's placeholders) of the one ``wanted``
    inherits from, or None.

    In order: the same idx and a kind of the same family; the same idx written out (a table
    placeholder on a slide takes the place of the layout's content placeholder); the same type;
    the same family (title and ctrTitle are titles; body, subTitle, obj and the typed content
    placeholders are bodies), which is how a layout's placeholders find the master's.

    >>> layout = [Placeholder("ctrTitle"), Placeholder("subTitle", 1, True), Placeholder("dt", 10, True)]
    >>> match_placeholder(Placeholder("title"), layout), match_placeholder(Placeholder("tbl", 1, True), layout)
    (0, 1)
    >>> master = [Placeholder("title"), Placeholder("body", 1, True), Placeholder("dt", 2, True)]
    >>> [match_placeholder(p, master) for p in layout]
    [0, 1, 2]
    >>> match_placeholder(Placeholder("body"), [Placeholder("title")]) is None  # idx 0 alone is no match
    True
    >>> match_placeholder(Placeholder("dt"), [Placeholder("sldNum"), Placeholder("dt", 2, True)])
    1
    """
    family = _family(wanted.type)
    rules = (
        lambda c: c.idx == wanted.idx and (c.type == wanted.type or family is not None and _family(c.type) == family),
        lambda c: wanted.explicit_idx and c.explicit_idx and c.idx == wanted.idx,
        lambda c: c.type == wanted.type,
        lambda c: family is not None and _family(c.type) == family,
    )
    for rule in rules:
        found = next((i for i, candidate in enumerate(candidates) if rule(candidate)), None)
        if found is not None:
            return found
    return None


def _family(kind: str) -> str | None:
    if kind in _TITLES:
        return "title"
    if kind in _BODIES:
        return "body"
    return None


def _rotation(rot: int, centre_x: float, centre_y: float) -> Affine:
    if not rot % 21600000:
        return IDENTITY
    angle = math.radians(rot / 60000)
    cos, sin = math.cos(angle), math.sin(angle)
    # snap the quarter turns, so that a turned box has exact corners
    cos, sin = _snap(cos), _snap(sin)
    # y grows downwards, so this turns clockwise on the slide, as DrawingML's rot does
    return (cos, -sin, centre_x - cos * centre_x + sin * centre_y, sin, cos, centre_y - sin * centre_x - cos * centre_y)


def _snap(value: float) -> float:
    return float(round(value)) if abs(value - round(value)) < 1e-12 else value


def _points(emu: float) -> float:
    return round(emu / EMU_PER_POINT, 4) + 0.0  # + 0.0: no -0.0


def _child(element: Element, local: str) -> Element | None:
    # a:off in a:xfrm and p:xfrm alike; the bare name where the namespace is unknown
    return next((c for c in element.elements() if c.name.rpartition(":")[2] == local), None)


def _pair(element: Element | None, first: str, second: str) -> tuple[int, int] | None:
    if element is None:
        return None
    return (_int(element.attrs.get(first)) or 0, _int(element.attrs.get(second)) or 0)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _true(text: str | None) -> bool:
    return (text or "").lower() in ("1", "true")
