"""Two builds of one index that started from the same CURRENT, the slower one held back until the
faster one has published: what the tests of a race to publish (S3, Azure) share."""

from __future__ import annotations

import threading
from collections.abc import Callable


def race(slow: Callable[[Callable], object], fast: Callable[[], object]) -> tuple[object, object]:
    """(what ``slow`` returned or raised, what ``fast`` returned): ``slow(progress)`` is a build given
    ``progress``, which holds it at its first step (its copy at the bucket's CURRENT) until ``fast``
    has built and published."""
    started, fast_published = threading.Event(), threading.Event()
    outcome: dict = {}

    def paused(event) -> None:
        started.set()
        fast_published.wait(timeout=120)

    def slow_build() -> None:
        try:
            outcome["slow"] = slow(paused)
        except Exception as exc:  # noqa: BLE001 — what the slow build raised, for the test to look at
            outcome["slow"] = exc

    thread = threading.Thread(target=slow_build)
    thread.start()
    assert started.wait(timeout=120), "the slow build never started"
    try:
        won = fast()
    finally:
        fast_published.set()
        thread.join(timeout=300)
    return outcome["slow"], won
