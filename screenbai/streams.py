"""Standard output belongs to screenbai: what a dependency prints never reaches our results.

Two guards, one per way a dependency's text could land in our output (highspy 1.16 prints a
banner on the C-level stdout, file descriptor 1, when ``highspy.Highs()`` is constructed, which
``contextlib.redirect_stdout`` does not catch):

- :func:`quiet_native_output` silences stdout, the Python object *and* file descriptor 1, while a
  third-party object is built (wrap every construction of a solver or library that may talk);
- :func:`results_stdout` gives a command a private stream on the original stdout for its results
  (``--json``, tables, a subprocess protocol) and points ``sys.stdout`` and file descriptor 1 at
  stderr for the rest of the block, so whatever else is written to stdout, by ``print`` or by C
  code, goes to stderr.  :func:`say` prints to that stream (to ``sys.stdout`` outside the block).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO

_RESULTS: list[TextIO] = []  # the innermost results_stdout() block's private stream last


def _flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (text a native library wrote but the C runtime holds)."""
    with contextlib.suppress(Exception):  # no C library to ask (e.g. some Windows builds): nothing to flush
        ctypes.CDLL(None).fflush(None)


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # pytest's capsys, io.StringIO: no descriptor
        return None


@contextlib.contextmanager
def quiet_native_output() -> Iterator[None]:
    """Discard everything written to stdout inside the block, by Python code or native code (fd 1).

    For the construction of third-party objects that announce themselves (``highspy.Highs()``).
    Process-wide while it lasts: keep the block to the construction.
    """
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        _flush_c_stdio()  # what the library buffered goes to /dev/null too, not to our stdout later
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@contextlib.contextmanager
def results_stdout() -> Iterator[TextIO]:
    """A stream only we write, on the original stdout; everything else written to stdout goes to stderr.

    Inside the block ``sys.stdout`` is ``sys.stderr`` and file descriptor 1 is a copy of
    descriptor 2, so a dependency's ``print`` or ``write(1, ...)`` lands on stderr; the stream
    yielded (also returned by :func:`results` and used by :func:`say`) writes to what stdout was.
    When stdout is not descriptor 1 (pytest's capsys, a StringIO), the results go to that object.
    Everything is restored on exit.
    """
    original = sys.stdout
    try:
        original.flush()
        saved = os.dup(1)
        os.fstat(2)
    except (AttributeError, OSError):  # stdout or stderr closed (`screenbai ... >&-`): nothing to keep apart
        _RESULTS.append(original or io.StringIO())
        try:
            yield _RESULTS[-1]
        finally:
            _RESULTS.pop()
        return
    _flush_c_stdio()
    if _fileno(original) == 1:
        stream: TextIO = open(  # closed on exit
            os.dup(saved), "w", encoding=getattr(original, "encoding", None) or "utf-8",
            errors=getattr(original, "errors", None) or "strict", buffering=1,
        )
        private = True
    else:
        stream, private = original, False
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _RESULTS.append(stream)
    try:
        yield stream
    finally:
        _RESULTS.pop()
        with contextlib.suppress(OSError, ValueError):  # a reader gone away (`| head`): nothing more to say
            stream.flush()
        sys.stdout = original
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
        if private:
            with contextlib.suppress(OSError, ValueError):
                stream.close()


def results() -> TextIO:
    """Where results go: the innermost :func:`results_stdout` stream, else ``sys.stdout``."""
    return _RESULTS[-1] if _RESULTS else sys.stdout


def say(*values: object, sep: str = " ", end: str = "\n") -> None:
    """``print`` to :func:`results` (the command's own output, never a dependency's)."""
    print(*values, sep=sep, end=end, file=results(), flush=True)
