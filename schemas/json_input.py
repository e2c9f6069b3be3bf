"""JSON from outside (answers, citation records), read strictly and safely.

Python's ``json`` module accepts what no JSON writer should send and fails on some
hostile input with errors that are not about JSON at all: nesting 100,000 deep is a
``RecursionError``, an integer of 5,001 digits a ``ValueError`` about string conversion,
``NaN`` and ``1e999`` pass as numbers that cannot be written back, and ``"\\ud800"`` gives a
string that cannot be encoded as UTF-8. Here each is one clear error, naming the input
(``JsonInputError``, an ``AnswerFormatError``), and a lone surrogate is found and replaced.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from schemas.errors import AnswerFormatError
from schemas.limits import MAX_INT_DIGITS, MAX_JSON_DEPTH

_SURROGATE = re.compile("[\ud800-\udfff]")
# Strings (escapes included) and everything else: brackets inside strings do not nest.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
REPLACEMENT = "\ufffd"


class JsonInputError(AnswerFormatError):
    """Bytes that are not JSON we read: not UTF-8, not JSON, too deep, a number out of range."""


def loads(data: bytes, where: str) -> object:
    """``data`` as JSON, or a ``JsonInputError`` that says what is wrong with ``where``.

    Strings may still hold lone surrogates (``lone_surrogate`` finds them): what to make
    of one depends on where it is.

    >>> loads(b'{"a": [1, 2.5, "x"]}', "answer.json")
    {'a': [1, 2.5, 'x']}
    >>> loads(b"[" * 100 + b"]" * 100, "answer.json")
    Traceback (most recent call last):
    schemas.json_input.JsonInputError: answer.json: JSON nested 100 levels deep; the limit is 64
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"{where}: not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") from None
    depth = nesting_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise JsonInputError(f"{where}: JSON nested {depth:,} levels deep; the limit is {MAX_JSON_DEPTH}")
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if "\n" in text else f"column {exc.colno}"
        raise JsonInputError(f"{where}: not valid JSON: {exc.msg} ({at})") from None
    except _OutOfRange as exc:
        raise JsonInputError(f"{where}: {exc}") from None
    except RecursionError:  # the depth check makes this unreachable; a clear line if it is not
        raise JsonInputError(f"{where}: JSON nested too deeply to read") from None


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON ``data`` (without parsing it).

    >>> nesting_depth(b'{"a": [[1], "]]]"]}')
    3
    """
    outside_strings = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    if outside_strings.size == 0:
        return 0
    steps = np.isin(outside_strings, (ord("["), ord("{"))).astype(np.int64)
    steps -= np.isin(outside_strings, (ord("]"), ord("}")))
    return int(max(0, np.cumsum(steps).max()))


def lone_surrogate(text: str) -> str:
    """A description of the first lone surrogate in ``text``, or "" when it is Unicode text.

    JSON may write half of a UTF-16 pair (``"\\ud800"``); no document holds one and UTF-8
    cannot encode it.

    >>> lone_surrogate("ok \\ud800 here")
    'a lone surrogate (U+D800) at character 3'
    """
    found = _SURROGATE.search(text)
    return f"a lone surrogate (U+{ord(found.group()):04X}) at character {found.start()}" if found else ""


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder would (offsets kept).

    >>> replace_surrogates("a\\ud800b")
    'a\ufffdb'
    """
    return _SURROGATE.sub(REPLACEMENT, text)


class _OutOfRange(ValueError):
    pass


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _OutOfRange(f"an integer of {len(digits.lstrip('-')):,} digits; the limit is {MAX_INT_DIGITS}")
    return int(digits)


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _OutOfRange(f"the number {literal[:40]} is out of range")
    return value


def _constant(name: str) -> float:
    raise _OutOfRange(f"{name} is not a JSON number")
