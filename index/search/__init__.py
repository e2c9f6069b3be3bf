"""Search a generation: dense (FAISS), lexical (BM25) and hybrid (fused) rankings of chunks.

``modes`` embeds a query and runs the chosen mode, ``lexical`` reads the BM25 postings,
``fusion`` merges rankings, ``hit_links`` says where a hit opens (locator, live address).
"""
