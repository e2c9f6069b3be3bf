"""Search filters: a SQL boolean expression over the documents' columns, compiled to Arrow.

``--where "doc_id LIKE 'contracts/%' AND media_type = 'application/pdf'"`` is parsed by
sqlglot into an AST, checked against a whitelist, and compiled to a ``pyarrow.compute``
expression over the live documents table; it is never handed to a SQL engine, so a filter
cannot call a function, read a file or run anything. Accepted: column names, string, number
and TRUE/FALSE literals, AND / OR / NOT, parentheses, ``= <> != < <= > >=``, ``[NOT] LIKE``
and ``ILIKE`` (``%`` any run, ``_`` one character, ``\\`` escapes either), ``[NOT] IN (...)``,
``[NOT] BETWEEN``, ``IS [NOT] NULL``, a true/false column alone (``ocr``), and
``meta['key']`` for the user's own metadata. NULL follows SQL: a comparison with a missing
value is unknown, and a document passes only where the whole expression is true.

The columns are the documents table's own (``schemas.tables.DOCUMENTS``, so a column added
there is a filter column at once) under the names of ``ALIASES`` too, and two derived ones:
``modified`` (the file's mtime at build, ISO 8601 UTC, ``2025-03-01T09:30:00Z``; dates
compare as text, so ``modified >= '2025-01-01'`` works) and ``ocr`` (whether OCR read any of
the document's pages). ``meta['key']`` is the value of ``key`` in the document's metadata
(``documents.metadata``, a JSON object); it matches a literal of its own JSON type only
(``meta['year'] = 2024`` finds the number 2024, not the string "2024").

>>> compile_filter("doc_id LIKE 'contracts/%' AND pages > 2").expression
<pyarrow.compute.Expression (match_like(doc_id, {pattern="contracts/%", ignore_case=false}) and (n_pages > 2))>
>>> compile_filter("lower(title) = 'x'")
Traceback (most recent call last):
...
schemas.errors.FilterError: filter "lower(title) = 'x'": lower() is not allowed (a filter takes columns, literals, AND/OR/NOT, comparisons, LIKE, IN, BETWEEN and IS NULL)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa
import pyarrow.compute as pc

from schemas.errors import FilterError
from schemas.tables import DOCUMENTS

MAX_FILTER_CHARS = 4096  # a filter is a line a person or a framework writes, not a program

# Filter names of documents columns whose stored names are not what a user would type.
ALIASES = {"pages": "n_pages"}
META = "meta"  # meta['key']: the user's metadata, stored as documents.METADATA_COLUMN
METADATA_COLUMN = "metadata"
MODIFIED = "modified"  # derived from documents.source_mtime_ns
OCR = "ocr"  # derived from pdf_pages.ocr
HIDDEN_COLUMNS = {METADATA_COLUMN}  # read through meta['key'] only


class Kind(StrEnum):
    TEXT = "text"
    NUMBER = "number"
    BOOL = "true/false"


@dataclass(frozen=True, slots=True)
class DocumentFilter:
    """A compiled filter: its text, the Arrow expression, and the derived columns it reads
    that ``filter_table`` adds: ``modified`` and ``ocr`` by name, and ``meta[key]`` as
    (column, key, kind) views."""

    where: str
    expression: pc.Expression
    derived: frozenset[str]
    meta_views: tuple[tuple[str, str, Kind | None], ...] = ()


def filter_columns(schema: pa.Schema = DOCUMENTS) -> dict[str, tuple[str, Kind]]:
    """Filter column name -> (the column it reads, its kind), for a documents schema.

    >>> filter_columns()["pages"]
    ('n_pages', <Kind.NUMBER: 'number'>)
    """
    columns: dict[str, tuple[str, Kind]] = {}
    for field in schema:
        kind = _kind_of(field.type)
        if kind is not None and field.name not in HIDDEN_COLUMNS:
            columns[field.name] = (field.name, kind)
    for alias, name in ALIASES.items():
        if name in columns:
            columns[alias] = columns[name]
    if "source_mtime_ns" in columns:
        columns[MODIFIED] = (MODIFIED, Kind.TEXT)
    columns[OCR] = (OCR, Kind.BOOL)
    return columns


def _kind_of(arrow_type: pa.DataType) -> Kind | None:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return Kind.TEXT
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return Kind.NUMBER
    if pa.types.is_boolean(arrow_type):
        return Kind.BOOL
    return None


def meta_column(key: str, kind: Kind | None) -> str:
    """The derived column of ``meta[key]``'s values of one kind (None: any kind, as JSON text)."""
    return f"meta[{key!r}]:{kind.value if kind else 'json'}"


def compile_filter(where: str, schema: pa.Schema = DOCUMENTS) -> DocumentFilter:
    """``where`` parsed, checked and compiled; a ``FilterError`` naming what is wrong otherwise."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    if not isinstance(where, str):
        raise FilterError(f"a filter is text (a SQL condition), not {type(where).__name__}")
    if not where.strip():
        raise FilterError("empty filter: give a SQL boolean expression such as \"media_type = 'application/pdf'\"")
    if len(where) > MAX_FILTER_CHARS:
        raise FilterError(f"filter of {len(where)} characters: at most {MAX_FILTER_CHARS}")
    try:
        statements = [s for s in sqlglot.parse(where) if s is not None]
    except (SqlglotError, RecursionError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise FilterError(f"filter {where!r} is not a SQL expression: {first}") from None
    if len(statements) != 1:
        raise FilterError(f"filter {where!r}: one expression, not {len(statements)} statements")
    compiler = _Compiler(where, filter_columns(schema))
    try:
        expression = compiler.predicate(statements[0])
    except RecursionError:
        raise FilterError(f"filter {where!r}: nested too deeply") from None
    views = tuple((column, key, kind) for column, (key, kind) in sorted(compiler.meta_views.items()))
    return DocumentFilter(where, expression, frozenset(compiler.derived), views)


class _Compiler:
    """One filter's AST -> an Arrow expression, checking every node against the whitelist."""

    def __init__(self, where: str, columns: dict[str, tuple[str, Kind]]) -> None:
        self.where = where
        self.columns = columns
        self.derived: set[str] = set()
        self.meta_views: dict[str, tuple[str, Kind | None]] = {}

    def fail(self, message: str) -> FilterError:
        return FilterError(f"filter {self.where!r}: {message}")

    def predicate(self, node) -> pc.Expression:
        """A node that is true, false or unknown for each document."""
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, exp.And):
            return self.predicate(node.this) & self.predicate(node.expression)
        if isinstance(node, exp.Or):
            return self.predicate(node.this) | self.predicate(node.expression)
        if isinstance(node, exp.Not):
            return ~self.predicate(node.this)
        if isinstance(node, exp.Boolean):
            return pc.scalar(bool(node.this))
        if isinstance(node, (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)):
            return self.comparison(node)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self.negated(node, self.like(node))
        if isinstance(node, exp.In):
            return self.negated(node, self.member(node))
        if isinstance(node, exp.Between):
            return self.negated(node, self.between(node))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.fail(f"{node.sql()}: IS takes NULL only (IS NULL, IS NOT NULL)")
            operand = self.operand(node.this, None)
            if operand.literal:
                raise self.fail(f"{node.sql()}: IS NULL takes a column")
            return operand.expression.is_null()
        operand = self.operand(node, Kind.BOOL)
        if operand.kind is not Kind.BOOL:
            raise self.fail(f"{node.sql()} is {operand.kind.value}, not a condition (compare it: = <> < > LIKE IN ...)")
        return operand.expression

    def negated(self, node, expression: pc.Expression) -> pc.Expression:
        return ~expression if node.args.get("negate") else expression

    def comparison(self, node) -> pc.Expression:
        from sqlglot import exp

        left, right = self.pair(node.this, node.expression, node)
        op = type(node)
        if left.kind is Kind.BOOL and op not in (exp.EQ, exp.NEQ):
            raise self.fail(f"{node.sql()}: true/false values compare with = and <> only")
        a, b = left.expression, right.expression
        if op is exp.EQ:
            return a == b
        if op is exp.NEQ:
            return a != b
        if op is exp.LT:
            return a < b
        if op is exp.LTE:
            return a <= b
        if op is exp.GT:
            return a > b
        return a >= b

    def like(self, node) -> pc.Expression:
        from sqlglot import exp

        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise self.fail(f"{node.sql()}: LIKE takes a quoted pattern ('contracts/%')")
        subject = self.operand(node.this, Kind.TEXT)
        if subject.kind is not Kind.TEXT or subject.literal:
            raise self.fail(f"{node.sql()}: LIKE matches a text column")
        return pc.match_like(subject.expression, pattern.this, ignore_case=isinstance(node, exp.ILike))

    def member(self, node) -> pc.Expression:
        if node.args.get("query") is not None or node.args.get("unnest") is not None or node.args.get("field"):
            raise self.fail(f"{node.sql()}: IN takes a list of literals, not a query")
        values = [self.literal(v) for v in node.expressions]
        if not values:
            raise self.fail(f"{node.sql()}: IN takes a list of literals")
        kinds = {kind for _, kind in values}
        if len(kinds) > 1:
            raise self.fail(f"{node.sql()}: an IN list holds values of one kind")
        kind = kinds.pop()
        subject = self.operand(node.this, kind)
        if subject.literal:
            raise self.fail(f"{node.sql()}: IN tests a column")
        self.check_kinds(subject.kind, kind, node)
        value_set = pa.array([v for v, _ in values], _ARROW_TYPES[kind])
        # SQL: a missing value is in no list and out of none (is_in alone would say "not in").
        return pc.if_else(subject.expression.is_valid(), pc.is_in(subject.expression, value_set),
                          pa.scalar(None, pa.bool_()))

    def between(self, node) -> pc.Expression:
        low = self.pair(node.this, node.args["low"], node)
        high = self.pair(node.this, node.args["high"], node)
        if low[0].kind is Kind.BOOL:
            raise self.fail(f"{node.sql()}: BETWEEN takes numbers or text")
        return (low[0].expression >= low[1].expression) & (high[0].expression <= high[1].expression)

    def pair(self, left_node, right_node, node) -> tuple[_Operand, _Operand]:
        """Two compared operands of one kind (``meta[...]`` takes the kind of the literal it meets)."""
        from sqlglot import exp

        for side in (left_node, right_node):
            if isinstance(side, exp.Null):
                raise self.fail(f"{node.sql()}: nothing equals NULL; use IS NULL or IS NOT NULL")
        left_hint = self.literal_kind(right_node)
        right_hint = self.literal_kind(left_node)
        left = self.operand(left_node, left_hint)
        right = self.operand(right_node, right_hint)
        if left.kind is None or right.kind is None:
            raise self.fail(f"{node.sql()}: compare meta[...] with a literal")
        if left.literal and right.literal:
            raise self.fail(f"{node.sql()}: compares two literals; name a column")
        self.check_kinds(left.kind, right.kind, node)
        return left, right

    def check_kinds(self, left: Kind, right: Kind, node) -> None:
        if left is not right:
            raise self.fail(f"{node.sql()}: compares {left.value} with {right.value}")

    def literal_kind(self, node) -> Kind | None:
        from sqlglot import exp

        if isinstance(node, (exp.Literal, exp.Neg, exp.Boolean)):
            return self.literal(node)[1]
        return None

    def literal(self, node) -> tuple[object, Kind]:
        from sqlglot import exp

        if isinstance(node, exp.Boolean):
            return bool(node.this), Kind.BOOL
        negative = isinstance(node, exp.Neg)
        inner = node.this if negative else node
        if isinstance(inner, exp.Literal) and not (negative and inner.is_string):
            if inner.is_string:
                return inner.this, Kind.TEXT
            number = _number(inner.this)
            if number is None:
                raise self.fail(f"{node.sql()} is not a number")
            return (-number if negative else number), Kind.NUMBER
        if isinstance(node, exp.Null):
            raise self.fail("NULL in a list: test for it with IS NULL")
        raise self.fail(f"{node.sql()}: expected a literal ('text', a number, TRUE or FALSE)")

    def operand(self, node, hint: Kind | None) -> _Operand:
        """A column, ``meta['key']`` (read as ``hint``) or a literal."""
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self.operand(node.this, hint)
        if isinstance(node, (exp.Literal, exp.Neg, exp.Boolean)):
            value, kind = self.literal(node)
            return _Operand(pc.scalar(value), kind, literal=True)
        if isinstance(node, exp.Bracket):
            return self.meta(node, hint)
        if isinstance(node, exp.Column):
            if node.table:
                raise self.fail(f"unknown column {node.sql()}" + (
                    f": user metadata is meta['{node.name}']" if node.table == META else ""))
            name = node.name
            if name not in self.columns:
                hint_text = " (text is in single quotes)" if node.this.quoted else ""
                raise self.fail(f"unknown column {name!r}{hint_text}; the columns are "
                                f"{', '.join(sorted(self.columns))} and meta['key']")
            source, kind = self.columns[name]
            if source in (MODIFIED, OCR):
                self.derived.add(source)
            return _Operand(pc.field(source), kind)
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            raise self.fail(f"{name}() is not allowed (a filter takes columns, literals, AND/OR/NOT, "
                            "comparisons, LIKE, IN, BETWEEN and IS NULL)")
        if isinstance(node, (exp.Select, exp.Subquery, exp.Query)):
            raise self.fail("a subquery is not allowed")
        if isinstance(node, exp.Null):
            raise self.fail("NULL is not a value here; use IS NULL or IS NOT NULL")
        raise self.fail(f"{type(node).__name__.lower()} ({node.sql()}) is not allowed (a filter takes columns, "
                        "literals, AND/OR/NOT, comparisons, LIKE, IN, BETWEEN and IS NULL)")

    def meta(self, node, hint: Kind | None) -> _Operand:
        from sqlglot import exp

        target = node.this
        keys = node.expressions
        if not (isinstance(target, exp.Column) and not target.table and target.name == META):
            raise self.fail(f"{node.sql()}: only meta['key'] is indexed")
        if len(keys) != 1 or not (isinstance(keys[0], exp.Literal) and keys[0].is_string):
            raise self.fail(f"{node.sql()}: a metadata key is one quoted name, meta['team']")
        column = meta_column(keys[0].this, hint)
        self.meta_views[column] = (keys[0].this, hint)
        return _Operand(pc.field(column), hint)


@dataclass(frozen=True, slots=True)
class _Operand:
    expression: pc.Expression
    kind: Kind | None  # None: meta[...] whose kind no literal has told
    literal: bool = False


_ARROW_TYPES = {Kind.TEXT: pa.string(), Kind.NUMBER: pa.float64(), Kind.BOOL: pa.bool_()}


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


# -- writing filters: what a framework's own filter objects are turned into ---------------------


def sql_literal(value) -> str:
    """``value`` as a filter literal: text quoted (quotes doubled), numbers, TRUE/FALSE.

    >>> sql_literal("O'Brien"), sql_literal(3), sql_literal(False)
    ("'O''Brien'", '3', 'FALSE')
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (int, float)) and math.isfinite(value):
        return repr(value)
    raise FilterError(f"{value!r} cannot be a filter value: text, a number, true or false")


def like_containing(text: str) -> str:
    r"""A LIKE pattern matching any text that contains ``text`` (its % _ and \ escaped).

    >>> print(like_containing("50%_off"))
    %50\%\_off%
    """
    return "%" + "".join("\\" + c if c in "%_\\" else c for c in text) + "%"


def column_or_meta(key: str) -> str:
    """A filter operand for a metadata key of a framework: a documents column where one has
    that name, else the user's own ``meta['key']``.

    >>> column_or_meta("doc_id"), column_or_meta("team")
    ('doc_id', "meta['team']")
    """
    return key if key in filter_columns() else f"meta[{sql_literal(str(key))}]"


# -- evaluating: the documents table with the derived columns a filter reads ---------------


def filter_table(documents: pa.Table, flt: DocumentFilter, ocr_doc_ids: Callable[[], Sequence[str]]) -> pa.Table:
    """``documents`` with the derived columns ``flt`` reads: ``modified``, ``ocr`` (from
    ``ocr_doc_ids()``, the documents OCR read a page of) and its ``meta[...]`` views.

    >>> t = pa.table({"doc_id": ["a"], "source_mtime_ns": [1_700_000_000_500_000_000], "metadata": ['{"n": 3}']})
    >>> flt = compile_filter("modified > '2023' AND meta['n'] = 3")
    >>> filter_table(t, flt, lambda: []).to_pylist()[0]
    {'doc_id': 'a', 'source_mtime_ns': 1700000000500000000, 'metadata': '{"n": 3}', 'modified': '2023-11-14T22:13:20Z', "meta['n']:number": 3.0}
    >>> filter_table(t, flt, lambda: []).filter(flt.expression).num_rows
    1
    """
    if MODIFIED in flt.derived:
        documents = documents.append_column(MODIFIED, iso_utc(documents.column("source_mtime_ns")))
    if OCR in flt.derived:
        read = pa.array(sorted(set(ocr_doc_ids())), pa.string())
        documents = documents.append_column(OCR, pc.is_in(documents.column("doc_id"), read))
    if flt.meta_views:
        if METADATA_COLUMN not in documents.column_names:
            raise FilterError("this index keeps no user metadata (documents.metadata): meta['key'] needs a rebuild")
        objects = _metadata_objects(documents.column(METADATA_COLUMN))
        for column, key, kind in flt.meta_views:
            documents = documents.append_column(column, meta_values(objects, key, kind))
    return documents


def iso_utc(mtime_ns: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Nanoseconds since the epoch as ISO 8601 UTC to the second; 0 (unknown) as null."""
    mtime_ns = pc.if_else(pc.equal(mtime_ns, 0), pa.scalar(None, pa.int64()), mtime_ns)
    seconds = pc.cast(pc.cast(mtime_ns, pa.timestamp("ns", "UTC")), pa.timestamp("s", "UTC"), safe=False)
    return pc.strftime(seconds, format="%Y-%m-%dT%H:%M:%SZ")


def _metadata_objects(column: pa.ChunkedArray) -> list[dict]:
    """Each row's metadata object (parsed once per distinct JSON text: documents often share one)."""
    encoded = column.combine_chunks().dictionary_encode()
    parsed = [_object(text) for text in encoded.dictionary.to_pylist()]
    return [parsed[i] if i is not None else {} for i in encoded.indices.to_pylist()]


def _object(text: str | None) -> dict:
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def meta_values(objects: Sequence[dict], key: str, kind: Kind | None) -> pa.Array:
    """``key``'s value in each object where it is of ``kind`` (None: any, as JSON), else null.

    >>> meta_values([{"y": 2024}, {"y": "2024"}, {"y": True}, {}], "y", Kind.NUMBER).to_pylist()
    [2024.0, None, None, None]
    """
    out = []
    for obj in objects:
        value = obj.get(key)
        if kind is None:
            out.append(None if value is None else json.dumps(value, sort_keys=True))
        elif _json_kind(value) is kind:
            out.append(value)
        else:
            out.append(None)
    return pa.array(out, _ARROW_TYPES[kind] if kind else pa.string())


def _json_kind(value) -> Kind | None:
    if isinstance(value, bool):
        return Kind.BOOL
    if isinstance(value, (int, float)):
        return Kind.NUMBER
    if isinstance(value, str):
        return Kind.TEXT
    return None
