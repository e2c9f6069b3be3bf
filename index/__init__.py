"""The index as a reader sees it: open a generation, search, resolve, verify, check.

>>> import index
>>> idx = index.open("build/sample-index")        # doctest: +SKIP
>>> hits = idx.search("overage price", k=5)         # doctest: +SKIP
"""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

__all__ = ["Index", "__version__", "live_frame", "live_sql", "open", "open_index"]

# `index.open(DIR)` is the documented entry point. The reader (and pyarrow with it) is imported
# when first asked for, not with the package: the `spanindex` command chooses Arrow's memory pool
# before anything imports pyarrow (index.cli).
_READER_NAMES = {"Index": "Index", "open_index": "open_index", "open": "open_index"}


def __getattr__(name: str):
    if name in _READER_NAMES:
        from index import reader

        return getattr(reader, _READER_NAMES[name])
    if name in ("live_sql", "live_frame"):  # a table's live rows for DuckDB and Polars
        from index import live_tables

        return getattr(live_tables, name)
    raise AttributeError(f"module 'index' has no attribute {name!r}")
