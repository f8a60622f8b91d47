"""Where log lines go: Crucible's own records to the Prefect flow run's Logs tab (INFO and
up, with or without `-v`), the console only what a person running the command wants.

Crucible's loggers (`CRUCIBLE_LOGGERS`) are set to INFO and given Prefect's API handler
when a flow run starts (`to_prefect`), so a run's Logs tab holds what its stages did also
in a deployment's own process, which never passes through the CLI. The console handler
(`setup_cli`) shows WARNING and up (INFO with `-v`) and never the HTTP client's per-request
lines (httpx, httpcore, Prefect's client), which talk to the Prefect API on every log
batch and state change and would bury the run's own lines.
"""

from __future__ import annotations

import logging
from typing import IO

# the packages whose records are Crucible's own
CRUCIBLE_LOGGERS = ("flows", "lake", "ray_actors", "generators", "verifiers")

# loggers whose INFO and DEBUG lines are transport chatter, never shown on the console
HTTP_NOISE = ("httpx", "httpcore", "hpack", "prefect.client", "urllib3", "websockets")

FORMAT = "%(levelname)s %(name)s: %(message)s"


class QuietHttp(logging.Filter):
    """Drops the HTTP clients' records below WARNING (a failing request still shows)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        name = record.name
        return not any(name == n or name.startswith(n + ".") for n in HTTP_NOISE)


def setup_cli(verbose: bool = False, debug: bool = False, stream: IO[str] | None = None) -> None:
    """The command's logging: one console handler on the root logger (WARNING, INFO with
    `verbose`, DEBUG with `debug`) that never shows HTTP-client chatter, and Crucible's
    loggers at INFO (DEBUG with `debug`) so their records reach the Prefect UI whatever
    the console shows. `stream`: where the console is (default stderr). Calling it again
    replaces its handler."""
    level = logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING
    handler = logging.StreamHandler(stream)
    handler.setLevel(level)  # loggers that set their own level (Prefect's) still stop here
    handler.addFilter(QuietHttp())
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_crucible_console", False)]:
        root.removeHandler(old)
    handler._crucible_console = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(min(level, logging.WARNING))
    _crucible_level(logging.DEBUG if debug else logging.INFO)


def _crucible_level(level: int) -> None:
    for name in CRUCIBLE_LOGGERS:
        lg = logging.getLogger(name)
        if lg.level == logging.NOTSET or lg.level > level:
            lg.setLevel(level)


def to_prefect() -> None:
    """Send Crucible's records (INFO and up) to the Prefect API as the current flow run's
    logs. Idempotent; records made outside a flow or task run are not sent (nor warned
    about). Called where a flow run starts."""
    _crucible_level(logging.INFO)
    handler_cls = _run_log_handler()
    for name in CRUCIBLE_LOGGERS:
        lg = logging.getLogger(name)
        # PREFECT_LOGGING_EXTRA_LOGGERS attaches Prefect's own handler: one is enough
        if not any(isinstance(h, handler_cls.__mro__[1]) for h in lg.handlers):
            lg.addHandler(handler_cls())


_HANDLER: type | None = None


def _run_log_handler() -> type:
    global _HANDLER
    if _HANDLER is None:
        from prefect.context import FlowRunContext, TaskRunContext
        from prefect.logging.handlers import APILogHandler

        class RunLogHandler(APILogHandler):
            """Prefect's API handler, silent outside a run (a Ray or writer thread that
            carries no run context, a command that runs no flow)."""

            def emit(self, record: logging.LogRecord) -> None:
                if (
                    getattr(record, "flow_run_id", None)
                    or FlowRunContext.get() is not None
                    or TaskRunContext.get() is not None
                ):
                    super().emit(record)

        _HANDLER = RunLogHandler
    return _HANDLER


class _NotPrefect(logging.Filter):
    """Drops Prefect's own records below CRITICAL."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        return record.levelno >= logging.CRITICAL or not (
            name == "prefect" or name.startswith("prefect.")
        )


def hush_prefect_console() -> None:
    """From now on no console handler shows Prefect's own records (below CRITICAL).
    After Ctrl-C Prefect reports the run it aborts as errors ("Crash detected!", "Finished
    in state Crashed", its event client reconnecting): they still reach the flow run's
    logs in the API, and the command's one line says what happened."""
    loggers = [logging.getLogger(), *list(logging.Logger.manager.loggerDict.values())]
    for lg in loggers:
        for h in getattr(lg, "handlers", ()):  # placeholders have none
            if isinstance(h, logging.StreamHandler) and not any(
                isinstance(f, _NotPrefect) for f in h.filters
            ):
                h.addFilter(_NotPrefect())
