"""Regenerate sample_corpus/ (the Makefile runs this file); the code is in scripts/sample_corpus/.

Usage: .venv/bin/python scripts/make_sample_corpus.py [--out DIR]
"""

if __package__:  # python -m scripts.make_sample_corpus
    from .sample_corpus.cli import main
else:  # run as a file: scripts/ is sys.path[0], ahead of the sample_corpus/ data folder
    from sample_corpus.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
