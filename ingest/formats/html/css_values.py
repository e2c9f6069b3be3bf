"""The few CSS values that decide whether inline-styled text can be seen: colours, lengths.

Used where no browser is at hand (``ingest.formats.html.visibility``): declarations of a
``style`` attribute, read as a browser would read the ones that matter, and
nothing more. Anything this module cannot read is ``None``: unknown, never a guess.
"""

from __future__ import annotations

import colorsys
import re

Color = tuple[float, float, float, float]  # r, g, b in 0..255, alpha in 0..1

# CSS named colours as Chromium resolves them.
_NAMED = dict(
    item.split(":") for item in (
    "aliceblue:f0f8ff antiquewhite:faebd7 aqua:00ffff aquamarine:7fffd4 azure:f0ffff beige:f5f5dc "
    "bisque:ffe4c4 black:000000 blanchedalmond:ffebcd blue:0000ff blueviolet:8a2be2 brown:a52a2a "
    "burlywood:deb887 cadetblue:5f9ea0 chartreuse:7fff00 chocolate:d2691e coral:ff7f50 "
    "cornflowerblue:6495ed cornsilk:fff8dc crimson:dc143c cyan:00ffff darkblue:00008b "
    "darkcyan:008b8b darkgoldenrod:b8860b darkgray:a9a9a9 darkgreen:006400 darkgrey:a9a9a9 "
    "darkkhaki:bdb76b darkmagenta:8b008b darkolivegreen:556b2f darkorange:ff8c00 darkorchid:9932cc "
    "darkred:8b0000 darksalmon:e9967a darkseagreen:8fbc8f darkslateblue:483d8b darkslategray:2f4f4f "
    "darkslategrey:2f4f4f darkturquoise:00ced1 darkviolet:9400d3 deeppink:ff1493 deepskyblue:00bfff "
    "dimgray:696969 dimgrey:696969 dodgerblue:1e90ff firebrick:b22222 floralwhite:fffaf0 "
    "forestgreen:228b22 fuchsia:ff00ff gainsboro:dcdcdc ghostwhite:f8f8ff gold:ffd700 "
    "goldenrod:daa520 gray:808080 green:008000 greenyellow:adff2f grey:808080 honeydew:f0fff0 "
    "hotpink:ff69b4 indianred:cd5c5c indigo:4b0082 ivory:fffff0 khaki:f0e68c lavender:e6e6fa "
    "lavenderblush:fff0f5 lawngreen:7cfc00 lemonchiffon:fffacd lightblue:add8e6 lightcoral:f08080 "
    "lightcyan:e0ffff lightgoldenrodyellow:fafad2 lightgray:d3d3d3 lightgreen:90ee90 "
    "lightgrey:d3d3d3 lightpink:ffb6c1 lightsalmon:ffa07a lightseagreen:20b2aa lightskyblue:87cefa "
    "lightslategray:778899 lightslategrey:778899 lightsteelblue:b0c4de lightyellow:ffffe0 "
    "lime:00ff00 limegreen:32cd32 linen:faf0e6 magenta:ff00ff maroon:800000 mediumaquamarine:66cdaa "
    "mediumblue:0000cd mediumorchid:ba55d3 mediumpurple:9370db mediumseagreen:3cb371 "
    "mediumslateblue:7b68ee mediumspringgreen:00fa9a mediumturquoise:48d1cc mediumvioletred:c71585 "
    "midnightblue:191970 mintcream:f5fffa mistyrose:ffe4e1 moccasin:ffe4b5 navajowhite:ffdead "
    "navy:000080 oldlace:fdf5e6 olive:808000 olivedrab:6b8e23 orange:ffa500 orangered:ff4500 "
    "orchid:da70d6 palegoldenrod:eee8aa palegreen:98fb98 paleturquoise:afeeee palevioletred:db7093 "
    "papayawhip:ffefd5 peachpuff:ffdab9 peru:cd853f pink:ffc0cb plum:dda0dd powderblue:b0e0e6 "
    "purple:800080 rebeccapurple:663399 red:ff0000 rosybrown:bc8f8f royalblue:4169e1 "
    "saddlebrown:8b4513 salmon:fa8072 sandybrown:f4a460 seagreen:2e8b57 seashell:fff5ee "
    "sienna:a0522d silver:c0c0c0 skyblue:87ceeb slateblue:6a5acd slategray:708090 slategrey:708090 "
    "snow:fffafa springgreen:00ff7f steelblue:4682b4 tan:d2b48c teal:008080 thistle:d8bfd8 "
    "tomato:ff6347 turquoise:40e0d0 violet:ee82ee wheat:f5deb3 white:ffffff whitesmoke:f5f5f5 "
    "yellow:ffff00 yellowgreen:9acd32"
    ).split()
)
_HEX = re.compile(r"#([0-9a-f]{3,8})\Z")
_FUNCTION = re.compile(r"(rgba?|hsla?)\(([^()]*)\)\Z")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")
_LENGTH = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(px|pt|pc|em|rem|%|ex|ch|vw|vh|cm|mm|in|q)?\Z")
_ABSOLUTE = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "cm": 96 / 2.54, "mm": 96 / 25.4, "in": 96.0, "q": 96 / 101.6}
_FONT_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0,
                  "x-large": 24.0, "xx-large": 32.0, "xxx-large": 48.0}
_IMPORTANT = re.compile(r"\s*!\s*important\s*\Z", re.I)


def declarations(style: str) -> dict[str, str]:
    """The declarations of a ``style`` attribute, names lowercased; the last one of a name wins,
    unless an earlier one is ``!important``.

    >>> declarations("color: RED; font-size:0 !important; font-size: 12px; background:url(a;b)")
    {'color': 'red', 'font-size': '0', 'background': 'url(a;b)'}
    """
    found: dict[str, str] = {}
    important: set[str] = set()
    for part in _split(style):
        name, colon, value = part.partition(":")
        name = name.strip().lower()
        if not colon or not name:
            continue
        value = value.strip()
        is_important = bool(_IMPORTANT.search(value))
        if is_important:
            value = _IMPORTANT.sub("", value)
        if name in important and not is_important:
            continue
        if is_important:
            important.add(name)
        found[name] = value.lower() if not value.lower().startswith("url(") else value
    return found


def _split(style: str) -> list[str]:
    if "(" not in style and '"' not in style and "'" not in style:
        return style.split(";")
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(style):
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == ";" and depth == 0:
            parts.append(style[start:i])
            start = i + 1
    parts.append(style[start:])
    return parts


def parse_color(value: str) -> Color | None:
    """A CSS colour as (r, g, b, alpha); None for what is not a plain colour.

    >>> parse_color("#fff"), parse_color("rgba(0, 0, 0, 0)"), parse_color("transparent")
    ((255.0, 255.0, 255.0, 1.0), (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0))
    >>> parse_color("hsl(0 0% 100% / 50%)"), parse_color("currentcolor")
    ((255.0, 255.0, 255.0, 0.5), None)
    """
    value = value.strip().lower()
    if value == "transparent":
        return (0.0, 0.0, 0.0, 0.0)
    if value in _NAMED:
        return _from_hex(_NAMED[value])
    m = _HEX.match(value)
    if m:
        digits = m.group(1)
        if len(digits) in (3, 4):
            digits = "".join(d * 2 for d in digits)
        if len(digits) in (6, 8):
            return _from_hex(digits)
        return None
    m = _FUNCTION.match(value)
    if not m:
        return None
    kind, args = m.groups()
    numbers = [(float(n.group()), args[n.end():n.end() + 1] == "%") for n in _NUMBER.finditer(args)]
    if len(numbers) not in (3, 4):
        return None
    alpha = 1.0
    if len(numbers) == 4:
        a, percent = numbers[3]
        alpha = min(max(a / 100 if percent else a, 0.0), 1.0)
    if kind.startswith("rgb"):
        rgb = [min(max(v * 2.55 if p else v, 0.0), 255.0) for v, p in numbers[:3]]
    else:
        h, s, light = numbers[0][0], numbers[1][0] / 100, numbers[2][0] / 100
        r, g, b = colorsys.hls_to_rgb((h % 360) / 360, min(max(light, 0.0), 1.0), min(max(s, 0.0), 1.0))
        rgb = [round(r * 255, 6), round(g * 255, 6), round(b * 255, 6)]
    return (rgb[0], rgb[1], rgb[2], alpha)


def _from_hex(digits: str) -> Color:
    r, g, b = (float(int(digits[i:i + 2], 16)) for i in (0, 2, 4))
    alpha = int(digits[6:8], 16) / 255 if len(digits) == 8 else 1.0
    return (r, g, b, alpha)


def background_color(value: str) -> Color | None:
    """The colour a ``background`` shorthand paints, where it paints nothing else (no image).

    >>> background_color("#000 none"), background_color("url(x.png) white")
    ((0.0, 0.0, 0.0, 1.0), None)
    """
    if "url(" in value or "gradient(" in value or "image-set(" in value:
        return None
    for token in reversed(_tokens(value)):
        color = parse_color(token)
        if color is not None:
            return color
    return None


def _tokens(value: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, c in enumerate(value + " "):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c in " \t\n\r\f/," and depth == 0:
            if i > start:
                out.append(value[start:i])
            start = i + 1
    return out


def length_px(value: str, font_px: float = 16.0, whole_px: float | None = None) -> float | None:
    """A CSS length in px; em against ``font_px``, % against ``whole_px``; None when unknown.

    >>> length_px("-999em"), length_px("0"), length_px("12pt"), length_px("auto")
    (-15984.0, 0.0, 16.0, None)
    """
    m = _LENGTH.match(value.strip().lower())
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2)
    if unit is None:
        return number if number == 0 else None
    if unit in _ABSOLUTE:
        return number * _ABSOLUTE[unit]
    if unit in ("em", "ex", "ch"):
        return number * font_px * (1.0 if unit == "em" else 0.5)
    if unit == "rem":
        return number * 16.0
    if unit == "%":
        return None if whole_px is None else number / 100 * whole_px
    return None  # viewport units: unknown without a viewport


def font_size_px(value: str, parent_px: float) -> float | None:
    """A ``font-size`` value in px, given the parent's.

    >>> font_size_px("0", 16), font_size_px("150%", 10), font_size_px("small", 16)
    (0.0, 15.0, 13.0)
    """
    value = value.strip().lower()
    if value in _FONT_KEYWORDS:
        return _FONT_KEYWORDS[value]
    if value in ("smaller", "larger"):
        return parent_px * (0.8 if value == "smaller" else 1.2)
    return length_px(value, parent_px, parent_px)


def font_shorthand_size(value: str, parent_px: float) -> float | None:
    """The size in a ``font`` shorthand (``font: 0/0 a``, ``bold 12px/1.5 serif``).

    >>> font_shorthand_size("0/0 a", 16), font_shorthand_size("italic bold 12px/30px Georgia", 16)
    (0.0, 12.0)
    """
    for token in re.split(r"[\s/]+", value.strip()):
        size = font_size_px(token, parent_px)
        if size is not None:
            return size
    return None


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two opaque colours (1: the same, 21: black on white).

    >>> round(contrast((0, 0, 0, 1), (255, 255, 255, 1)), 1)
    21.0
    """
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _luminance(c: Color) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])


def over(top: Color, under: Color) -> Color:
    """``top`` painted over an opaque ``under``."""
    a = top[3]
    return (top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a), top[2] * a + under[2] * (1 - a), 1.0)
