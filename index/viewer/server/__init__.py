"""`spanindex serve`: the viewer over HTTP (``app``), its JSON API (``api``), the headers and
limits every response obeys (``security``), and what its routes share (``state``)."""
