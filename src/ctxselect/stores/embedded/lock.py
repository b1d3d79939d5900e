"""The single-writer lock of an index folder: an OS file lock whose holder writes its pid.

``fcntl.flock`` locks (``msvcrt.locking`` on Windows) belong to an open file and the
kernel drops them when the holder's process dies, so a lock left by a killed writer
never blocks the next one; the pid and command written into the file only serve the
message a second writer sees.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from ctxselect.errors import IndexLockedError, IndexWriteError

LOCK_NAME = "write.lock"
_POLL_SECONDS = 0.05
COMMAND_CHARS = 100
"""The holder's command is cut to this many characters (a 2,000-file ``add`` is one line)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock on ``fd`` without blocking; False if another holds it."""
    try:
        import fcntl  # POSIX: released by the kernel when the holder dies
    except ImportError:  # Windows: a byte-range lock, also released with the process
        msvcrt: Any = importlib.import_module("msvcrt")
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:
        msvcrt: Any = importlib.import_module("msvcrt")
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


def short_command(argv: list[str], limit: int = COMMAND_CHARS) -> str:
    """Return ``argv`` as one line of at most ``limit`` characters, for the lock message.

    The program is shown by its file name; arguments that do not fit are counted, as in
    ``ctxselect add a.md b.md … (2,000 args)``. Control characters become ``?``.
    """
    words = [_CONTROL.sub("?", w) for w in [os.path.basename(argv[0]), *argv[1:]] if w]
    line = " ".join(words)
    if len(line) <= limit:
        return line
    suffix = f" … ({len(argv) - 1:,} args)"
    kept = line[: max(0, limit - len(suffix))]
    if " " in kept:  # cut between two arguments when one boundary is in reach
        kept = kept[: kept.rindex(" ")]
    return kept + suffix


def describe_holder(path: Path) -> str:
    """Return "process PID (COMMAND)" from a lock file, or a generic phrase.

    The command is one line of at most :data:`COMMAND_CHARS` characters, however long the
    file's (lock files of older versions hold the whole command line).
    """
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    if not lines or not lines[0].strip().isdigit():
        return "another process"
    pid = lines[0].strip()
    command = lines[1].strip() if len(lines) > 1 else ""
    if len(command) > COMMAND_CHARS:
        command = command[: COMMAND_CHARS - 1] + "…"
    return f"process {pid} ({command})" if command else f"process {pid}"


class WriterLock:
    """Exclusive right to write one index folder, for one process at a time.

    Args:
        folder: The index folder; the lock file is ``folder/write.lock``.
        wait: Seconds to wait for a busy lock before giving up (0: fail at once).
    """

    def __init__(self, folder: str | os.PathLike[str], wait: float = 0.0) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.wait = wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, waiting up to ``wait`` seconds; raise IndexLockedError if busy.

        Raises:
            IndexLockedError: Another process holds the lock.
            IndexWriteError: The folder cannot be written (read-only media, permissions).
        """
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise IndexWriteError(
                f"cannot write index {self.folder} ({reason.lower()}): searches still work; "
                f"to change the index, copy the folder to a writable place or fix its "
                f"permissions, then run the command again"
            ) from exc
        deadline = time.monotonic() + max(0.0, self.wait)
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                os.close(fd)
                raise IndexLockedError(self._busy_message())
            time.sleep(_POLL_SECONDS)
        command = short_command(sys.argv) if sys.argv else ""
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        # backslashreplace: file names that are not UTF-8 reach argv as lone surrogates.
        os.write(fd, f"{os.getpid()}\n{command}\n".encode("utf-8", "backslashreplace"))
        self._fd = fd

    def _busy_message(self) -> str:
        waited = f" after waiting {self.wait:g} s" if self.wait > 0 else ""
        return (
            f"index {self.folder} is being written by {describe_holder(self.path)}{waited}: "
            f"searches still work; wait for it to finish, or pass --wait SECONDS"
        )

    def release(self) -> None:
        """Give the lock up (the file stays: removing it would race with a new holder)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            _unlock(fd)
            os.close(fd)

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
