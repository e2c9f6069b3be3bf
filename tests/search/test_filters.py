"""The filter language (index.search.filters): what it accepts, what it refuses with one line,
and that the compiled Arrow expression keeps exactly the rows a plain SQL reading keeps."""

from __future__ import annotations

import datetime as dt
import json
import re

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from index.search.filters import compile_filter, filter_table
from schemas.errors import FilterError, SpanindexError

from conftest import examples

# -- a plain-Python reading of the same expressions, in SQL's three-valued logic (None: unknown) ---

TEXT_COLUMNS = ["doc_id", "title", "modified"]
NUMBER_COLUMNS = ["pages"]
META_KEYS = ["team", "year", "flag"]
WORDS = st.text(alphabet="aAbé/%_.", max_size=4)
NUMBERS = st.one_of(st.integers(-3, 5), st.sampled_from([1.5, -0.5, 2024, 2025]))
DATES = st.sampled_from(["2024", "2024-06-01", "2024-06-01T12:00:00Z", "2025-01-01", "2023-12-31T23:59:59Z"])


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _sql_literal(value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return _sql_text(value)
    return repr(value)


def _operand_sql(operand) -> str:
    kind, name = operand
    return f"meta[{_sql_text(name)}]" if kind == "meta" else name


def _kind(value) -> str:
    return "bool" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else "text"


def _value(row: dict, operand, literal_kind: str | None):
    """A column's value in ``row``; a meta value only where it is of the literal's kind."""
    kind, name = operand
    if kind != "meta":
        return row[name]
    value = row["meta"].get(name)
    if literal_kind is None:
        return value
    return value if value is not None and _kind(value) == literal_kind else None


def _like(value: str, pattern: str, ignore_case: bool) -> bool:
    regex, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.fullmatch("".join(regex), value, re.DOTALL | (re.IGNORECASE if ignore_case else 0)) is not None


def _compare(a, op: str, b):
    if a is None or b is None:
        return None
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _not(v):
    return None if v is None else not v


def evaluate(node, row: dict):
    tag = node[0]
    if tag == "and":
        a, b = evaluate(node[1], row), evaluate(node[2], row)
        return False if a is False or b is False else None if a is None or b is None else True
    if tag == "or":
        a, b = evaluate(node[1], row), evaluate(node[2], row)
        return True if a is True or b is True else None if a is None or b is None else False
    if tag == "not":
        return _not(evaluate(node[1], row))
    if tag == "cmp":
        _, operand, op, literal = node
        return _compare(_value(row, operand, _kind(literal)), op, literal)
    if tag == "like":
        _, operand, pattern, ignore_case, negate = node
        value = _value(row, operand, "text")
        result = None if value is None else _like(value, pattern, ignore_case)
        return _not(result) if negate else result
    if tag == "in":
        _, operand, values, negate = node
        value = _value(row, operand, _kind(values[0]))
        result = None if value is None else value in values
        return _not(result) if negate else result
    if tag == "between":
        _, operand, low, high, negate = node
        value = _value(row, operand, _kind(low))
        result = evaluate(("and", ("lit", _compare(value, ">=", low)), ("lit", _compare(value, "<=", high))), row)
        return _not(result) if negate else result
    if tag == "lit":
        return node[1]
    if tag == "isnull":
        _, operand, negate = node
        result = _value(row, operand, None) is None
        return not result if negate else result
    if tag == "bool":
        return _value(row, node[1], "bool")
    raise AssertionError(node)


def render(node) -> str:
    tag = node[0]
    if tag in ("and", "or"):
        return f"({render(node[1])}) {tag.upper()} ({render(node[2])})"
    if tag == "not":
        return f"NOT ({render(node[1])})"
    if tag == "cmp":
        return f"{_operand_sql(node[1])} {node[2]} {_sql_literal(node[3])}"
    if tag == "like":
        _, operand, pattern, ignore_case, negate = node
        return f"{_operand_sql(operand)} {'NOT ' if negate else ''}{'ILIKE' if ignore_case else 'LIKE'} {_sql_text(pattern)}"
    if tag == "in":
        _, operand, values, negate = node
        return f"{_operand_sql(operand)} {'NOT ' if negate else ''}IN ({', '.join(map(_sql_literal, values))})"
    if tag == "between":
        _, operand, low, high, negate = node
        return f"{_operand_sql(operand)} {'NOT ' if negate else ''}BETWEEN {_sql_literal(low)} AND {_sql_literal(high)}"
    if tag == "isnull":
        return f"{_operand_sql(node[1])} IS {'NOT ' if node[2] else ''}NULL"
    if tag == "bool":
        return _operand_sql(node[1])
    raise AssertionError(node)


# -- generated expressions and rows ----------------------------------------------------------

TEXT_OPERANDS = st.sampled_from([("col", c) for c in TEXT_COLUMNS] + [("meta", k) for k in META_KEYS])
NUMBER_OPERANDS = st.sampled_from([("col", c) for c in NUMBER_COLUMNS] + [("meta", k) for k in META_KEYS])
BOOL_OPERANDS = st.sampled_from([("col", "ocr")] + [("meta", k) for k in META_KEYS])
OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _text_literal(operand):
    return DATES if operand == ("col", "modified") else WORDS


leaves = st.one_of(
    TEXT_OPERANDS.flatmap(lambda o: st.tuples(st.just("cmp"), st.just(o), OPS, _text_literal(o))),
    NUMBER_OPERANDS.flatmap(lambda o: st.tuples(st.just("cmp"), st.just(o), OPS, NUMBERS)),
    BOOL_OPERANDS.flatmap(lambda o: st.tuples(st.just("cmp"), st.just(o), st.sampled_from(["=", "<>"]), st.booleans())),
    st.tuples(st.just("like"), TEXT_OPERANDS, WORDS.filter(lambda p: not p.endswith("\\")), st.booleans(), st.booleans()),
    st.tuples(st.just("in"), TEXT_OPERANDS, st.lists(WORDS, min_size=1, max_size=3), st.booleans()),
    st.tuples(st.just("in"), NUMBER_OPERANDS, st.lists(NUMBERS, min_size=1, max_size=3), st.booleans()),
    st.tuples(st.just("between"), NUMBER_OPERANDS, NUMBERS, NUMBERS, st.booleans()),
    st.tuples(st.just("isnull"), st.one_of(TEXT_OPERANDS, NUMBER_OPERANDS, BOOL_OPERANDS), st.booleans()),
    st.tuples(st.just("bool"), BOOL_OPERANDS),
)
expressions = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["and", "or"]), inner, inner),
        st.tuples(st.just("not"), inner),
    ),
    max_leaves=6,
)
META_VALUES = st.one_of(st.none(), st.sampled_from(["legal", "ops", "a%", "2024"]), st.integers(2023, 2026), st.booleans(),
                        st.just(1.5))
rows = st.lists(
    st.fixed_dictionaries({
        "doc_id": WORDS,
        "title": st.one_of(st.none(), WORDS),
        "pages": st.one_of(st.none(), st.integers(-2, 6)),
        "mtime_s": st.one_of(st.just(0), st.integers(1_700_000_000, 1_740_000_000)),
        "ocr": st.booleans(),
        "meta": st.dictionaries(st.sampled_from(META_KEYS), META_VALUES, max_size=3),
    }),
    min_size=1, max_size=8,
)


def _arrow_rows(generated: list[dict]) -> tuple[pa.Table, list[dict]]:
    """The rows as a documents table (the columns a filter reads), and as the reference reads them."""
    table = pa.table({
        "doc_id": pa.array([r["doc_id"] for r in generated], pa.string()),
        "title": pa.array([r["title"] for r in generated], pa.string()),
        "n_pages": pa.array([r["pages"] for r in generated], pa.int32()),
        "source_mtime_ns": pa.array([r["mtime_s"] * 1_000_000_000 + 123 if r["mtime_s"] else 0 for r in generated], pa.int64()),
        "metadata": pa.array([json.dumps(r["meta"]) for r in generated], pa.string()),
    })
    reference = []
    for r in generated:
        modified = (dt.datetime.fromtimestamp(r["mtime_s"], dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                    if r["mtime_s"] else None)
        reference.append({**r, "modified": modified})
    return table, reference


@settings(max_examples=examples(300))
@given(expression=expressions, generated=rows)
@example(expression=("not", ("in", ("col", "title"), ["a"], False)), generated=[
    {"doc_id": "a", "title": None, "pages": None, "mtime_s": 0, "ocr": False, "meta": {}}])
@example(expression=("cmp", ("meta", "year"), ">=", 2024), generated=[
    {"doc_id": "a", "title": "t", "pages": 1, "mtime_s": 0, "ocr": False, "meta": {"year": "2025"}},
    {"doc_id": "b", "title": "t", "pages": 1, "mtime_s": 0, "ocr": True, "meta": {"year": 2025}},
    {"doc_id": "c", "title": "t", "pages": 1, "mtime_s": 0, "ocr": True, "meta": {"year": True}}])
@example(expression=("not", ("cmp", ("col", "modified"), "=", "2024")), generated=[
    {"doc_id": "", "title": None, "pages": None, "mtime_s": 0, "ocr": False, "meta": {}}])
def test_compiled_filter_keeps_the_rows_sql_three_valued_logic_keeps(expression, generated):
    table, reference = _arrow_rows(generated)
    flt = compile_filter(render(expression))
    ocr_ids = [r["doc_id"] for r in generated if r["ocr"]]
    # doc_ids may repeat in generated rows: ocr is then read per doc_id, as the index reads it
    ocr_of = {r["doc_id"] for r in generated if r["ocr"]}
    kept = filter_table(table, flt, lambda: ocr_ids).filter(flt.expression)
    expected = [i for i, row in enumerate(reference) if evaluate(expression, {**row, "ocr": row["doc_id"] in ocr_of}) is True]
    positions = pa.table({"i": list(range(len(generated)))})
    kept_positions = filter_table(table.append_column("position", positions.column("i")), flt,
                                  lambda: ocr_ids).filter(flt.expression).column("position").to_pylist()
    assert kept_positions == expected, render(expression)
    assert kept.num_rows == len(expected)


@pytest.mark.hostile("a filter that calls a function, runs a subquery, names an unknown column or holds two "
                     "statements", "CLI error: one line naming what is not allowed")
@pytest.mark.parametrize("where, says", [
    ("lower(title) = 'x'", "lower() is not allowed"),
    ("read_csv('/etc/passwd') IS NULL", "is not allowed"),
    ("doc_id IN (SELECT doc_id FROM documents)", "not a query"),
    ("doc_id = 'a' UNION SELECT 1", "subquery is not allowed"),
    ("doc_id = 'a'; DROP TABLE documents", "one expression, not 2 statements"),
    ("author = 'x'", "unknown column 'author'"),
    ("doc_id = \"contracts\"", "text is in single quotes"),
    ("meta.team = 'legal'", "meta['team']"),
    ("pages = 'ten'", "compares number with text"),
    ("title = NULL", "use IS NULL"),
    ("pages", "not a condition"),
    ("pages + 1 > 2", "is not allowed"),
    ("title LIKE title", "quoted pattern"),
    ("doc_id = ", "is not a SQL expression"),
    ("", "empty filter"),
    ("(" * 5000, "at most 4096"),
])
def test_a_bad_filter_is_one_line_naming_what_is_wrong(where, says):
    with pytest.raises(FilterError) as caught:
        compile_filter(where)
    message = str(caught.value)
    assert says in message and "\n" not in message
    assert isinstance(caught.value, SpanindexError)


def test_columns_follow_the_documents_schema_so_a_new_column_is_a_filter_column():
    from schemas.tables import DOCUMENTS

    assert "language" in str(compile_filter("language = 'de'").expression)  # documents.language, format 8
    with pytest.raises(FilterError, match="unknown column 'licence'"):
        compile_filter("licence = 'cc-by'")
    widened = DOCUMENTS.append(pa.field("licence", pa.string()))
    assert "licence" in str(compile_filter("licence = 'cc-by'", widened).expression)
    with pytest.raises(FilterError, match="unknown column 'title'"):
        compile_filter("title = 'x'", DOCUMENTS.remove(DOCUMENTS.get_field_index("title")))
