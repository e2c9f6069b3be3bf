"""`python -m scripts.sample_corpus [--out DIR]`: regenerate the corpus (see `cli.main`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
