"""The corpus in an object store: ``s3://bucket/prefix``, or any fsspec URL whose driver is installed.

The same corpus rules as a folder (``ingest.corpus.folder``): ``doc_id`` is the object's key relative
to the prefix, names starting with '.' are not part of the corpus, the media type comes from
the name, and the user's metadata files (``NAME.meta.json``, ``metadata.jsonl``) are listed
apart. There are no links, FIFOs or devices in a store, and keys are UTF-8.

Listing goes through fsspec and the store's own driver (s3fs on botocore for ``s3://``): on
S3 one flat listing of the prefix, 1,000 keys per request, pulled a page at a time, so that only
a page of the driver's answers is held; each object becomes a small ``CorpusFile`` with what the
listing says of it (``ListedObject``: size, modification time, ETag). Other stores are walked
folder by folder (fsspec's ``walk``). A build reads an object only when those differ from what the
live generation recorded (``ingest.run.worker.stat_unchanged``).

Credentials come from the driver's standard chain (for S3: environment, profile, instance
role); they are never part of a URL the index stores and never shown in an error. A store
other than AWS is named as the AWS SDKs name it: ``AWS_ENDPOINT_URL`` (or
``AWS_ENDPOINT_URL_S3``) and ``AWS_REGION``. Retries with backoff are the driver's: botocore's
retry handler (``AWS_RETRY_MODE``, ``AWS_MAX_ATTEMPTS``), under s3fs's own retry of throttled
and interrupted requests.
"""

from __future__ import annotations

import datetime
import os
import re
import urllib.parse
from collections.abc import Iterator

from ingest.corpus.folder import CorpusFile, Discovery, ListedObject, NotReadable, SkippedFile, is_metadata_file
from ingest.formats import media_type_of
from schemas.errors import CorpusError
from schemas.records import SkipReason

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
# The driver each store needs, for the error that names the package to install.
DRIVER_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
                   "abfss": "adlfs"}
_CREDENTIAL_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
                         "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
                         "AZURE_STORAGE_CLIENT_SECRET")
# Azure's credentials as adlfs reads them from the environment, and the option each is passed as.
_AZURE_VARIABLES = {"AZURE_STORAGE_CONNECTION_STRING": "connection_string", "AZURE_STORAGE_ACCOUNT_NAME": "account_name",
                    "AZURE_STORAGE_ACCOUNT_KEY": "account_key", "AZURE_STORAGE_SAS_TOKEN": "sas_token",
                    "AZURE_STORAGE_CLIENT_ID": "client_id", "AZURE_STORAGE_CLIENT_SECRET": "client_secret",
                    "AZURE_STORAGE_TENANT_ID": "tenant_id"}
# Where a store URL points, as the SDKs read it (not who may read it): a URL must name the same store
# on every node of a cluster, so a Ray build gives its tasks the driver's. Credentials stay each node's.
LOCATION_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION")


def store_location() -> dict[str, str]:
    """The environment that says where store URLs point, as set here."""
    return {name: os.environ[name] for name in LOCATION_VARIABLES if os.environ.get(name)}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def is_store_url(corpus: object) -> bool:
    """Whether a corpus argument names an object store rather than a folder (``file://`` is a folder).

    >>> is_store_url("s3://bucket/corpus"), is_store_url("file:///data/corpus"), is_store_url("corpus")
    (True, False, False)
    """
    match = _SCHEME.match(corpus) if isinstance(corpus, str) else None
    return match is not None and match.group(1).lower() != "file"


def local_path_of(corpus: str | os.PathLike) -> str | os.PathLike:
    """A ``file://`` URL as the folder it names; anything else as it is.

    >>> local_path_of("file:///data/my%20corpus")
    '/data/my corpus'
    """
    if isinstance(corpus, str) and corpus.lower().startswith("file://"):
        return urllib.parse.unquote(urllib.parse.urlsplit(corpus).path)
    return corpus


def shown(url: str) -> str:
    """A URL as it may be stored or shown: without user, password, query or fragment.

    >>> shown("s3://KEY:SECRET@bucket/corpus/a.pdf?versionId=3")
    's3://bucket/corpus/a.pdf'
    """
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))


def store_of(url: str):
    """(fsspec filesystem, the path of ``url`` in it), made from the URL and the environment.

    fsspec keeps one filesystem per set of options in each process: a worker makes it once."""
    protocol = url.split("://", 1)[0].lower()
    if "@" in urllib.parse.urlsplit(url).netloc:
        raise CorpusError(f"{shown(url)}: credentials in the URL are not accepted: give them as the store's "
                          "standard chain reads them (environment, profile, instance role)")
    try:
        import fsspec

        fsspec.get_filesystem_class(protocol)
    except ImportError:
        package = DRIVER_PACKAGES.get(protocol, f"the fsspec driver of {protocol}://")
        extras = {"s3fs": "s3", "adlfs": "az"}
        extra = f" (pip install 'spanindex[{extras[package]}]')" if package in extras else f" (pip install {package})"
        raise CorpusError(f"{shown(url)}: reading {protocol}:// needs {package}{extra}") from None
    except ValueError:
        raise CorpusError(f"{shown(url)}: no fsspec driver knows {protocol}://") from None
    return fsspec.core.url_to_fs(url, **_options(protocol))


def _options(protocol: str) -> dict:
    """The driver's options from the environment. botocore reads AWS_ENDPOINT_URL itself; it is
    passed all the same so that a filesystem made for one endpoint is never reused for another,
    and AWS_REGION (which botocore leaves to the other SDKs) is passed where AWS_DEFAULT_REGION is unset.
    Azure's (adlfs reads them itself too) likewise, so that a filesystem made with one account's
    credentials is never reused for another's."""
    if protocol in ("az", "abfs", "abfss"):
        return {"use_listings_cache": False} | {option: os.environ[variable] for variable, option in _AZURE_VARIABLES.items()
                                                if os.environ.get(variable)}
    if protocol not in ("s3", "s3a"):
        return {}
    options: dict = {"use_listings_cache": False}  # a listing is read once, never held for later
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["endpoint_url"] = endpoint
    region = os.environ.get("AWS_REGION")
    if region and not os.environ.get("AWS_DEFAULT_REGION"):
        options["client_kwargs"] = {"region_name": region}
    return options


def discover_in_store(url: str) -> Discovery:
    """Every document under the URL's prefix, and every other object with the reason it is not one.

    >>> import fsspec
    >>> fs = fsspec.filesystem("memory")
    >>> fs.pipe({"/corpus/a.md": b"# A", "/corpus/b.bin": b"?", "/corpus/.hidden.md": b"no"})
    >>> found = discover_in_store("memory://corpus")
    >>> [(f.doc_id, f.url, f.listed.size) for f in found.files], [s.doc_id for s in found.skipped]
    ([('a.md', 'memory://corpus/a.md', 3)], ['b.bin'])
    """
    fs, root = store_of(url)
    root = root.rstrip("/")
    base = shown(url).rstrip("/")
    files: list[CorpusFile] = []
    metadata: list[CorpusFile] = []
    skipped: list[SkippedFile] = []
    try:
        for relative, info in listing(fs, root):
            if not relative or relative.endswith("/") or any(part.startswith(".") for part in relative.split("/")):
                continue  # a folder marker, or a name starting with '.': not part of the corpus
            is_metadata = media_type_of(relative) is None and is_metadata_file(relative)
            if media_type_of(relative) is None and not is_metadata:
                skipped.append(SkippedFile(relative, SkipReason.UNKNOWN_TYPE))
                continue
            listed = ListedObject(int(info.get("size") or 0), _mtime_ns(info), _etag(info))
            (metadata if is_metadata else files).append(CorpusFile(relative, None, url=f"{base}/{relative}",
                                                                   listed=listed))
    except Exception as exc:  # noqa: BLE001 — each driver raises its own types; all mean one thing here
        raise CorpusError(f"{base}: {store_failure(exc)}") from None
    if not files and not metadata and not skipped:
        raise CorpusError(f"{base}: no such bucket or prefix")  # a prefix is there only while objects are under it
    return Discovery(sorted(files, key=lambda f: f.doc_id), sorted(skipped, key=lambda s: s.doc_id), base,
                     sorted(metadata, key=lambda f: f.doc_id))


LISTING_PAGE = 1000  # keys S3 gives per listing request, and what is held of a listing at a time


def listing(fs, root: str) -> Iterator[tuple[str, dict]]:
    """(key relative to ``root``, the driver's info) of every object under ``root``. On S3, one flat
    listing (ListObjectsV2, no delimiter), pulled a page at a time from s3fs's own paginated
    iterator; elsewhere, fsspec's walk, a folder's listing at a time."""
    if "s3" in getattr(fs, "protocol", ()) and hasattr(fs, "_iterdir"):
        from fsspec.asyn import sync

        bucket, _, key = root.partition("/")
        objects = fs._iterdir(bucket, delimiter="", prefix=f"{key}/" if key else "")
        while page := sync(fs.loop, _next_page, objects, LISTING_PAGE):
            for info in page:
                yield info["name"][len(root) + 1:], info
        return
    for folder, below, objects in fs.walk(root, detail=True, on_error="raise"):
        for name in [n for n in below if n.startswith(".")]:  # never listed: not part of the corpus
            del below[name]
        relative_folder = folder.rstrip("/")[len(root) + 1:] if folder.rstrip("/") != root else ""
        for name, info in objects.items():
            if info.get("type") != "directory":
                yield f"{relative_folder}/{name}" if relative_folder else name, info


async def _next_page(objects, size: int) -> list[dict]:
    """Up to ``size`` more items of an async iterator, which stays open for the next call."""
    page = []
    async for info in objects:
        page.append(info)
        if len(page) == size:
            break
    return page


def read_object(url: str, listed: ListedObject | None, max_bytes: int | None) -> bytes:
    """The bytes of one object; ``NotReadable`` for an object over ``max_bytes`` (by its listed
    size, never read; or grown past it since: no more than ``max_bytes + 1`` bytes are fetched);
    ``FileNotFoundError``/``PermissionError`` for this object alone; ``StoreFailure`` when the
    store itself fails (errors and timeouts the driver's retries did not get past)."""
    if max_bytes is not None and listed is not None and listed.size > max_bytes:
        raise NotReadable(f"file too large: {listed.size:,} bytes, the limit is {max_bytes:,} (--max-file-mb)")
    if listed is not None and listed.size == 0:
        return b""  # a range of an empty object is not satisfiable (HTTP 416): there is nothing to fetch
    fs, path = store_of(url)
    try:
        data = fs.cat_file(path, start=0, end=None if max_bytes is None else max_bytes + 1)
    except (FileNotFoundError, PermissionError) as exc:  # this object's: gone since the listing, or not ours to read
        raise type(exc)(exc.errno, scrubbed(exc.strerror or str(exc))) from None
    except Exception as exc:  # noqa: BLE001 — the store's (after the driver's retries), whatever type the driver gives it
        raise StoreFailure(f"{shown(url)}: the store failed: {store_failure(exc, 'reading')}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise NotReadable(f"file too large: over {max_bytes:,} bytes, the limit (--max-file-mb)")
    return data


class StoreFailure(Exception):
    """The store failed (not one object): the build stops rather than write error rows for documents
    that are fine, and the live generation keeps serving. ``str`` is one line naming the URL."""


def store_failure(exc: BaseException, doing: str = "listing") -> str:
    """What went wrong with the store, in one line without credentials."""
    if isinstance(exc, CorpusError):
        return exc.message
    if isinstance(exc, FileNotFoundError):
        return "no such bucket or prefix"
    if isinstance(exc, PermissionError):
        return f"access denied ({scrubbed(str(exc)) or 'check the credentials'})"
    text = scrubbed(str(exc)).strip().splitlines()
    return f"{doing} failed: {type(exc).__name__}{': ' + text[-1] if text else ''}"


def scrubbed(text: str) -> str:
    """``text`` with every credential of the environment replaced by '***' (and the key or signature
    an Azure connection string holds).

    >>> os.environ["AZURE_STORAGE_CONNECTION_STRING"] = "AccountName=a;AccountKey=c2VjcmV0;BlobEndpoint=http://b"
    >>> scrubbed("signed with c2VjcmV0, not 'AccountName=a;AccountKey=c2VjcmV0;BlobEndpoint=http://b'")
    "signed with ***, not '***'"
    >>> del os.environ["AZURE_STORAGE_CONNECTION_STRING"]
    """
    secrets = [os.environ.get(variable) or "" for variable in _CREDENTIAL_VARIABLES]
    connection = os.environ.get("AZURE_STORAGE_CONNECTION_STRING") or ""
    secrets += [value for name, _, value in (part.partition("=") for part in connection.split(";"))
                if name.strip() in ("AccountKey", "SharedAccessSignature")]
    for secret in sorted(secrets, key=len, reverse=True):  # the whole string before the key within it
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _mtime_ns(info: dict) -> int:
    """The modification time a driver's listing gives (S3 LastModified, GCS updated, Azure
    last_modified, a local mtime), in ns since the epoch; 0 where it gives none."""
    for key in ("LastModified", "last_modified", "updated", "mtime", "modified"):
        value = info.get(key)
        if isinstance(value, str):
            value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if isinstance(value, datetime.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=datetime.timezone.utc)
            return (value - _EPOCH) // datetime.timedelta(microseconds=1) * 1000
        if isinstance(value, (int, float)) and value > 0:
            return int(value * 1e9)
    return 0


def _etag(info: dict) -> str:
    """The store's checksum of the object as its listing gives it ("" where it gives none)."""
    for key in ("ETag", "etag", "md5Hash", "crc32c"):
        if info.get(key):
            return str(info[key]).strip('"')
    return ""
