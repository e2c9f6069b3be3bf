"""Document text to chunks: normalised views with maps back, hidden runs, the chunker.

Takes a ``ParsedDocument``'s text and hidden runs and the model's tokenizer; gives chunks whose
offsets index the unnormalised text exactly (``chunker``), the strings that are embedded and
matched (``normalize``, each with its map back to the text) and the hidden-text queries both
need (``hidden``), each chunk's section context: the document's title and the headings above
it (``sections``), and the language of each chunk and of the document (``language``). The reader
imports these too: it must normalise as the writer did.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "chunker": ["chunk_spans", "embed_text", "make_chunks"],
    "hidden": ["HiddenText"],
    "sections": ["SectionPaths", "document_title", "section_text"],
    "language": ["LANGUAGE_VERSION", "chunk_languages", "identify_language", "preload_identifier"],
    "normalize": ["NORMALIZER_VERSION", "NormalizedText", "is_no_space_script", "normalize",
                  "normalize_with_map"],
})
