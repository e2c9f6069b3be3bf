"""The index as a reader sees it: open a generation, search, resolve, verify, check."""
