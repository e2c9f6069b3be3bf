# spanindex: `make index` builds the sample index and answers a search; `make test` runs the tests.
# The Makefile makes its own virtual environment; nothing needs installing by hand.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
INDEX  ?= build/sample-index
QUERY  ?= How much is Growth plan overage per 1,000 API calls?

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: all venv index reindex search test test-fast bench serve sample-corpus reliability clean

all: index

venv: $(VENV)/.installed

# torch first and pinned: that version is a CPU build; an unpinned torch pulls a CUDA build.
# Azurite (Microsoft's Azure Blob emulator, from npm) serves the tests of an index in az://.
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,onnx,ray,s3,az]'
	command -v npm >/dev/null && npm install --silent --no-audit --no-fund --prefix $(VENV)/azurite azurite@3.37.0 \
	  || echo "warning: could not install Azurite: the az:// tests will be skipped" >&2
	touch $@

index: venv
	$(BIN)/spanindex build sample_corpus --index $(INDEX)
	$(BIN)/spanindex search $(INDEX) "$(QUERY)" -k 3

reindex: venv
	$(BIN)/spanindex build sample_corpus --index $(INDEX)

search: venv
	$(BIN)/spanindex search $(INDEX) "$(QUERY)" -k 5

test: venv
	$(BIN)/python -m pytest

# No real model, no process but pytest's own (no worker pool, no CLI subprocess), no browser.
test-fast: venv
	$(BIN)/python -m pytest -m "not slow and not spawns and not browser"

# The viewer on the sample index (built first if absent): http://127.0.0.1:8000/ (PORT=8001 make serve).
serve: venv
	test -f $(INDEX)/CURRENT || $(BIN)/spanindex build sample_corpus --index $(INDEX)
	$(BIN)/spanindex serve $(INDEX) --host 127.0.0.1 --port $${PORT:-8000}

# All figures in one run (~45 min on 2 cores, 100,000 generated documents included: BENCH_MANY_DOCS
# sets how many). BENCH_ANN_SIZES=100000,1000000 adds the million-vector table (~20 min more; vectors
# cached under .bench/); BENCH_OVERLAP_BACKENDS=torch,onnx by default.
bench: venv
	$(BIN)/python -m benchmarks.run

# RELIABILITY.md from the tests marked @pytest.mark.hostile (a test fails when it is out of date).
reliability: venv
	$(BIN)/python scripts/reliability.py

sample-corpus: venv
	$(BIN)/python scripts/make_sample_corpus.py

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis test-artifacts *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
