"""What the tests share: the corpora and quotes from them, the CLI as a user runs it, a tokenizer,
and built indexes (real model and test model).

Markers: ``slow`` loads the real model or builds with it, ``spawns`` starts other processes
(a build's worker pool, the CLI in a subprocess), ``browser`` drives Chromium. `make test-fast`
runs the rest: no real model, no process but pytest's own, no browser.

``hostile(input, outcome)`` marks a test of hostile or malformed input (on the test, or on one
``pytest.param`` of it): ``input`` says what was tried, ``outcome`` is ``"KIND: what spanindex
did"`` with KIND from ``HOSTILE_OUTCOMES``. RELIABILITY.md is generated from these markers by
scripts/reliability.py (`make reliability`), so the table says what the tests show.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from doubles import HashingEmbedder

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Ray runs its workers at nice 15 unless told otherwise: on a busy machine (CI beside other work)
# they then get a few percent of a core, and the Ray tests took many times their idle time. The
# instances the tests start (and the command's, which inherit this) run them at the tests' own.
os.environ.setdefault("RAY_worker_niceness", "0")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = ROOT / "sample_corpus"
# A worktree elsewhere than beside ../shared names the corpus with SPANINDEX_SHARED_CORPUS.
SHARED_CORPUS = Path(os.environ.get("SPANINDEX_SHARED_CORPUS", ROOT.parent / "shared" / "corpus"))
ARTIFACTS = ROOT / "test-artifacts"
# How long a test waits for something to happen (a process to start or end, a page to load)
# before it calls it failed. A test waits on the event itself and goes on as soon as it
# happens, so this bounds a failing test, not a passing one: it is sized for a busy machine.
WAIT_S = 300

# Sentences of sample_corpus/ that tests cite (verbatim in the documents' text).
PDF_QUOTE = "Growth plan overage is billed at $0.12 per 1,000 API calls."  # pricing/rate-card.pdf
HTML_QUOTE = "Larger events are sent as a link that stays valid for 24 hours."  # web/faq.html

# Property tests. CI must not fail at random: its profile is derandomized (the same
# examples on every run) and keeps no database; `make test` on a developer's machine
# explores new examples and replays the failures it saved; `explore` runs many more.
# Every counterexample ever found is also kept as an explicit @example in its test.
# Select with HYPOTHESIS_PROFILE=ci|dev|explore (.ci/run selects ci).
_EXAMPLE_SCALE = {"ci": 1, "dev": 1, "explore": 25}
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(n: int) -> int:
    """A test's number of examples under the selected profile (``explore`` multiplies it)."""
    return n * _EXAMPLE_SCALE.get(HYPOTHESIS_PROFILE, 1)


# Citation statuses seen by the real-document verification tests, shown in the summary.
STATUS_COUNTS: collections.Counter = collections.Counter()


# What spanindex does with hostile input, by kind: the closed vocabulary of the `hostile` marker's outcome.
HOSTILE_OUTCOMES = {
    "error row": "the build records the file as an error row with its reason, and the batch carries on",
    "skipped": "the build leaves the file out and names it, with the reason, in its summary",
    "record status": "the bad claim, citation or record gets a status of its own; the rest is used",
    "CLI error": "one line naming the input and the problem, a non-zero exit, no traceback",
    "HTTP 4xx": "the server answers 4xx with the error (JSON under /api/), never 500",
    "bounded": "what is written or served stays within a documented limit",
    "handled": "accepted and processed: every invariant holds",
}


def hostile_outcome(marker) -> tuple[str, str, str]:
    """(input, outcome kind, what spanindex did) of a ``hostile`` marker; a UsageError if misspelt."""
    if len(marker.args) != 2 or marker.kwargs or not all(isinstance(a, str) and a.strip() for a in marker.args):
        raise pytest.UsageError(f"@pytest.mark.hostile takes two strings (input, outcome), got {marker.args!r}")
    what, outcome = marker.args
    kind, _, detail = outcome.partition(":")
    if kind not in HOSTILE_OUTCOMES:
        raise pytest.UsageError(
            f"@pytest.mark.hostile({what!r}, {outcome!r}): the outcome must start with one of "
            + ", ".join(f"'{k}:'" for k in HOSTILE_OUTCOMES)
        )
    return what.strip(), kind, detail.strip()


def hostile_marker(item):
    """The ``hostile`` marker that describes this test case: a ``pytest.param``'s own before the test's."""
    own = [m for m in item.own_markers if m.name == "hostile"]
    return own[-1] if own else item.get_closest_marker("hostile")


# Doctests that load the real embedding model: slow, like the tests that do.
REAL_MODEL_DOCTESTS = {"ingest.embed.embedder.SentenceTransformerEmbedder"}


def pytest_collection_modifyitems(items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name in REAL_MODEL_DOCTESTS:
            item.add_marker(pytest.mark.slow)
        for marker in item.iter_markers("hostile"):
            hostile_outcome(marker)


def pytest_terminal_summary(terminalreporter):
    if STATUS_COUNTS:
        total = sum(STATUS_COUNTS.values())
        rates = ", ".join(f"{k} {v} ({v / total:.0%})" for k, v in sorted(STATUS_COUNTS.items()))
        terminalreporter.write_line(f"citation statuses on real-document quotes: {rates}")


def needs_shared_corpus() -> None:
    if not SHARED_CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")


# The CLI with the test embedder injected: for commands that search an index built with it.
_CLI_WITH_TEST_EMBEDDER = (
    f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); from doubles import HashingEmbedder; "
    "from index.cli import main; sys.exit(main(sys.argv[1:], embedder=HashingEmbedder()))"
)


def spanindex_command(*args, test_embedder: bool = False) -> list[str]:
    """The command line of `spanindex ARGS` in a fresh Python process (``python -m index``)."""
    if test_embedder:
        return [sys.executable, "-c", _CLI_WITH_TEST_EMBEDDER, *map(str, args)]
    return [sys.executable, "-m", "index", *map(str, args)]


def spanindex(*args, test_embedder: bool = False, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `spanindex ARGS` as a user does, in its own process; its exit code and output."""
    return subprocess.run(spanindex_command(*args, test_embedder=test_embedder), capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def live_files(index_dir) -> dict[str, str]:
    """doc_id -> source sha256 of every file the live generation holds (its documents table)."""
    import index

    return {d.doc_id: d.source_sha256 for d in index.open(index_dir).documents()}


def chunk_with(idx, doc_id: str, quote: str) -> str:
    """The id of the chunk of ``doc_id`` whose text holds ``quote``."""
    for chunk in idx.chunks_of(doc_id):
        if quote in chunk.text:
            return chunk.chunk_id
    raise AssertionError(f"no chunk of {doc_id} holds {quote!r}")


@pytest.fixture(scope="session")
def tokenizer():
    from ingest.embed.model import load_tokenizer, resolve_model

    return load_tokenizer(resolve_model())


@pytest.fixture(scope="session")
def real_embedder():
    from ingest.embed.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory, real_embedder) -> Path:
    """sample_corpus/ built once with the real model (a copy: tests may not touch the original)."""
    from ingest.build import BuildSettings, build_index

    index_dir = tmp_path_factory.mktemp("sample-index")
    build_index(SAMPLE_CORPUS, index_dir, BuildSettings(workers=2), embedder=real_embedder)
    return index_dir


@pytest.fixture(scope="session")
def sample_index_test_model(tmp_path_factory) -> Path:
    """sample_corpus/ built with the tiny test embedder: for tests about maps, not retrieval."""
    from ingest.build import BuildSettings, build_index

    index_dir = tmp_path_factory.mktemp("sample-index-test-model")
    # In this process: a worker pool costs more than it saves on a small corpus (its own tests spawn one).
    build_index(SAMPLE_CORPUS, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    return index_dir


@pytest.fixture(scope="session")
def shared_index(tmp_path_factory) -> Path:
    """../shared/corpus built once with the test embedder (the maps are what is tested)."""
    needs_shared_corpus()
    from ingest.build import BuildSettings, build_index

    index_dir = tmp_path_factory.mktemp("shared-index")
    build_index(SHARED_CORPUS, index_dir, BuildSettings(workers=2), embedder=HashingEmbedder())
    return index_dir


@pytest.fixture(scope="session", params=["sample", pytest.param("shared", marks=pytest.mark.spawns)])
def built(request, sample_index_test_model):
    """(index, corpus root) for sample_corpus/ and ../shared/corpus/ (skipped when absent)."""
    import index

    if request.param == "sample":
        return index.open(sample_index_test_model, embedder=HashingEmbedder()), SAMPLE_CORPUS
    needs_shared_corpus()
    return index.open(request.getfixturevalue("shared_index"), embedder=HashingEmbedder()), SHARED_CORPUS


# Who may read the tests' S3 server (moto takes any): test credentials, and the user's own files and
# instance metadata out of play. The server's address is each server's own (AWS_ENDPOINT_URL).
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "spanindex-test-key", "AWS_SECRET_ACCESS_KEY": "spanindex-test-secret-do-not-show",
                  "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
                  "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="module")
def azurite(tmp_path_factory):
    """Azurite's blob service on localhost for a module's tests (tests/azure_server.py): its endpoint;
    skips where adlfs or Azurite is not installed."""
    from azure_server import running_azurite

    with running_azurite(tmp_path_factory.mktemp("azurite")) as endpoint:
        yield endpoint


@pytest.fixture
def azure(azurite, monkeypatch):
    """A new, empty container on the module's Azurite, the environment pointing at it as a user's
    would (``AZURE_STORAGE_CONNECTION_STRING``, no other Azure credential): its name."""
    import uuid

    from azure.storage.blob import BlobServiceClient

    from azure_server import connection_string

    for variable in [v for v in os.environ if v.startswith("AZURE_")]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(azurite))
    container = f"index-{uuid.uuid4().hex[:12]}"
    BlobServiceClient.from_connection_string(connection_string(azurite)).create_container(container)
    return container


@pytest.fixture
def s3(monkeypatch):
    """moto's S3 server on localhost, the environment pointing at it (tests/s3_server.py); skips
    where s3fs or moto is not installed."""
    from s3_server import running_s3_server

    with running_s3_server(monkeypatch) as server:
        yield server
