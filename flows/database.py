"""The database behind `crucible server`: a URL checked before Prefect sees it.

Prefect's server keeps flow runs, schedules and logs in SQLite by default (a file under
PREFECT_HOME) or in PostgreSQL. Given a URL, Prefect starts, runs its migrations and only
then finds out that the database is not there, with a long traceback. `check_database`
says it first, in one line that names what to do, and never with the password in it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from flows.options import UserError

# what the user may write → the async driver Prefect's server needs
DRIVERS = {
    "postgresql": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
}
CONNECT_TIMEOUT_S = 10.0
EXAMPLE = "postgresql://USER:PASSWORD@HOST:5432/DATABASE"


@dataclass(frozen=True)
class Database:
    url: str  # for Prefect: the async driver named, the password in it
    shown: str  # for people: the password replaced by ***

    @property
    def is_postgres(self) -> bool:
        return self.url.startswith("postgresql+")


def parse_database(text: str) -> Database:
    """The URL with its driver made the async one Prefect's server needs (`postgresql://`
    → `postgresql+asyncpg://`, `sqlite://` → `sqlite+aiosqlite://`); any other scheme is
    refused with what to write instead."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text.strip())
    except (ArgumentError, ValueError):
        raise UserError(
            f"--database: not a database URL; write it as {EXAMPLE} (or sqlite:///PATH)"
        ) from None
    driver = DRIVERS.get(url.drivername)
    if driver is None:
        raise UserError(
            f"--database: unsupported scheme {url.drivername!r}; Prefect's server runs on "
            f"PostgreSQL ({EXAMPLE}) or SQLite (sqlite:///PATH)"
        )
    url = url.set(drivername=driver)
    if driver.startswith("postgresql") and not (url.host and url.database):
        raise UserError(
            f"--database: {url.render_as_string(hide_password=True)} names no host or no "
            f"database; write it as {EXAMPLE}"
        )
    return Database(
        url=url.render_as_string(hide_password=False),
        shown=url.render_as_string(hide_password=True),
    )


def check_database(db: Database, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a database Prefect's server could not use: PostgreSQL that does not answer
    or lets this user in nowhere, a SQLite file whose folder is missing."""
    from sqlalchemy.engine import make_url

    url = make_url(db.url)
    if not db.is_postgres:
        folder = Path(url.database or "").expanduser().resolve().parent
        if url.database and url.database != ":memory:" and not folder.is_dir():
            raise UserError(f"--database {db.shown}: folder {folder} does not exist; create it")
        return
    try:
        asyncio.run(_connect(url, timeout_s))
    except UserError:
        raise
    except Exception as e:  # asyncpg's error classes: only known by import inside _connect
        raise UserError(_why(e, url, db.shown)) from None


async def _connect(url, timeout_s: float) -> None:
    import asyncpg

    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn=dsn, timeout=timeout_s)
    await conn.close()


def _why(e: Exception, url, shown: str) -> str:
    """One line for a failed connect: what happened and what to do."""
    import asyncpg

    where = f"{url.host}:{url.port or 5432}"
    head = f"--database {shown}: "
    if isinstance(e, asyncpg.InvalidCatalogNameError):
        return (
            head + f"database {url.database!r} does not exist on {where}; create it "
            f"(createdb -O {url.username or 'USER'} {url.database}) or name another"
        )
    if isinstance(e, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError):
        return (
            head + f"PostgreSQL at {where} refused user {url.username!r} ({type(e).__name__}); "
            "check the user and password in the URL and pg_hba.conf"
        )
    if isinstance(e, TimeoutError | asyncio.TimeoutError):
        return (
            head + f"no answer from {where} within the timeout; check the host and port "
            "and that a firewall lets them through"
        )
    if isinstance(e, OSError):
        return (
            head + f"cannot reach PostgreSQL at {where} ({type(e).__name__}: "
            f"{e.strerror or e}); start PostgreSQL there or fix the host and port"
        )
    if isinstance(e, asyncpg.PostgresError):
        return head + f"PostgreSQL at {where} refused the connection: {e}"
    return head + f"cannot connect to PostgreSQL at {where}: {type(e).__name__}: {e}"
