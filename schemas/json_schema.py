"""The JSON side of the contract, generated from its record types.

One rule turns a field's type into JSON, for the codec (``schemas.record_json``)
and for the JSON Schemas alike: strings, numbers, booleans and null as
themselves; a closed vocabulary (a StrEnum) as its value, and an optional one
(``MediaType | None``) as ``""`` while unset; tuples and lists as arrays; dicts
as objects; records (frozen dataclasses) as objects of their fields, in order.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from enum import StrEnum

DRAFT = "https://json-schema.org/draft/2020-12/schema"
UNSET = ""  # what an optional vocabulary field holds in JSON while it is None

_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def optional_vocabulary(hint: object) -> type[StrEnum] | None:
    """The StrEnum of a field typed ``SomeStrEnum | None`` (written as its value, or ``""``), else None.

    >>> from schemas.records import MediaType
    >>> optional_vocabulary(MediaType | None), optional_vocabulary(str | None)
    (<enum 'MediaType'>, None)
    """
    if not isinstance(hint, types.UnionType):
        return None
    args = typing.get_args(hint)
    enums = [a for a in args if isinstance(a, type) and issubclass(a, StrEnum)]
    if len(args) == 2 and type(None) in args and len(enums) == 1:
        return enums[0]
    return None


@functools.cache
def field_types(cls: type) -> dict[str, object]:
    """The declared type of each field of a record, names resolved."""
    return typing.get_type_hints(cls)


def value_schema(hint: object, ref: str = "#/$defs/", records: dict[str, type] | None = None) -> dict:
    """The JSON Schema of a value of type ``hint``; records become ``$ref``s (collected in ``records``)."""
    if records is None:
        records = {}
    vocabulary = optional_vocabulary(hint)
    if vocabulary is not None:
        return {"type": "string", "enum": [member.value for member in vocabulary] + [UNSET]}
    if isinstance(hint, types.UnionType):
        args = typing.get_args(hint)
        if all(a in _PRIMITIVES for a in args):
            return {"type": [_PRIMITIVES[a] for a in args]}
        return {"anyOf": [value_schema(a, ref, records) for a in args]}
    if dataclasses.is_dataclass(hint):
        records[hint.__name__] = hint
        return {"$ref": ref + hint.__name__}
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if hint in _PRIMITIVES:
        return {"type": _PRIMITIVES[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (tuple, list):
        return {"type": "array", "items": value_schema(args[0], ref, records)}
    if origin is dict:
        return {"type": "object", "additionalProperties": value_schema(args[1], ref, records)}
    raise TypeError(f"no JSON form for {hint!r}")


def record_schemas(
    root: type,
    *,
    ref: str = "#/$defs/",
    required: Mapping[type, Sequence[str]] | None = None,
    omit: Collection[str] = (),
) -> dict[str, dict]:
    """Name -> object schema of ``root`` and of every record it contains, nested ones by ``$ref``.

    Every field is required (the codec writes them all) unless ``required`` names a
    record's required fields; fields named in ``omit`` are left out (internal state).

    >>> from schemas.records import Rect
    >>> record_schemas(Rect)["Rect"]["required"]
    ['page', 'x0', 'y0', 'x1', 'y1']
    """
    schemas: dict[str, dict] = {}
    pending = {root.__name__: root}
    while pending:
        name, cls = pending.popitem()
        if name in schemas:
            continue
        found: dict[str, type] = {}
        properties = {
            f.name: value_schema(field_types(cls)[f.name], ref, found)
            for f in dataclasses.fields(cls)
            if f.name not in omit
        }
        schemas[name] = {
            "title": name,
            "type": "object",
            "properties": properties,
            "required": list((required or {}).get(cls, properties)),
        }
        description = (cls.__doc__ or "").strip().split("\n\n")[0]
        if description and not description.startswith(name + "("):  # not dataclass's generated signature
            schemas[name]["description"] = " ".join(description.split())
        pending.update((n, c) for n, c in found.items() if n not in schemas)
    return schemas


def json_schema_document(root: type, *, description: str = "", **options) -> dict:
    """A standalone JSON Schema of ``root`` records, the records it contains under ``$defs``."""
    schemas = record_schemas(root, ref="#/$defs/", **options)
    document = {"$schema": DRAFT, **schemas.pop(root.__name__)}
    if description:
        document["description"] = description
    if schemas:
        document["$defs"] = dict(sorted(schemas.items()))
    return document
