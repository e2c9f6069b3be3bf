"""Citations: a model's quotes verified against the chunks they cite and located in the source.

``match`` finds a quote in its chunk (exact, normalised, fuzzy), ``verify`` turns an answer's
supports into citation records, ``locate`` gives pages, rectangles and HTML source ranges,
``fragments`` the URL fragments and offset units, ``drift`` sweeps stored records after a
reindex, ``anthropic_format`` reads and writes Claude's citation blocks.
"""
