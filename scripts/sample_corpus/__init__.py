"""Regenerate sample_corpus/: a small, deterministic knowledge base for tests and benchmarks.

The corpus belongs to an invented SaaS company, Northwind Cloud. Every document holds
sentences that appear in no other document, so that search and quote-verification tests
have something exact to find, and each file exercises one awkward corner of parsing:
page labels, two columns with ligatures and hyphenation, a rotated page, a scanned page,
a crop box, non-Latin scripts, HTML entities and hidden elements, legacy encodings,
CRLF text, and files that must fail cleanly.

Running the script twice gives byte-identical files. The one exception is
bad/encrypted.pdf: AES-256 encryption in MuPDF draws fresh random salts and IVs on every
save, so the script keeps an existing copy whenever it still decrypts (password "secret")
to the intended text, and writes a new one only when it does not.

Modules: `content_pdf` and `content_text` hold the words; `pdf_layout` the PDF layout
primitives; `pdf_documents`, `text_documents` and `bad_inputs` turn the words into file
bytes; `readme` writes sample_corpus/README.md; `checks` holds the self-checks; `cli`
assembles the corpus and writes it.

Usage:
    .venv/bin/python scripts/make_sample_corpus.py            # writes ./sample_corpus/
    .venv/bin/python scripts/make_sample_corpus.py --out /tmp/corpus
    .venv/bin/python -m scripts.sample_corpus --out /tmp/corpus
"""
