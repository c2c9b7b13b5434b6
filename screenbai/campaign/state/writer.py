"""One writer at a time on a campaign file a long command writes step after step: an advisory lock on a sidecar file
``<campaign>.lock`` (``fcntl.flock``; POSIX only, elsewhere no lock is taken).

A backtest (``--campaign-out``) proposes and records plate after plate, drawing the assay's outcomes as one seeded
stream from its first plate: a second backtest on the same file at the same time would interleave its plates with
the first's, and both would end with a mix neither command asked for. So a backtest holds the lock exclusively for
its whole run (:func:`writing`), writing its process id into the sidecar; a second one fails at once, naming that
process. The commands of one step (``record``, ``next``, ``add`` ...) are each one SQLite transaction, and two of them
at once compose as one after the other (tests/test_campaign_concurrent.py): they take the lock shared
(:func:`stepping`), so they run beside each other, and fail at once while a backtest writes the file (and a backtest
while one of them does). The last holder removes the sidecar; a holder killed outright leaves it behind, harmless:
the kernel released its lock, and the next command takes it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no advisory lock
    fcntl = None  # type: ignore[assignment]


class CampaignBusy(OSError):
    """Another screenbai process is writing the campaign file; the message names it and what to do."""


def lock_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".lock")


def _busy(path: Path, fd: int) -> CampaignBusy:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    who = f"pid {text}" if text.isdigit() else "pid unknown: a record or next"
    lock = lock_path(path)
    return CampaignBusy(
        f"campaign {path} is being written by another screenbai process ({who}); wait for it or remove {lock} if no "
        "such process runs"
    )


def _same_file(fd: int, lock: Path) -> bool:
    """Whether the sidecar we hold is still the one at ``lock`` (its last holder may have removed it meanwhile)."""
    try:
        return os.stat(lock).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Hold the campaign file ``path``'s lock exclusively for the block, or raise :class:`CampaignBusy` at once."""
    with _held(path, exclusive=True):
        yield


@contextlib.contextmanager
def stepping(path: str | os.PathLike) -> Iterator[None]:
    """Hold the campaign file ``path``'s lock shared for the block (beside other steps), or raise
    :class:`CampaignBusy` at once while a backtest holds it."""
    with _held(path, exclusive=False):
        yield


@contextlib.contextmanager
def _held(path: str | os.PathLike, *, exclusive: bool) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    path, lock = Path(path), lock_path(path)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:  # a folder we cannot write (a read-only campaign): no one else can write the file either
            yield
            return
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            err = _busy(path, fd)
            os.close(fd)
            raise err from None
        if _same_file(fd, lock):
            break
        os.close(fd)  # removed by its last holder as we opened it: take the new one
    try:
        if exclusive:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        try:  # the last holder removes the sidecar, while holding it: whoever opened it meanwhile sees it gone
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink()
        except OSError:  # others hold it still (steps beside this one): the last of them removes it
            pass
        os.close(fd)
