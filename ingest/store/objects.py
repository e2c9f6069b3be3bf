"""The requests an index in a bucket makes, in each store's dialect: S3 (s3fs) and Azure Blob (adlfs).

``ingest.store.bucket`` publishes and reads an index through these few operations; what differs
between stores is how a write is made conditional and how a read of an object's tail is asked:

- a write that must not replace anything: S3 ``If-None-Match: *``; Azure ``overwrite=False``
  (``If-None-Match: *`` on Put Blob and on Put Block List);
- a write of CURRENT that must replace the object read before: S3 ``If-Match`` its ETag; Azure
  ``If-Match`` its ETag (``MatchConditions.IfNotModified``);
- the last bytes of an object: S3 takes a suffix range (``bytes=-N``) and gives the size in one
  request; Azure's ranges need an offset, so its size is asked first (two requests);
- whether an object is the bytes a retried write sent: the MD5 of a single put (S3's ETag, Azure's
  ``Content-MD5``).

A refused condition is ``FileExistsError`` (``FileNotFoundError`` where ``If-Match`` named an
object that is gone); a missing object is ``FileNotFoundError``; refused credentials are
``PermissionError`` (s3fs's own mapping on S3); anything else is the driver's own
error, retried with backoff by the driver first (botocore's retry handler; the Azure SDK's
exponential retry policy).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path


class Objects:
    """The objects of one bucket (S3) or container (Azure); keys are full keys within it."""

    def __init__(self, fs, bucket: str) -> None:
        self.fs = fs
        self.bucket = bucket

    def sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        """(key relative to ``prefix``, size) of every object under it, a page of the listing at a
        time; ``FileNotFoundError`` where the bucket does not exist (an empty prefix lists nothing)."""
        raise NotImplementedError

    async def read(self, key: str) -> tuple[bytes, str]:
        """The object's bytes and ETag."""
        raise NotImplementedError

    async def read_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive)."""
        raise NotImplementedError

    async def read_tail(self, key: str, count: int) -> tuple[bytes, int]:
        """The last ``count`` bytes (all of it, if smaller) and the object's size."""
        raise NotImplementedError

    async def download(self, key: str, path: Path) -> None:
        await self.fs._get_file(f"{self.bucket}/{key}", str(path))

    async def put(self, key: str, data: bytes, if_match: str | None = None) -> None:
        """Write ``data``, never over an object unless it is the one ETag ``if_match`` names."""
        raise NotImplementedError

    async def put_in_parts(self, key: str, path: Path, part_bytes: int) -> None:
        """A large file in parts of ``part_bytes``, one in memory at a time, written only where no object is."""
        raise NotImplementedError

    async def md5(self, key: str) -> str | None:
        """The MD5 (hex) the store keeps of a single put's bytes; None where there is no such object."""
        raise NotImplementedError

    async def check_bucket(self) -> None:
        """``FileNotFoundError`` where the bucket (container) does not exist."""
        raise NotImplementedError

    async def remove(self, keys: list[str]) -> None:
        raise NotImplementedError


class S3Objects(Objects):
    def sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        from ingest.corpus import listing

        for relative, info in listing(self.fs, f"{self.bucket}/{prefix}".rstrip("/")):
            yield relative, int(info.get("size") or 0)

    async def _call(self, method: str, key: str | None = None, **kwargs):
        target = {"Bucket": self.bucket} | ({"Key": key} if key is not None else {})
        return await self.fs._call_s3(method, **target, **kwargs)

    async def _body(self, key: str, **kwargs) -> tuple[bytes, dict]:
        response = await self._call("get_object", key, **kwargs)
        async with response["Body"] as body:
            return await body.read(), response

    async def read(self, key: str) -> tuple[bytes, str]:
        data, response = await self._body(key)
        return data, response["ETag"]

    async def read_range(self, key: str, start: int, end: int) -> bytes:
        return (await self._body(key, Range=f"bytes={start}-{end - 1}"))[0]

    async def read_tail(self, key: str, count: int) -> tuple[bytes, int]:
        data, response = await self._body(key, Range=f"bytes=-{count}")
        content_range = response.get("ContentRange")
        return data, int(content_range.rsplit("/", 1)[1]) if content_range else len(data)

    async def put(self, key: str, data: bytes, if_match: str | None = None) -> None:
        condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        await _s3_conditional(self._call("put_object", key, Body=data, **condition), key)

    async def put_in_parts(self, key: str, path: Path, part_bytes: int) -> None:
        # Completed with If-None-Match: * (a completion retried after it landed is answered as
        # done: S3 and moto complete an upload id once).
        upload_id = (await self._call("create_multipart_upload", key))["UploadId"]
        try:
            parts = []
            with open(path, "rb") as f:
                while piece := f.read(part_bytes):
                    number = len(parts) + 1
                    part = await self._call("upload_part", key, UploadId=upload_id, PartNumber=number, Body=piece)
                    parts.append({"PartNumber": number, "ETag": part["ETag"]})
            await _s3_conditional(self._call("complete_multipart_upload", key, UploadId=upload_id,
                                             MultipartUpload={"Parts": parts}, IfNoneMatch="*"), key)
        except BaseException:
            with contextlib.suppress(Exception):  # the parts stored so far are given back, where the store answers
                await self._call("abort_multipart_upload", key, UploadId=upload_id)
            raise

    async def md5(self, key: str) -> str | None:
        # A single PutObject's ETag is the MD5 of its bytes (without SSE-KMS encryption: elsewhere
        # a refused write is taken for another build's).
        try:
            head = await self._call("head_object", key)
        except FileNotFoundError:
            return None
        return head.get("ETag", "").strip('"')

    async def check_bucket(self) -> None:
        await self._call("list_objects_v2", MaxKeys=1)

    async def remove(self, keys: list[str]) -> None:
        for at in range(0, len(keys), 1000):  # DeleteObjects takes 1,000 keys a request
            await self.fs._bulk_delete([f"{self.bucket}/{key}" for key in keys[at:at + 1000]])


async def _s3_conditional(request, key: str):
    """Await a conditional write; ``FileExistsError`` where its condition refused it (s3fs says so
    itself only where the store's error names the condition)."""
    try:
        return await request
    except (FileExistsError, FileNotFoundError):
        raise
    except Exception as exc:
        cause = exc.__cause__ or exc.__context__
        response = getattr(cause, "response", None) or {}
        if response.get("Error", {}).get("Code") in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
            raise FileExistsError(key) from None
        raise


class AzureObjects(Objects):
    def sizes(self, prefix: str) -> Iterator[tuple[str, int]]:
        # One flat listing (no delimiter; fsspec's walk would list folder by folder).
        from fsspec.asyn import sync

        start = f"{prefix}/" if prefix else ""
        pages = self.fs.service_client.get_container_client(self.bucket).list_blobs(name_starts_with=start).by_page()
        while (page := sync(self.fs.loop, self._next_page, pages)) is not None:
            yield from ((name[len(start):], size) for name, size in page)

    async def _next_page(self, pages) -> list[tuple[str, int]] | None:
        async with _azure_errors(self.bucket):
            try:
                page = await pages.__anext__()
            except StopAsyncIteration:
                return None
            return [(blob.name, blob.size) async for blob in page]

    def _blob(self, key: str):
        return self.fs.service_client.get_blob_client(self.bucket, key)

    async def read(self, key: str) -> tuple[bytes, str]:
        async with _azure_errors(key):
            stream = await self._blob(key).download_blob()
            return await stream.readall(), stream.properties.etag

    async def read_range(self, key: str, start: int, end: int) -> bytes:
        async with _azure_errors(key):
            return await (await self._blob(key).download_blob(offset=start, length=end - start)).readall()

    async def read_tail(self, key: str, count: int) -> tuple[bytes, int]:
        async with _azure_errors(key):
            size = (await self._blob(key).get_blob_properties()).size
            if size == 0:
                return b"", 0
            start = max(0, size - count)
            return await (await self._blob(key).download_blob(offset=start, length=size - start)).readall(), size

    async def put(self, key: str, data: bytes, if_match: str | None = None) -> None:
        from azure.core import MatchConditions

        condition = ({"overwrite": True, "etag": if_match, "match_condition": MatchConditions.IfNotModified}
                     if if_match else {"overwrite": False})
        async with _azure_errors(key, written=True):
            await self._blob(key).upload_blob(data, **condition)

    async def put_in_parts(self, key: str, path: Path, part_bytes: int) -> None:
        # Blocks staged, then committed with If-None-Match: * (uncommitted blocks are dropped by
        # the store after a week).
        from azure.storage.blob import BlobBlock

        blob, blocks = self._blob(key), []
        async with _azure_errors(key, written=True):
            with open(path, "rb") as f:
                while piece := f.read(part_bytes):
                    block_id = base64.b64encode(f"{len(blocks):08d}".encode()).decode()
                    await blob.stage_block(block_id, piece)
                    blocks.append(BlobBlock(block_id=block_id))
            await blob.commit_block_list(blocks, if_none_match="*")

    async def md5(self, key: str) -> str | None:
        # Put Blob stores the MD5 of its bytes; a block list's has none (never equal, then).
        try:
            async with _azure_errors(key):
                digest = (await self._blob(key).get_blob_properties()).content_settings.content_md5
        except FileNotFoundError:
            return None
        return bytes(digest).hex() if digest else ""

    async def check_bucket(self) -> None:
        async with _azure_errors(self.bucket):
            await self.fs.service_client.get_container_client(self.bucket).get_container_properties()

    async def remove(self, keys: list[str]) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        container = self.fs.service_client.get_container_client(self.bucket)
        for key in keys:  # one request each (batched deletes are not in every Azure-compatible store)
            with contextlib.suppress(ResourceNotFoundError):
                await container.delete_blob(key)


class _azure_errors(contextlib.AbstractAsyncContextManager):
    """The Azure SDK's errors as this module's: a missing blob or container, a refused condition."""

    def __init__(self, key: str, written: bool = False) -> None:
        self.key, self.written = key, written

    async def __aexit__(self, kind, exc, traceback) -> bool:
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

        if isinstance(exc, ResourceNotFoundError):
            raise FileNotFoundError(self.key) from None
        if self.written and isinstance(exc, (ResourceExistsError, ResourceModifiedError)):
            raise FileExistsError(self.key) from None
        if getattr(exc, "status_code", None) == 403:  # the key, signature or identity refused
            raise PermissionError(getattr(exc, "error_code", None) or "the store refused the credentials") from None
        return False


def objects_of(fs, bucket: str) -> Objects | None:
    """The dialect of ``fs``'s store (None: one an index cannot live in yet)."""
    protocols = set(fs.protocol if isinstance(fs.protocol, (tuple, list)) else [fs.protocol])
    if protocols & {"s3", "s3a"}:
        return S3Objects(fs, bucket)
    if protocols & {"az", "abfs"}:
        return AzureObjects(fs, bucket)
    return None


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()
