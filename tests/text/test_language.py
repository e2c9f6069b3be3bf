"""The language of documents and chunks: ISO 639-1 from the text alone, "" where it cannot be told."""

from __future__ import annotations

import collections
import functools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import index
from ingest.text import chunk_languages, identify_language

from conftest import SHARED_CORPUS, needs_shared_corpus

# Documents of ../shared/corpus and the language a reader sees them in.
SHARED_LANGUAGES = {
    "html/trafilatura__football-ua-cyrillic.html": "ru",
    "html/newspaper__arabic_article.html": "ar",
    "html/newspaper__chinese_article.html": "zh",
    "html/readability__qq-gb2312-label.html": "zh",
    "html/chardet__chuo-u-x-sjis.html": "ja",
    "html/trafilatura__ziemniaki-iso-8859-2.html": "pl",
    "html/trafilatura__bundesliga-windows-1252.html": "de",
    "html/trafilatura__rinderleber-mixed-encoding.html": "de",
    "pdf/GeoTopo-komprimiert.pdf": "de",
    "pdf/docling__normal_4pages.pdf": "ko",
    "pdf/docling__right_to_left_03.pdf": "fa",
    "pdf/pdfminer__jo.pdf": "ja",
    "pdf/unstructured__dpr-multi-column.pdf": "en",
    "html/trafilatura__wikipedia-tsne.html": "en",
}


def _shared_text(doc_id: str) -> str:
    from ingest.formats.parse import media_type_of, parse_document

    return parse_document((SHARED_CORPUS / doc_id).read_bytes(), doc_id, media_type_of(doc_id)).parsed.text


@pytest.mark.parametrize("doc_id", sorted(SHARED_LANGUAGES))
def test_each_shared_document_is_identified_in_its_language(doc_id):
    needs_shared_corpus()
    text = _shared_text(doc_id)
    paragraphs = [p for p in text.split("\n\n") if p.strip()] or [text]
    assert chunk_languages(paragraphs, text)[1] == SHARED_LANGUAGES[doc_id]


def test_a_page_that_mixes_languages_gives_each_chunk_its_own_and_the_page_its_main_one():
    needs_shared_corpus()
    lines = [line for line in _shared_text("html/trafilatura__football-ua-cyrillic.html").splitlines() if line.strip()]
    languages, main = chunk_languages(lines, "\n".join(lines))
    def language_of(fragment: str) -> str:
        return next(language for line, language in zip(lines, languages) if fragment in line)

    assert main == "ru"
    assert language_of("Мануель Сеоане: Марадона аматорського футболу") == "uk"
    assert language_of("ТОП-10 моментів українського футболу") == "uk"
    assert language_of("Подольски завершил карьеру в сборной") == "ru"
    assert language_of("13:29") == "ru"  # a time alone: its page's language
    assert collections.Counter(languages).most_common(1)[0][0] == "ru"


def test_text_too_short_or_without_letters_is_undetermined():
    assert identify_language("") == identify_language("2019 2020 2021 | 42.5%") == identify_language("Ok, go") == ""
    assert chunk_languages(["12", "-"], "3 4") == (["", ""], "")


def test_a_document_too_short_to_tell_takes_the_language_of_most_of_its_chunk_text():
    german = "Die Äpfel schälen und würfeln, dazu geben und drei Minuten mitbraten, dabei umrühren."
    assert chunk_languages([german, "Total: 42"], "x") == (["de", "de"], "de")


def test_a_long_document_is_identified_from_a_sample_spread_over_it():
    from ingest.text.language import SAMPLE_CHARS, _sample

    text = "".join(f"{i:07d}" for i in range(SAMPLE_CHARS // 3))
    sample = _sample(text)
    assert len(sample) < SAMPLE_CHARS + 16 and sample.startswith(text[:100]) and sample.endswith(text[-100:])


def test_the_build_stores_each_chunks_language_and_its_documents(sample_index_test_model):
    generation = index.open(sample_index_test_model).generation
    chunks = generation.table("chunks", ["doc_id", "language"]).to_pylist()
    documents = {r["doc_id"]: r["language"] for r in generation.table("documents", ["doc_id", "language"]).to_pylist()}
    assert all(len(c["language"]) in (0, 2) and c["language"] == c["language"].lower() for c in chunks)
    assert documents["docs/getting-started.md"] == "en"
    assert {c["language"] for c in chunks if c["doc_id"] == "docs/getting-started.md"} == {"en"}
    for doc_id, language in documents.items():  # a document's language is one of its chunks' (or none has one)
        own = {c["language"] for c in chunks if c["doc_id"] == doc_id}
        assert not own or language in own


SAMPLES = ["Die Äpfel schälen und würfeln, dazu geben und drei Minuten mitbraten.",
           "Подольски завершил карьеру в сборной Германии после чемпионата Европы.",
           "東京は日本の首都であり、世界最大級の都市圏を形成している。",
           "The retention policy keeps audit exports for seven years after the contract ends."]


def test_the_unpacked_copy_of_the_model_identifies_as_the_packaged_model(tmp_path, monkeypatch):
    from ingest.text import language

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    language._loaded_identifier.cache_clear()
    packaged = language._identifier()  # no copy yet: unpacked from the package, then kept
    assert language._unpacked_path().is_file() and language._unpacked_path().is_relative_to(tmp_path)
    kept = language._unpacked_model()
    assert kept is not None, "the kept copy could not be read"
    assert kept.depth == packaged.depth == 6
    assert kept.classify(SAMPLES) == packaged.classify(SAMPLES) == [_py3langid().classify(text) for text in SAMPLES]
    language._loaded_identifier.cache_clear()


@functools.cache
def _py3langid():
    from ingest.text import language

    return language._packaged_model()


# Words of several scripts, so that texts reach deep automaton states and several languages score high.
WORDS = ["Äpfel", "schälen", "würfeln", "карьеру", "сборной", "東京は", "日本の首都", "retention", "policy", "audit",
         "الأخبار", "समाचार", "ziemniaki", "Mönch", "ÇA", "ÉTÉ", "13:29", "—", "\u0301", "\ud800"]


@given(texts=st.lists(st.one_of(st.text(max_size=40),
                                st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join)), max_size=8),
       walk_bytes=st.sampled_from([1, 64, 1 << 20]))
@example(texts=SAMPLES, walk_bytes=64)  # sentences: states as deep as the automaton goes
@example(texts=["", "ÄÖÜ GROSS", "x" * 10], walk_bytes=1)  # empty text; an upper-case text is lowered first
@example(texts=["\ud800 abc", "sr uz: Здраво свете, ово је српски језик."], walk_bytes=64)  # a lone surrogate; a language named twice
def test_texts_classified_together_get_what_py3langid_gives_each_alone(texts, walk_bytes):
    from ingest.text import language

    # walked in groups of one text, of a few, of all
    assert language._identifier().classify(texts, walk_bytes) == [_py3langid().classify(text) for text in texts]


def test_the_shared_corpus_is_classified_as_py3langid_classifies_it():
    needs_shared_corpus()
    from ingest.text import language

    paragraphs = [p for doc_id in sorted(SHARED_LANGUAGES) for p in _shared_text(doc_id).split("\n\n") if p.strip()]
    assert len(paragraphs) > 300
    assert language._identifier().classify(paragraphs) == [_py3langid().classify(p) for p in paragraphs]


def test_a_cache_that_cannot_be_written_or_read_leaves_the_packaged_model(tmp_path, monkeypatch):
    from ingest.text import language

    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # spanindex/ cannot be made under a file
    language._loaded_identifier.cache_clear()
    assert [language.identify_language(text) for text in SAMPLES] == ["de", "ru", "ja", "en"]
    assert not language._unpacked_path().exists()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "junk"))
    language._unpacked_path().parent.mkdir(parents=True)
    language._unpacked_path().write_bytes(b"not an npz")
    language._loaded_identifier.cache_clear()
    assert [language.identify_language(text) for text in SAMPLES] == ["de", "ru", "ja", "en"]
    language._loaded_identifier.cache_clear()
