"""What every response of the viewer server carries, and what no request may exceed.

Documents and answers are untrusted. Pages escape them (autoescape), show HTML
sources only in sandboxed frames, and every response carries a CSP that allows
our own script file and nothing inline, so an injection that slipped past the
escaping still could not run. Request bodies are capped before they are read.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemas.limits import AnswerLimits

MAX_BODY_BYTES = AnswerLimits().max_bytes  # the largest answer (schemas.limits); nothing else is posted

PAGE_CSP = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",  # box positions; the shown sources' own CSS
    "img-src 'self' data:",
    "frame-src 'none'",  # srcdoc frames only: a link inside a shown source cannot load anything
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
])
# A stored HTML page opened on its own (to honour a text fragment): an opaque origin, no script.
SANDBOX_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
# The original PDF, for the browser's own viewer (which an object-src 'none' would block).
PDF_CSP = "default-src 'none'; object-src 'self'; frame-ancestors 'self'"

_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class SecurityHeaders:
    """Adds the headers above to every response that did not set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodyLimit:
    """Answers 413 to a request whose body exceeds ``max_bytes``, declared or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _too_large(send, self.max_bytes)
            return
        received = 0
        started = cut_off = False

        async def limited_receive() -> Message:
            nonlocal received, cut_off
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Answer now and tell the app the client left: whatever it then says is dropped.
                    if not started:
                        await _too_large(send, self.max_bytes)
                    cut_off = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if cut_off:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, limited_receive, guarded_send)


async def _too_large(send: Send, max_bytes: int) -> None:
    body = f'{{"detail":"request body over {max_bytes} bytes"}}'.encode()
    await send({
        "type": "http.response.start",
        "status": 413,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")],
    })
    await send({"type": "http.response.body", "body": body})
