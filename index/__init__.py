"""The index as a reader sees it: open a generation, search, resolve, verify, check.

>>> import index
>>> idx = index.open("build/sample-index")        # doctest: +SKIP
>>> hits = idx.search("overage price", k=5)         # doctest: +SKIP
"""

from index.reader import Index, open_index

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

open = open_index  # noqa: A001 - `index.open(DIR)` is the documented entry point

__all__ = ["Index", "__version__", "open", "open_index"]
