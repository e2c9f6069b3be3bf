"""Embedding: chunk texts in, unit-length float32 vectors out.

``model`` finds the packaged model offline and its tokenizer (no torch); ``embedder`` holds the
``Embedder`` protocol, the sentence-transformers (torch) embedder and the queue that batches
texts for it; ``onnx_backend`` runs the same network under ONNX Runtime; ``backends`` picks one
by backend and device.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "backends": ["make_embedder"],
    "embedder": ["Embedder", "SentenceTransformerEmbedder", "VectorQueue"],
    "model": ["DEFAULT_MODEL_ID", "ModelInfo", "is_multilingual", "load_tokenizer", "resolve_model"],
    "onnx_backend": ["OnnxEmbedder"],
})
