"""The viewer: what shows a citation to a person.

``source_views`` builds what is shown of a span (page images with boxes, the HTML
source marked and defused by ``marked_source``, or text); ``page_images`` renders
PDF pages; ``claims`` lays out an answer's claims and citation markers;
``report`` writes them as one self-contained HTML file; ``server`` serves the same
views over HTTP, with a JSON API. ``templates`` and ``static`` are shared by both.

``index.viewer.server`` (FastAPI) is imported only by ``spanindex serve``; rendering a
report needs Jinja alone.
"""
