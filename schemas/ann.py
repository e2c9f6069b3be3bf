"""What a generation records about its vector index, so that a reader searches it as it was tuned."""

from __future__ import annotations

from dataclasses import dataclass

AUTO_FACTORY = "auto"


@dataclass(frozen=True, slots=True)
class AnnParams:
    """The FAISS index of a generation and the search parameters it is opened with.

    ``nprobe`` (IVF: inverted lists visited per query) and ``ef_search`` (HNSW: the
    candidate list kept while descending the graph) are 0 where they do not apply.
    ``trained_on`` is the number of vectors the coarse quantizer was trained on, and
    ``added_since_training`` counts the vectors added to it since by incremental updates:
    a build retrains when that churn has grown past what the centroids describe.

    >>> AnnParams("IVF4096,SQ8", nprobe=32).approximate
    True
    """

    factory: str  # the FAISS index_factory string that was built ("Flat", "IVF4096,SQ8", ...)
    nprobe: int = 0
    ef_search: int = 0
    trained_on: int = 0
    added_since_training: int = 0
    requested: str = AUTO_FACTORY  # what the build was asked for: "auto" or a factory string
    template: str = ""  # the trained, empty index every segment's shard is a copy of (ann/<template>/)

    @property
    def approximate(self) -> bool:
        return self.factory != "Flat"
