"""The corpus as a build sees it: which files are documents, under which id, read safely.

``folder`` is a corpus on disk (links, special files, names that are not UTF-8); ``store`` is a
corpus in an object store (``s3://bucket/prefix``, or any fsspec URL whose driver is installed),
listed page by page and read through the store's own driver. Both give a ``Discovery`` of
``CorpusFile``s (doc_id, where to read it) and ``SkippedFile``s with their reason; ``discover``
and ``read_source_bytes`` take either.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "folder": ["CORPUS_METADATA", "SIDECAR_SUFFIX", "CorpusFile", "Discovery", "ListedObject", "NotReadable",
               "SkippedFile", "discover", "is_metadata_file", "read_corpus_file", "read_source_bytes", "safe_doc_id",
               "special_kind", "within"],
    "store": ["StoreFailure", "is_store_url", "listing", "local_path_of", "scrubbed", "shown", "store_failure", "store_location",
              "store_of"],
})
