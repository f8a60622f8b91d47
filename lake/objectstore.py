"""A lake root on S3 (or an S3-compatible store): where it is and how to reach it.

Credentials and the endpoint come from the standard AWS environment variables, read once
when a lake is opened: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN),
AWS_REGION (or AWS_DEFAULT_REGION; us-east-1 when neither), and for a store other than
AWS S3 itself AWS_ENDPOINT_URL (AWS_ALLOW_HTTP=true for a plain-http one).

Commits are safe with concurrent writers without a lock service: delta-rs (deltalake
1.6.6) writes each `_delta_log/<version>.json` with a conditional put (`If-None-Match:
*`), so of two writers racing for one version the store lets one win and the other gets
a conflict (412) that delta-rs retries at the next version; no DynamoDB lock is needed.
It does so by default (seen on the wire, with or without the options below); the store
must honour the header: AWS S3 does (since 2024), as do MinIO, Cloudflare R2 and moto's
server (tests/lake/test_s3_lake.py makes two commits collide and shows a store that
ignores the header losing one). `conditional_put: etag` is set explicitly as well: the
object store's conditional mode for S3-compatible stores (If-Match on updates too), kept
on whatever a later default is. AWS_S3_ALLOW_UNSAFE_RENAME, the lock-free "single writer"
mode of older delta-rs, is refused unless CRUCIBLE_LAKE_UNSAFE_COMMITS=1 says so.

Blobs go through pyarrow's S3 file system: an object appears whole when its upload
completes, so a reader never sees half a blob.

Concurrent runs: a local lake has a run lock (`lake/lock.py`, an flock the kernel drops
when its holder dies); an object-store lake has none, and two writing commands on one
S3 lake are let run. What that costs is work, never data: both select the same pending
work and do it twice, their commits both land (the conditional put above), the writer and
the views keep one row per id, and exports go to a local directory, where each export's
own temp directory and commit order keep it whole (`lake/export.py`). A lock on S3 would
have to be a lease (an object written with If-None-Match, renewed by a heartbeat, taken
over after it expires): a holder killed keeps the lake for the lease's length, a holder
paused past it (a long GC, a partition) runs on beside the next one, and pyarrow's file
system cannot send the conditional headers, so it needs another S3 client. None of that
buys correctness the commits do not already have, so it is left out: run one scheduler
per S3 lake (one `crucible serve`, or the cluster's own job queue).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import pyarrow.fs as pafs

SCHEMES = ("s3", "s3a")
# A URL passed through pathlib (`Path("s3://b/p")` is `s3:/b/p`) is still that URL: the
# CLI's --lake is a Path, and so is a run's settings field.
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):/{1,2}(?P<rest>.*)$")
# S3's own rule: 3-63 of lower-case letters, digits, dots and hyphens, a letter or digit
# at each end.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_TRUE = ("1", "true", "yes", "on")
UNSAFE_KEYS = ("AWS_S3_ALLOW_UNSAFE_RENAME",)
UNSAFE_OPT_IN = "CRUCIBLE_LAKE_UNSAFE_COMMITS"


class ObjectStoreError(Exception):
    """An object-store lake root or its settings cannot be used; the message says why."""


def is_url(root: str | os.PathLike[str]) -> bool:
    """An object-store (or any scheme://) root, as opposed to a local path."""
    text = os.fspath(root)
    m = _URL.match(text)
    return bool(m) and m["scheme"].lower() != "file" and len(m["scheme"]) > 1


def display(root: str | os.PathLike[str]) -> str:
    """A lake root as a person writes it: `s3://bucket/prefix` even where pathlib made it
    `s3:/bucket/prefix` (the CLI's --lake is a Path), a local path as it is."""
    text = os.fspath(root)
    if not is_url(text):
        return text
    m = _URL.match(text)
    return f"{m['scheme']}://{m['rest']}".rstrip("/")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # no leading or trailing slash; "" for the bucket's root

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    @property
    def path(self) -> str:
        """The root as pyarrow's S3 file system names it: `bucket/prefix`."""
        return f"{self.bucket}/{self.prefix}".rstrip("/")

    def join(self, *parts: str) -> str:
        return "/".join([self.url, *parts])

    def fs_path(self, *parts: str) -> str:
        return "/".join([self.path, *parts])


def parse_url(root: str | os.PathLike[str]) -> S3Location:
    """`s3://bucket/prefix` (or the `s3:/bucket/prefix` pathlib makes of it)."""
    text = os.fspath(root)
    m = _URL.match(text)
    if not m or m["scheme"].lower() not in SCHEMES:
        scheme = m["scheme"] if m else text
        raise ObjectStoreError(
            f"lake root {text!r}: scheme {scheme!r} is not supported; use a local directory "
            "or s3://BUCKET/PREFIX (AWS S3 or an S3-compatible store via AWS_ENDPOINT_URL)"
        )
    bucket, _, prefix = m["rest"].partition("/")
    prefix = prefix.strip("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise ObjectStoreError(
            f"lake root {text!r}: {bucket!r} is not a valid S3 bucket name (3-63 lower-case "
            "letters, digits, dots and hyphens): pass s3://BUCKET/PREFIX"
        )
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ObjectStoreError(
            f"lake root {text!r}: the prefix {prefix!r} has an empty, '.' or '..' part: "
            "pass s3://BUCKET/PREFIX with plain path parts"
        )
    return S3Location(bucket, prefix)


@dataclass(frozen=True)
class S3Settings:
    """How to reach the store: what the AWS environment variables say."""

    access_key: str
    secret_key: str
    region: str
    endpoint: str | None = None  # None: AWS S3 itself
    session_token: str | None = None
    allow_http: bool = False
    unsafe: Mapping[str, str] | None = None  # unsafe keys asked for, with the opt-in

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> S3Settings:
        key, secret = env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")
        if not key or not secret:
            missing = [
                n
                for n, v in (("AWS_ACCESS_KEY_ID", key), ("AWS_SECRET_ACCESS_KEY", secret))
                if not v
            ]
            raise ObjectStoreError(
                f"an s3:// lake needs credentials: set {' and '.join(missing)} (and "
                "AWS_ENDPOINT_URL for a store other than AWS S3, AWS_REGION for its region)"
            )
        unsafe = {k: env[k] for k in UNSAFE_KEYS if env.get(k, "").lower() in _TRUE}
        if unsafe and env.get(UNSAFE_OPT_IN, "").lower() not in _TRUE:
            raise ObjectStoreError(
                f"{', '.join(unsafe)} is set: it would let concurrent writers overwrite each "
                "other's commits, and the lake needs no such mode (delta-rs commits with a "
                f"conditional put): unset it, or set {UNSAFE_OPT_IN}=1 if exactly one process "
                "ever writes this lake and the store lacks conditional writes"
            )
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ObjectStoreError(
                    f"AWS_ENDPOINT_URL={endpoint!r} is not a URL: set it to "
                    "http(s)://HOST:PORT of the S3-compatible store"
                )
        allow_http = env.get("AWS_ALLOW_HTTP", "").lower() in _TRUE
        if endpoint and endpoint.startswith("http://") and not allow_http:
            raise ObjectStoreError(
                f"AWS_ENDPOINT_URL={endpoint} is plain http: set AWS_ALLOW_HTTP=true to allow "
                "it (a local or private store), or use https"
            )
        return cls(
            access_key=key,
            secret_key=secret,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            endpoint=endpoint,
            session_token=env.get("AWS_SESSION_TOKEN") or None,
            allow_http=allow_http,
            unsafe=unsafe or None,
        )

    def storage_options(self) -> dict[str, str]:
        """delta-rs's options: everything explicit, so a stray variable in the environment
        of one process cannot make its commits differ from another's."""
        opts = {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "conditional_put": "etag",
        }
        if self.session_token:
            opts["AWS_SESSION_TOKEN"] = self.session_token
        if self.endpoint:
            opts["AWS_ENDPOINT_URL"] = self.endpoint
        if self.allow_http:
            opts["AWS_ALLOW_HTTP"] = "true"
        opts.update(self.unsafe or {})
        return opts

    def filesystem(self) -> pafs.S3FileSystem:
        kw: dict[str, object] = {}
        if self.endpoint:
            parts = urlsplit(self.endpoint)
            kw["endpoint_override"] = parts.netloc
            kw["scheme"] = parts.scheme
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            session_token=self.session_token,
            region=self.region,
            # Short timeouts and few retries: a wrong endpoint should fail the open in
            # seconds, not after minutes of backoff.
            connect_timeout=5,
            request_timeout=30,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=3),
            **kw,
        )

    def duckdb_secret(self, location: S3Location) -> str:
        """CREATE SECRET for DuckDB's httpfs, scoped to the lake's bucket/prefix."""

        def q(text: str) -> str:
            return "'" + text.replace("'", "''") + "'"

        fields = [
            "TYPE s3",
            f"KEY_ID {q(self.access_key)}",
            f"SECRET {q(self.secret_key)}",
            f"REGION {q(self.region)}",
            f"SCOPE {q(location.url)}",
        ]
        if self.session_token:
            fields.append(f"SESSION_TOKEN {q(self.session_token)}")
        if self.endpoint:
            parts = urlsplit(self.endpoint)
            fields += [
                f"ENDPOINT {q(parts.netloc)}",
                "URL_STYLE 'path'",  # a custom endpoint has no per-bucket host names
                f"USE_SSL {'true' if parts.scheme == 'https' else 'false'}",
            ]
        return f"CREATE OR REPLACE SECRET crucible_lake ({', '.join(fields)})"
