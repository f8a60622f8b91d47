"""The lake root: its Delta tables and its content-addressed artifact blobs.

Opening a `Lake` validates the root once, up front, so a wrong `--lake` path fails with
what to do about it instead of a Rust backtrace in the middle of a stage. A lake of an
older format this Crucible knows (`MIGRATES_FROM`) is migrated in place when it is opened
writable; a read-only open of one says how to migrate it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from lake import objectstore
from lake.schema import CHECK_TYPE, TABLES, artifact_path, spec
from verifiers import domain as domain_registry

log = logging.getLogger(__name__)
T = TypeVar("T")

MARKER = "_crucible_lake.json"
LAKE_FORMAT = 2
# Older formats an open migrates (writable only), and what changed:
# 1 -> 2: every verdict check records its stage (`checks[].stage`, from the descriptor).
MIGRATES_FROM = (1,)
# Tables added to a format after it shipped: a writable open creates them, and a read-only
# open of a lake made before them reads them as empty (`Lake.absent`) instead of refusing
# a lake that no command has written since the upgrade.
LATER_TABLES = frozenset({"rewards"})
# Tables and blobs live in separate subtrees: a Delta `vacuum(full=True)` deletes every file
# under a table directory that no commit references, so blobs inside the `artifacts` table
# directory would be wiped.
TABLES_DIR = "tables"
ARTIFACTS = "artifacts"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class LakeError(Exception):
    """The lake cannot be used as it is; the message says what to do."""


class RemoteRoot(str):
    """An object-store lake's root URL. It has no local subdirectories: code that would
    put something beside the tables (`root / "exports"`) is told to pass a local one."""

    def __truediv__(self, part: object) -> Path:
        raise LakeError(
            f"lake {self} is on an object store and has no local directory for {part}: "
            "pass a local directory for it (e.g. --out or --export-dir)"
        )


class LakeFull(LakeError):
    """The lake's file system has no space left. Raised before anything was committed:
    a Delta commit is one atomic log file and blobs are renamed into place whole."""

    def __init__(self, root: Path, what: str) -> None:
        super().__init__(
            f"the lake's disk is full at {root}: free space and run again; nothing was "
            f"half-written ({what} not committed, every committed row is intact, and the "
            "next run resumes where the lake stopped)"
        )


# errno texts as the Rust object store reports them (os error 28: ENOSPC, 122: EDQUOT)
_FULL_WORDS = ("no space left on device", "disk quota exceeded", "os error 28", "os error 122")


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return any(w in text for w in _FULL_WORDS)


def first_line(exc: BaseException) -> str:
    # delta-rs appends a Rust backtrace to its messages; the first line is the useful part.
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Lake:
    """A lake root: one Delta table per record kind under `tables/`, blobs under
    `artifacts/<sha[:2]>/<sha>`, and a `_crucible_lake.json` marker.

    The root is a local directory or `s3://bucket/prefix` (lake/objectstore.py: how it is
    reached, and why concurrent commits there are safe). Table locations are URI strings
    and `storage_options` goes to delta-rs with every table open and write. `root` is a
    `Path` for a local lake and the URL string for an object-store one (`is_remote`).

    `readonly=True` opens an existing lake without creating or probing anything, so a
    lake on a read-only mount (an archived snapshot) can still be queried.
    `check_files=False` opens a lake whose tables lost data files (for `repair` only).
    """

    def __init__(
        self, root: str | os.PathLike[str], *, readonly: bool = False, check_files: bool = True
    ) -> None:
        text = os.fspath(root)
        self.s3: objectstore.S3Location | None = None
        self.storage_options: dict[str, str] | None = None
        self.root: Path | str
        if objectstore.is_url(text):
            try:
                self.s3 = objectstore.parse_url(text)
                settings = objectstore.S3Settings.from_env(os.environ)
            except objectstore.ObjectStoreError as exc:
                raise LakeError(str(exc)) from None
            self.s3_settings = settings
            self.root = RemoteRoot(self.s3.url)
            self.storage_options = settings.storage_options()
            self._fs = settings.filesystem()
        else:
            self.root = Path(text.removeprefix("file://")).expanduser().absolute()
        self.readonly = readonly
        self.absent: frozenset[str] = frozenset()  # LATER_TABLES a read-only open lacks
        self.check_files = check_files
        self._stale_format: int | None = None  # an older format on disk, to migrate
        self._open()

    def __repr__(self) -> str:
        ro = ", readonly=True" if self.readonly else ""
        return f"Lake({str(self.root)!r}{ro})"

    # --- opening ---------------------------------------------------------------------

    @property
    def is_remote(self) -> bool:
        return self.s3 is not None

    def _open(self) -> None:
        if self.s3 is not None:
            return self._open_remote()
        self._prepare_root()
        if not self.readonly:
            self._check_writable()
        self._check_marker()
        absent = [n for n in TABLES if _is_absent(self.table_path(n))]
        if absent and not self.readonly:
            # Two processes creating one table both commit a CREATE (version 0 and 1): take
            # turns, and the second finds the table made.
            with open(self.root / ".create.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                for name in absent:
                    if _is_absent(self.table_path(name)):
                        self._create_table(name)
        self.absent = frozenset(
            n for n in LATER_TABLES if self.readonly and _is_absent(self.table_path(n))
        )
        for name in TABLES:
            if name not in self.absent:
                self._open_table(name)
        if self._stale_format is not None:
            if self.check_files:
                self._migrate()
            else:  # `repair` drops lost files first; the next normal open migrates
                log.warning(
                    "lake %s has format %s: not migrated while its files are not checked",
                    self.root,
                    self._stale_format,
                )

    # --- an object-store root ---------------------------------------------------------

    def _open_remote(self) -> None:
        """A local open's checks through the S3 API: the bucket answers to these
        credentials, the marker names a Crucible lake (or the prefix is empty), every table
        is a Delta table with our columns and all its files. No create lock: two processes
        creating one table race on its version-0 commit, which the conditional put settles
        (the loser finds the table made)."""
        assert self.s3 is not None
        self._check_bucket()
        self._check_marker_remote()  # before any write: a foreign prefix gets none
        if not self.readonly:
            self._check_writable_remote()
        absent = set()
        for name in TABLES:
            uri, opts = self.table_uri(name), self.storage_options
            if not self._remote(DeltaTable.is_deltatable, uri, opts):
                if self.readonly and name in LATER_TABLES:
                    absent.add(name)
                    continue
                if self.readonly:
                    raise LakeError(
                        f"lake {self.root} has no table {name!r}; open it writable once to "
                        "create the missing tables"
                    )
                self._create_table(name)
        self.absent = frozenset(absent)
        for name in TABLES:
            if name in self.absent:
                continue
            self._open_table(name)

    def _remote(self, call: Callable[..., T], *args: object) -> T:
        """One S3 request; a fault of the store (unreachable, refused) as a LakeError that
        says what to check. A missing object stays FileNotFoundError for the caller."""
        try:
            return call(*args)
        except FileNotFoundError:
            raise
        except OSError as exc:
            endpoint = self.s3_settings.endpoint or "AWS S3"
            raise LakeError(
                f"lake {self.root}: the object store at {endpoint} failed "
                f"({first_line(exc)}): check AWS_ENDPOINT_URL, the credentials "
                "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and that the store is up"
            ) from None

    def _check_bucket(self) -> None:
        assert self.s3 is not None
        info = self._remote(self._fs.get_file_info, self.s3.bucket)
        if info.type == pafs.FileType.NotFound:
            raise LakeError(
                f"lake {self.root}: bucket {self.s3.bucket!r} does not exist at "
                f"{self.s3_settings.endpoint or 'AWS S3'}: create it (e.g. `aws s3 mb "
                f"s3://{self.s3.bucket}`) or pass an existing bucket"
            )

    def _check_writable_remote(self) -> None:
        assert self.s3 is not None
        # One fixed key, overwritten by every open and never deleted: pyarrow's delete
        # would put a directory marker object in its place.
        try:
            _put_object(self._fs, self.s3.fs_path(".write-probe"), b"")
        except OSError as exc:
            raise LakeError(
                f"lake root {self.root} is not writable ({first_line(exc)}): grant these "
                "credentials s3:PutObject on it, or pass another prefix"
            ) from None

    def _check_marker_remote(self) -> None:
        assert self.s3 is not None
        marker = self.s3.fs_path(MARKER)
        try:
            text = self._remote(_get_object, self._fs, marker)
        except FileNotFoundError:
            text = None
        if text is not None:
            try:
                fmt = json.loads(text)["format"]
            except (ValueError, KeyError, TypeError) as exc:
                raise LakeError(
                    f"{self.s3.join(MARKER)} is unreadable ({first_line(exc)}): restore it "
                    f'as {{"format": {LAKE_FORMAT}}} if {self.root} is a Crucible lake'
                ) from None
            if fmt != LAKE_FORMAT:
                raise LakeError(
                    f"lake {self.root} has format {fmt}; this Crucible reads format "
                    f"{LAKE_FORMAT} and migrates only local lakes: copy it to a local "
                    "directory, open it there once, and copy it back (or use the matching "
                    "Crucible version)"
                )
            return
        if self.readonly:
            raise LakeError(
                f"no lake at {self.root} (no {MARKER}): pass the --lake of an existing lake "
                f"(`crucible run --lake {self.root}` makes one)"
            )
        listing = pafs.FileSelector(self.s3.path, recursive=False, allow_not_found=True)
        known = {TABLES_DIR, ARTIFACTS, MARKER}
        foreign = sorted(
            name
            for info in self._remote(self._fs.get_file_info, listing)
            if (name := info.base_name) not in known and not name.startswith(".")
        )
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise LakeError(
                f"{self.root} is not empty and not a Crucible lake (no {MARKER}; holds "
                f"{shown}): pass a new or empty prefix"
            )
        # Two processes opening one new lake both write the same bytes: either wins.
        body = (json.dumps({"format": LAKE_FORMAT}) + "\n").encode()
        self._remote(_put_object, self._fs, marker, body)

    # --- a local root ----------------------------------------------------------------

    def _prepare_root(self) -> None:
        root = self.root
        if root.exists() and not root.is_dir():
            raise LakeError(
                f"lake root {root} is a file, not a directory: pass a directory path "
                "(it is created if absent)"
            )
        if self.readonly:
            if not root.is_dir():
                raise LakeError(f"no lake at {root}: a read-only open needs an existing lake")
            return
        try:
            root.mkdir(parents=True, exist_ok=True)
        except NotADirectoryError:
            raise LakeError(
                f"cannot create lake root {root}: a parent of it is a file, not a directory; "
                "pass a path under a directory"
            ) from None
        except OSError as exc:
            raise LakeError(
                f"cannot create lake root {root}: {exc.strerror or exc}; create it yourself "
                "with write permission or pass a writable path"
            ) from None

    def _check_writable(self) -> None:
        # os.access() answers for the real uid and says yes to root on directories root still
        # cannot write (immutable, read-only bind mounts): only an actual write tells.
        try:
            fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=self.root)
        except OSError as exc:
            hint = "it is on a read-only file system" if exc.errno == errno.EROFS else ""
            raise LakeError(
                f"lake root {self.root} is not writable ({exc.strerror or exc}"
                f"{'; ' + hint if hint else ''}): fix its permissions or pass another path"
            ) from None
        os.close(fd)
        os.unlink(probe)

    def _check_marker(self) -> None:
        marker = self.root / MARKER
        if marker.exists():
            try:
                fmt = json.loads(marker.read_text())["format"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise LakeError(
                    f"{marker} is unreadable ({first_line(exc)}): restore it as "
                    f'{{"format": {LAKE_FORMAT}}} if {self.root} is a Crucible lake'
                ) from None
            if fmt in MIGRATES_FROM:
                if self.readonly:
                    raise LakeError(
                        f"lake {self.root} has format {fmt}; this Crucible reads format "
                        f"{LAKE_FORMAT} and migrates a lake in place when it opens it "
                        "writable: open it once without readonly (e.g. python -c "
                        f"\"from lake.store import Lake; Lake('{self.root}')\"), or read it "
                        "with the Crucible version that wrote it"
                    )
                self._stale_format = fmt
            elif fmt != LAKE_FORMAT:
                raise LakeError(
                    f"lake {self.root} has format {fmt}; this Crucible reads format "
                    f"{LAKE_FORMAT}: use the matching Crucible version"
                )
            return
        if self.readonly:
            raise LakeError(f"{self.root} is not a Crucible lake (no {MARKER})")
        # MARKER too: a process opening the same new lake may write it at any moment
        known = {TABLES_DIR, ARTIFACTS, MARKER}
        foreign = sorted(
            p.name for p in self.root.iterdir() if p.name not in known and p.name[0] != "."
        )
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise LakeError(
                f"{self.root} is not empty and not a Crucible lake (no {MARKER}; holds "
                f"{shown}): pass a new or empty directory"
            )
        if marker.exists():  # written by another process since the check above
            return self._check_marker()
        self._write_marker()

    def _write_marker(self) -> None:
        tmp = self.root / f".{MARKER}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"format": LAKE_FORMAT}) + "\n")
        os.replace(tmp, self.root / MARKER)

    # --- migration -------------------------------------------------------------------

    def _migrate(self) -> None:
        """Bring an older lake to `LAKE_FORMAT`. Each table rewrite is one Delta commit
        (an overwrite: the old files stay until a vacuum), and the marker moves last, so a
        crash at any point leaves every row in place and the next open finishes the job."""
        with open(self.root / ".create.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                done = json.loads((self.root / MARKER).read_text())["format"] == LAKE_FORMAT
            except (OSError, ValueError, KeyError, TypeError):
                done = False
            if not done:  # another process may have migrated it while we waited
                self._add_check_stages()
                self._write_marker()
                log.warning(
                    "migrated lake %s from format %s to %s",
                    self.root,
                    self._stale_format,
                    LAKE_FORMAT,
                )
        self._stale_format = None

    def _add_check_stages(self) -> None:
        """Format 1 -> 2: rewrite `verdicts` with each check's stage, which the domain's
        descriptor gives (a gate or domain it does not know: "")."""
        for attempt in range(3):
            dt = self._load("verdicts")
            if _has_check_stages(dt):
                return
            try:
                rows = _rewrite_with_stages(dt, self.storage_options)
            except CommitFailedError:  # another writer committed meanwhile: read again
                if attempt == 2:
                    raise
                continue
            except (DeltaError, OSError) as exc:
                if is_disk_full(exc):
                    raise LakeFull(self.root, "the verdicts table's migration") from None
                raise LakeError(
                    f"cannot migrate table 'verdicts' of lake {self.root} to format "
                    f"{LAKE_FORMAT} ({first_line(exc)}); nothing was changed: fix that "
                    "and open the lake again"
                ) from None
            log.warning("verdicts of %s: %d rows rewritten with check stages", self.root, rows)
            return

    def _open_table(self, name: str) -> None:
        path = self._where(name)
        if self.s3 is None:
            if _is_absent(self.table_path(name)):
                raise LakeError(
                    f"lake {self.root} has no table {name!r}; open it writable once to "
                    "create the missing tables"
                )
            if not self.table_path(name).is_dir():
                raise LakeError(
                    f"table {name!r} of lake {self.root}: {path} is a file, not a Delta "
                    "table directory; move it aside"
                )
        dt = self._load(name)
        have = set(dt.schema().to_arrow().names)
        missing = [c for c in spec(name).columns if c not in have]
        if missing:
            raise LakeError(
                f"table {name!r} at {path} lacks columns {missing}: it was written by another "
                "Crucible version; migrate it or use a new lake"
            )
        if self.check_files:
            self._check_files(name, dt)

    def _check_files(self, name: str, dt: DeltaTable) -> None:
        """Every data file the table's log lists is there. A deleted one otherwise
        surfaces as a DuckDB IOException in the middle of a stage, after work was done."""
        gone = self._missing_files(name, dt.file_uris())
        if not gone:
            return
        shown = ", ".join(self._relative(u) for u in gone[:3])
        more = f" and {len(gone) - 3} more" if len(gone) > 3 else ""
        raise LakeError(
            f"table {name!r} of lake {self.root} is missing {len(gone)} of its data files "
            f"({shown}{more}): restore them from a backup, or run `crucible repair --lake "
            f"{self.root}` to drop them from the table (their rows are lost; the stages "
            "that wrote them redo that work on the next run)"
        )

    def _missing_files(self, name: str, uris: list[str]) -> list[str]:
        if self.s3 is None:
            return [uri for uri in uris if not os.path.exists(uri)]
        # One listing of the table's prefix, not a request per file.
        listing = pafs.FileSelector(
            self.s3.fs_path(TABLES_DIR, spec(name).name), recursive=True, allow_not_found=True
        )
        have = {info.path for info in self._remote(self._fs.get_file_info, listing)}
        return [uri for uri in uris if _fs_path(uri) not in have]

    def _relative(self, uri: str) -> str:
        if self.s3 is None:
            return str(Path(uri).relative_to(self.root))
        return _fs_path(uri).removeprefix(self.s3.path + "/")

    def _load(self, name: str) -> DeltaTable:
        path = self._where(name)
        try:
            return DeltaTable(self.table_uri(name), storage_options=self.storage_options)
        except TableNotFoundError as exc:
            raise LakeError(
                f"table {name!r} at {path} is not a Delta table ({first_line(exc)}): "
                "its _delta_log is missing or empty; move the directory aside and re-run "
                "the stages that write it"
            ) from None
        except (DeltaError, OSError) as exc:
            raise LakeError(
                f"table {name!r} at {path} is corrupt ({first_line(exc)}): restore "
                "_delta_log from a backup, or move the table aside and re-run the stages "
                "that write it"
            ) from None

    def _create_table(self, name: str) -> None:
        s = spec(name)
        try:
            DeltaTable.create(
                self.table_uri(name),
                s.schema,
                mode="error",
                partition_by=list(s.partition_by) or None,
                name=name,
                storage_options=self.storage_options,
            )
            log.info("created table %s in %s", name, self.root)
        except (DeltaError, OSError) as exc:
            # Another process opening the same new lake may have created it first.
            if DeltaTable.is_deltatable(self.table_uri(name), self.storage_options):
                return
            raise LakeError(
                f"cannot create table {name!r} in {self.root}: {first_line(exc)}"
            ) from None

    # --- tables ----------------------------------------------------------------------

    def table_path(self, name: str) -> Path:
        return self.root / TABLES_DIR / spec(name).name  # an unknown name lists the known

    def table_uri(self, name: str) -> str:
        if self.s3 is not None:
            return self.s3.join(TABLES_DIR, spec(name).name)
        return str(self.table_path(name))

    def _where(self, name: str) -> str:
        """A table's location, for messages."""
        return str(self.table_path(name)) if self.s3 is None else self.table_uri(name)

    def table(self, name: str) -> DeltaTable:
        """The table at its latest version (a fresh snapshot on every call)."""
        return self._load(name)

    def version(self, name: str) -> int:
        return self.table(name).version()

    def versions(self) -> dict[str, int]:
        """Every table's version: what a run records as lake versions read / written."""
        return {name: self.version(name) for name in TABLES if name not in self.absent}

    # --- artifacts -------------------------------------------------------------------

    def artifact_file(self, sha256: str) -> Path:
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        if self.s3 is not None:
            raise LakeError(
                f"lake {self.root} is on an object store: a blob has no local file there; "
                "use read_artifact()"
            )
        return Path(self.root) / artifact_path(sha256)

    def has_artifact(self, sha256: str) -> bool:
        if self.s3 is not None:
            info = self._remote(self._fs.get_file_info, self._artifact_key(sha256))
            return info.type != pafs.FileType.NotFound
        return self.artifact_file(sha256).exists()

    def _artifact_key(self, sha256: str) -> str:
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        assert self.s3 is not None
        return self.s3.fs_path(artifact_path(sha256))

    def put_artifact(self, data: bytes) -> str:
        """Store a blob under its sha256 (once) and return the digest."""
        if self.readonly:
            raise LakeError(f"lake {self.root} was opened read-only: cannot store artifacts")
        sha = hashlib.sha256(data).hexdigest()
        if self.s3 is not None:
            if not self.has_artifact(sha):
                # One object upload: S3 shows an object only once its upload completed,
                # so a reader never sees half a blob (no temp name needed).
                key = self._artifact_key(sha)
                self._remote(_put_object, self._fs, key, data)
            return sha
        dest = self.artifact_file(sha)
        if dest.exists():
            return sha
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            # Temp file in the same directory + rename: readers never see a partial blob,
            # and two writers of the same blob both end with identical content.
            fd, tmp = tempfile.mkstemp(prefix=f".{sha}.", suffix=".tmp", dir=dest.parent)
        except OSError as exc:
            if is_disk_full(exc):
                raise LakeFull(self.root, f"a blob of {len(data):,} bytes") from None
            raise
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, dest)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)
            if is_disk_full(exc):
                raise LakeFull(self.root, f"a blob of {len(data):,} bytes") from None
            raise
        return sha

    def read_artifact(self, sha256: str) -> bytes:
        path: Path | str
        try:
            if self.s3 is not None:
                path = self.s3.join(artifact_path(sha256))
                data = self._remote(_get_object, self._fs, self._artifact_key(sha256))
            else:
                path = self.artifact_file(sha256)
                data = path.read_bytes()
        except FileNotFoundError:
            raise LakeError(f"artifact {sha256} is not in lake {self.root}") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise LakeError(f"artifact {path} is damaged (content does not match its sha256)")
        return data


def _put_object(fs: pafs.FileSystem, key: str, data: bytes) -> None:
    with fs.open_output_stream(key) as out:
        out.write(data)


def _get_object(fs: pafs.FileSystem, key: str) -> bytes:
    with fs.open_input_stream(key) as src:
        return src.read()


def _fs_path(uri: str) -> str:
    """`s3://bucket/key` as pyarrow's S3 file system names it."""
    return uri.split("://", 1)[1] if "://" in uri else uri


def _has_check_stages(dt: DeltaTable) -> bool:
    checks = pa.schema(dt.schema().to_arrow()).field("checks").type
    return "stage" in [f.name for f in checks.value_type]


def _stage(domain: str, gate: str) -> str:
    try:
        return domain_registry.get(domain).stage_of(gate)
    except KeyError:  # an unknown domain (UnknownDomain is a KeyError) or gate
        return ""


def _rewrite_with_stages(dt: DeltaTable, storage_options: dict[str, str] | None) -> int:
    """One overwrite commit of `verdicts` with the current schema, streamed batch by batch;
    the number of rows written."""
    s = spec("verdicts")
    memo: dict[tuple[str, str], str] = {}
    written = 0

    # Read with pyarrow's own file system: the write below runs delta-rs's async runtime,
    # and a dataset that reads through delta-rs cannot be pulled from inside it.
    files = ds.dataset(
        dt.file_uris(),
        schema=pa.schema(dt.schema().to_arrow()),
        format="parquet",
        partitioning=ds.partitioning(
            pa.schema([s.schema.field(c) for c in s.partition_by]), flavor="hive"
        ),
        partition_base_dir=dt.table_uri.removeprefix("file://"),
    )

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal written
        for batch in files.to_batches(columns=list(s.columns)):
            written += batch.num_rows
            yield _with_stages(batch, s.schema, memo)

    write_deltalake(
        dt,
        pa.RecordBatchReader.from_batches(s.schema, batches()),
        mode="overwrite",
        schema_mode="overwrite",
        partition_by=list(s.partition_by) or None,
        storage_options=storage_options,
        commit_properties=CommitProperties(
            custom_metadata={"crucible.migration": "lake format 1 -> 2: checks[].stage"}
        ),
    )
    return written


def _with_stages(
    batch: pa.RecordBatch, schema: pa.Schema, memo: dict[tuple[str, str], str]
) -> pa.RecordBatch:
    checks = batch.column("checks")
    offsets = np.asarray(checks.offsets, dtype=np.int64)  # a sliced list keeps its base
    start = int(offsets[0])
    values = checks.values.slice(start, int(offsets[-1]) - start)
    owner = np.repeat(np.arange(len(checks)), np.diff(offsets))
    domains = batch.column("domain").take(pa.array(owner)).to_pylist()
    old = dict(zip([f.name for f in values.type], values.flatten(), strict=True))
    stages = []
    for key in zip(domains, old["name"].to_pylist(), strict=True):
        if key not in memo:
            memo[key] = _stage(*key)
        stages.append(memo[key])
    fields = []
    for f in CHECK_TYPE:
        if f.name == "stage":
            fields.append(pa.array(stages, pa.string()))
        elif f.name in old:
            fields.append(old[f.name].cast(f.type))
        else:
            fields.append(pa.nulls(len(values), f.type))
    structs = pa.StructArray.from_arrays(fields, fields=list(CHECK_TYPE), mask=values.is_null())
    lists = pa.ListArray.from_arrays(
        pa.array(offsets - start, pa.int32()), structs, mask=checks.is_null()
    )
    columns = [lists if f.name == "checks" else batch.column(f.name).cast(f.type) for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _is_absent(path: Path) -> bool:
    """No table yet: no directory, or only what a crashed create left (an empty log)."""
    if not path.exists():
        return True
    if not path.is_dir():
        return False
    entries = list(path.iterdir())
    if not entries:
        return True
    return (
        len(entries) == 1
        and entries[0].name == "_delta_log"
        and entries[0].is_dir()
        and not any(entries[0].iterdir())
    )
