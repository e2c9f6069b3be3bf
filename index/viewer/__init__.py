"""The viewer: templates and assets shared by the self-contained report and the server.

``index.viewer.server.app`` (FastAPI) is imported only by ``spanindex serve``; rendering a
report needs Jinja alone.
"""
