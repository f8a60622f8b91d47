"""Ctrl-C and SIGTERM stop a `crucible run` at once and say so: the first one cancels the
run (its stage unwinds, its workers stop, the lake records it `cancelled`), a second one
ends the process on the spot (the reaper, `flows.reaper`, takes what it started).

A terminal's Ctrl-C is sent to its whole foreground process group, not to the driver
alone. Ray blocks SIGINT in the processes it starts and the sandboxes run in sessions of
their own, but Prefect's temporary API server (a uvicorn child) died with the driver's
first Ctrl-C, and the run then spent minutes reporting its crash to a dead API ("Error
logging to API", a screen of Prefect events) until more Ctrl-Cs ended it with a
traceback. `start_temporary_api` starts that server with SIGINT blocked, as Ray does.

The handlers are the entry point's (the CLI's `cancel_on_signals`): a flow only puts
them back (`reclaim`) where Prefect's engine and `ray.init` replaced them, and does nothing
where no entry point set them (a served deployment's run, a test).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Cancelled(KeyboardInterrupt):
    """The run was asked to stop (Ctrl-C, SIGTERM). A KeyboardInterrupt, so whatever
    treats Ctrl-C specially (Prefect's engine, Ray's blocking calls) treats this alike;
    Ray re-raises it as a plain KeyboardInterrupt: `first_signal` says which it was."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal_name(signum)}")


def signal_name(signum: int) -> str:
    name = signal.Signals(signum).name
    return f"{name} (Ctrl-C)" if signum == signal.SIGINT else name


def is_cancellation(exc: BaseException) -> bool:
    """Whether `exc` unwinds a run that was asked to stop: Ctrl-C or SIGTERM as the
    command's handler raises it (a KeyboardInterrupt), or SIGTERM as Prefect's engine
    raises it where no command set a handler (a served deployment's run), or whatever a
    C call made of the handler's `Cancelled` once a signal came (DuckDB checks for signals
    mid-query and raises `RuntimeError: Query interrupted` in its place)."""
    from prefect.exceptions import TerminationSignal

    return isinstance(exc, KeyboardInterrupt | TerminationSignal) or first_signal() is not None


def cancellation_text(exc: BaseException) -> str:
    """What the lake's `runs.error` says of a cancelled run: the signal that stopped it."""
    signum = first_signal() or getattr(exc, "signal", None) or signal.SIGINT
    return f"cancelled: stopped by {signal_name(signum)}"


# The entry point's handler while `cancel_on_signals` is active, and the signals it got.
# Process state, like the signal handlers themselves.
_handler: Callable[[int, Any], None] | None = None
_received: list[int] = []


def first_signal() -> int | None:
    """The signal that cancelled this process's run, if one did."""
    return _received[0] if _received else None


@contextlib.contextmanager
def cancel_on_signals(
    forced_message: str = "", on_first: Callable[[], None] | None = None
) -> Iterator[None]:
    """Inside the block, the first SIGINT or SIGTERM calls `on_first` and raises
    `Cancelled` in the main thread; any later one writes `forced_message` and ends the
    process at once, with 128 + the first signal's number (130 after Ctrl-C).

    The second signal is counted off the main thread (Python's wakeup fd, read by a
    thread of its own): the main thread runs a signal's handler only when it next runs
    Python code, and unwinding it sits in C calls (a Ray wait, Prefect's report of the
    run) for up to a second, where two Ctrl-Cs in a row would count as one, and a stuck
    one would hold the second back for good.

    Prefect's engine (its SIGTERM bridge, for the flow run) and `ray.init` (SystemExit)
    replace the SIGTERM handler: `reclaim` puts this one back after them. Once a signal
    came, the forcing stays for the rest of the process: cleanup and exit are cut short
    by a second Ctrl-C too. Does nothing outside the main thread (only it can set
    handlers)."""
    global _handler
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    counted: list[int] = []  # by the watcher thread, from the wakeup fd
    forcing = threading.Lock()

    def force(first: int) -> None:
        if not forcing.acquire(blocking=False):  # the other thread is ending the process
            threading.Event().wait()
        if forced_message:
            os.write(2, f"\n{forced_message}\n".encode())
        os._exit(128 + first)

    def handler(signum: int, _frame: Any) -> None:
        _received.append(signum)
        if len(_received) > 1 or len(counted) > 1:
            force(_received[0])
        if on_first is not None:
            on_first()
        raise Cancelled(signum)

    def watch(rfd: int) -> None:
        while chunk := os.read(rfd, 64):
            counted.extend(b for b in chunk if b in SIGNALS)
            if len(counted) > 1:
                force(counted[0])
        os.close(rfd)

    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    before = {s: signal.signal(s, handler) for s in SIGNALS}
    wakeup_before = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    threading.Thread(target=watch, args=(rfd,), name="crucible-signals", daemon=True).start()
    _handler = handler
    try:
        yield
    finally:
        _handler = None
        if not _received and not counted:
            signal.set_wakeup_fd(wakeup_before)
            os.close(wfd)  # the watcher reads EOF and ends
            for s, h in before.items():
                signal.signal(s, h)


def reclaim() -> None:
    """Put the entry point's handler (`cancel_on_signals`) back on SIGINT and SIGTERM
    where a library replaced it; nothing when none is active (a served deployment's
    run, a test) or outside the main thread."""
    if _handler is None or threading.current_thread() is not threading.main_thread():
        return
    for s in SIGNALS:
        if signal.getsignal(s) is not _handler:
            signal.signal(s, _handler)


def start_temporary_api() -> None:
    """Start Prefect's temporary API server (the one a flow gets when no PREFECT_API_URL
    is set) now, with SIGINT blocked in it: Ctrl-C in the terminal then reaches the run,
    which reports its end to a live API, and not the server. Prefect's client finds it
    started (one per process) and uses it; it stops at exit as before (SIGTERM). Does
    nothing when Prefect's settings name an API."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url or not settings.server.ephemeral.enabled:
        return
    from prefect.server.api.server import SubprocessASGIServer

    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # children inherit it
    try:
        SubprocessASGIServer().start(timeout=settings.server.ephemeral.startup_timeout_seconds)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
