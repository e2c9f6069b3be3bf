"""The index as a reader sees it: open a generation, search, resolve, verify, check.

>>> import index
>>> idx = index.open("build/sample-index")        # doctest: +SKIP
>>> hits = idx.search("overage price", k=5)         # doctest: +SKIP
"""

from index.reader import Index, open_index

open = open_index  # noqa: A001 - `index.open(DIR)` is the documented entry point

__all__ = ["Index", "open", "open_index"]
