"""A real S3 server on localhost for the tests of a corpus in a bucket: moto's server (``moto[server]``),
run in a thread of the test process, answering s3fs and botocore over HTTP as AWS would.

``running_s3_server`` (the ``s3`` fixture of conftest.py) starts one on a free port, with the
standard environment pointing at it (``AWS_ENDPOINT_URL``, ``AWS_REGION``, test credentials; no
profile, no instance metadata), and a log of every request the server answered (method, key,
query, bytes sent and received): what a build fetched is counted at the server, not guessed. Importing this
module skips the test where s3fs or moto is missing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'spanindex[s3]')")
pytest.importorskip("moto.server", reason="moto's server is not installed (pip install 'moto[server]')")

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from conftest import S3_CREDENTIALS  # noqa: E402

BUCKET = "corpus-bucket"


@dataclass(slots=True)
class Request:
    method: str
    path: str  # /bucket/key, percent-encoded as sent
    query: str
    bytes_sent: int = 0
    bytes_received: int = 0  # the request's body (an upload's object)


@dataclass(slots=True)
class RequestLog:
    """Moto's WSGI application, with every request it answers recorded."""

    app: object
    requests: list[Request] = field(default_factory=list)
    failing: str = ""  # "": moto answers; "reads": object GETs get 503 SlowDown; "writes": PUTs do; "all": every request does
    writes_before_failing: int = 0  # with "writes": this many PUTs are answered first (an upload fails midway)

    def __call__(self, environ, start_response):
        request = Request(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""),
                          bytes_received=int(environ.get("CONTENT_LENGTH") or 0))
        self.requests.append(request)
        if self.failing == "writes" and request.method == "PUT" and self.writes_before_failing > 0:
            self.writes_before_failing -= 1
        elif self.failing == "all" or (self.failing == "reads" and _is_object_read(request)) or \
                (self.failing == "writes" and request.method == "PUT"):
            start_response("503 Slow Down", [("Content-Type", "application/xml")])
            yield _SLOW_DOWN
            return
        for piece in self.app(environ, start_response):
            request.bytes_sent += len(piece)
            yield piece


@dataclass(slots=True)
class S3Server:
    endpoint: str
    log: RequestLog

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")

    def upload(self, folder: Path, prefix: str, bucket: str = BUCKET) -> str:
        """Every file under ``folder`` as an object under ``prefix``; the prefix's URL."""
        client = self.client()
        if bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=bucket)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}", Body=path.read_bytes())
        return f"s3://{bucket}/{prefix}"

    def gets(self, since: int = 0) -> list[Request]:
        """The object reads (GET of a key, not a listing) answered since request number ``since``."""
        return [r for r in self.log.requests[since:] if _is_object_read(r)]

    def require_credentials(self, required: bool) -> None:
        """Make the server check credentials as AWS does (it has no user, so none pass), or stop checking."""
        _moto_api(self.endpoint, "reset-auth", b"0" if required else b"1e18")


@contextlib.contextmanager
def running_s3_server(monkeypatch) -> Iterator[S3Server]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request is what RequestLog keeps
    log = RequestLog(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, log, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    _moto_api(endpoint, "reset")  # moto's buckets live in this process: each test starts with none
    for variable in ("AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name, value in S3_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    try:
        yield S3Server(endpoint, log)
    finally:
        _moto_api(endpoint, "reset-auth", b"1e18")
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


_SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
              b"<Message>Please reduce your request rate.</Message></Error>")


def _is_object_read(request: Request) -> bool:
    return request.method == "GET" and "list-type" not in request.query and request.path.strip("/").count("/") >= 1


def _moto_api(endpoint: str, action: str, body: bytes = b"") -> None:
    # text/plain: urllib's default form type would leave the body to Flask's form parser, unread by moto
    request = urllib.request.Request(f"{endpoint}/moto-api/{action}", data=body, method="POST",
                                     headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request).close()
