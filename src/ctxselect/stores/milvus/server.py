"""Run the Milvus Lite 2.5.1 server on loopback: for tests, and to try the Milvus store locally.

``milvus-lite`` ships the real Milvus C++ core as one binary (``milvus_lite/lib/milvus``)
that serves the ordinary gRPC API; pymilvus talks to it exactly as to a cluster. This
module starts it on ``127.0.0.1`` on a free port with a data folder, waits until it
answers, and stops it (terminate, wait, kill)::

    python -m ctxselect.stores.milvus.server DIR        # prints milvus://127.0.0.1:PORT
    ctxselect index docs/ --index milvus://127.0.0.1:PORT/notes

The 3.x rewrite of milvus-lite is a different, pure-Python program: this module refuses
to start anything but the 2.5 binary (see docs/14-milvus.md).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from ctxselect.errors import ConfigError, CtxselectError, MissingExtraError, StoreUnreachableError

HOST = "127.0.0.1"
START_TIMEOUT = 60.0
"""Seconds to wait for a started server to answer (it answers after ~0.6 s here)."""
STOP_TIMEOUT = 10.0
DB_NAME = "milvus.db"
_TAIL = 2000  # characters of the server's log read to say why it failed
_WHY = 300  # characters of it quoted in the one-line error
_GLOG = re.compile(r"^[EWIF]\d+ [\d:.]+\s+\d+ \S+\]\s*(\[[^\]]*\])*\s*")  # glog's line prefix


def binary() -> Path:
    """Return the path of the milvus-lite 2.5 server binary.

    The package is found without importing it: ``milvus_lite/__init__`` imports
    ``pkg_resources``, which recent setuptools no longer installs.

    Raises:
        MissingExtraError: milvus-lite is not installed (or is not the 2.5 binary).
    """
    spec = importlib.util.find_spec("milvus_lite")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for place in places:
        found = Path(place) / "lib" / "milvus"
        if found.is_file():
            return found
    raise MissingExtraError(
        "running a local Milvus server needs the Python package 'milvus-lite' 2.5.1 "
        "(its lib/milvus binary was not found): run pip install 'ctxselect[milvus]'"
    )


def free_port(host: str = HOST) -> int:
    """Return a TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _death_signal() -> Callable[[], None] | None:
    """A function that, run in the server's process (Linux), makes it get SIGTERM when
    the process that started it dies (even by SIGKILL), so no server outlives its tests
    or its command. Made before the fork: the child only calls it (no imports there)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _answers(host: str, port: int) -> bool:
    """True when the server accepts a TCP connection and lists its collections."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            pass
    except OSError:
        return False
    from pymilvus import MilvusClient  # only once the port is open: the client retries

    try:
        client = MilvusClient(uri=f"http://{host}:{port}", timeout=2.0)
        try:
            client.list_collections()
        finally:
            client.close()
    except Exception:
        return False
    return True


START_ATTEMPTS = 3
"""Starts tried when the server process is killed by a signal while starting (a crash)."""


class MilvusServer:
    """One milvus-lite server process bound to 127.0.0.1 (a context manager).

    Args:
        folder: Where the server keeps its data (``folder/milvus.db``); created if missing.
        port: The port to bind (default: a free one).
        timeout: Seconds to wait for the server to answer.
    """

    def __init__(self, folder: str | os.PathLike[str], *, port: int = 0, timeout: float = 0.0):
        self.folder = Path(folder)
        self.port = port or free_port()
        self.timeout = timeout or START_TIMEOUT
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.folder / "server.log"

    @property
    def uri(self) -> str:
        """``milvus://127.0.0.1:PORT``: add ``/COLLECTION`` to name an index."""
        return f"milvus://{HOST}:{self.port}"

    def start(self) -> MilvusServer:
        """Start the server and wait until it answers.

        Raises:
            MissingExtraError: milvus-lite is not installed, or its binary cannot run.
            ConfigError: The data folder cannot be made or written, or the port is taken.
            StoreUnreachableError: It exited or did not answer within ``timeout``
                (the message quotes why from the end of its log).
        """
        exe = binary()
        for attempt in range(1, START_ATTEMPTS + 1):
            self._check_port()
            self.process = process = self._launch(exe)
            try:
                self._wait(process)
            except StoreUnreachableError:
                self.stop()
                # milvus-lite 2.5.1 now and then aborts while starting (its gRPC event
                # engine: "epoll_wait error: Bad file descriptor"); a crash, not a refusal
                crashed = process.returncode is not None and process.returncode < 0
                if not crashed or attempt == START_ATTEMPTS:
                    raise
            except BaseException:  # Ctrl-C while waiting: leave no server
                self.stop()
                raise
            else:
                return self
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _check_port(self) -> None:
        """Refuse a port something listens on: the server would die, and a server already
        there would answer in its place."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
            try:
                sock.bind((HOST, self.port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise ConfigError(
                        f"cannot start a Milvus Lite server on {HOST}:{self.port} "
                        f"({exc.strerror or exc}): pick another port, or leave it out to "
                        f"use a free one"
                    ) from exc
                raise ConfigError(
                    f"cannot start a Milvus Lite server on {HOST}:{self.port}: another "
                    f"process listens on that port (if it is a Milvus server you started, "
                    f"use {self.uri}): pick another port, or leave it out to use a free one"
                ) from exc

    def _launch(self, exe: Path) -> subprocess.Popen[bytes]:
        """Start the server process, its output going to the log in the data folder."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.log.write_bytes(b"")  # a folder we cannot write fails here, not in Popen
        except OSError as exc:
            is_file = self.folder.exists() and not self.folder.is_dir()
            raise ConfigError(
                f"cannot use {self.folder} as the data folder of a Milvus Lite server "
                f"({'it is a file' if is_file else exc.strerror or exc}): give a folder you "
                f"may write to (it is created if missing)"
            ) from exc
        # glog writes its files into the data folder, not the temporary directory
        env = {**os.environ, "LD_LIBRARY_PATH": str(exe.parent), "GLOG_log_dir": str(self.folder)}
        with open(self.log, "wb") as log:
            try:
                return subprocess.Popen(
                    [str(exe), str(self.folder / DB_NAME), f"{HOST}:{self.port}", "ERROR"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,  # a Ctrl-C of the caller does not reach it first
                    preexec_fn=_death_signal(),
                )
            except OSError as exc:
                raise MissingExtraError(
                    f"cannot run the Milvus Lite server binary {exe} ({exc.strerror or exc}): "
                    f"reinstall it with pip install --force-reinstall milvus-lite==2.5.1"
                ) from exc

    def _wait(self, process: subprocess.Popen[bytes]) -> None:
        """Wait until the started server answers (or exits, or ``timeout`` passes)."""
        deadline = time.monotonic() + self.timeout
        while not _answers(HOST, self.port):
            code = process.poll()
            if code is not None or time.monotonic() > deadline:
                how = (
                    f"exited with code {code} while starting"
                    if code is not None
                    else f"did not answer within {self.timeout:.0f} s"
                )
                raise StoreUnreachableError(
                    f"the Milvus Lite server on {HOST}:{self.port} {how}: {self.why()}; its "
                    f"log is {self.log}: check the data folder {self.folder} and that "
                    f"milvus-lite is 2.5.1"
                )
            time.sleep(0.1)

    def why(self) -> str:
        """Why the server failed, in one line: the last lines of its log, glog prefixes off."""
        lines = [_GLOG.sub("", x).strip() for x in self.tail().splitlines() if x.strip()]
        found = "; ".join(lines[-2:])
        if len(found) > _WHY:
            found = "..." + found[-_WHY:]
        return f"its log ends: {found!r}" if found else "its log is empty"

    def tail(self) -> str:
        """The last characters of the server's log (why it failed)."""
        with contextlib.suppress(OSError):
            return self.log.read_bytes()[-_TAIL:].decode("utf-8", "replace").strip()
        return ""

    def stop(self) -> None:
        """Stop the server: SIGTERM, wait, then SIGKILL if it is still running."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def __enter__(self) -> MilvusServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextlib.contextmanager
def running(folder: str | os.PathLike[str], port: int = 0) -> Iterator[MilvusServer]:
    """Run a server for the duration of a ``with`` block."""
    with MilvusServer(folder, port=port) as server:
        yield server


def _port(text: str) -> int:
    """``--port``: a TCP port, or 0 for a free one (a usage error otherwise)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port: give 1-65535 or 0 (any)")
    return port


def main(argv: list[str] | None = None) -> int:
    """Run a server in the foreground until Ctrl-C; print its URI on stdout.

    A server that cannot start, or that dies, is one ``error:`` line on stderr and exit
    status 1; bad arguments exit 2.
    """
    parser = argparse.ArgumentParser(
        prog="python -m ctxselect.stores.milvus.server",
        description="Run a local Milvus Lite 2.5 server on 127.0.0.1 (Ctrl-C stops it).",
    )
    parser.add_argument("folder", help="data folder (created if missing)")
    parser.add_argument("--port", type=_port, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    # SIGTERM (kill) and SIGINT (even where a shell ignores it) both stop the server
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server = MilvusServer(args.folder, port=args.port).start()
    except CtxselectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # stopped while starting, as asked (start() stopped it)
        return 0
    try:
        print(server.uri, flush=True)
        print(f"index URIs: {server.uri}/COLLECTION; Ctrl-C stops the server", file=sys.stderr)
        with contextlib.suppress(KeyboardInterrupt):
            while server.process is not None and server.process.poll() is None:
                time.sleep(0.5)
        code = None if server.process is None else server.process.poll()
    finally:
        server.stop()
    if code is None:  # stopped by Ctrl-C or SIGTERM, as asked
        return 0
    print(died(server, code), file=sys.stderr)
    return 1


def died(server: MilvusServer, code: int) -> str:
    """The one line that says the server process ended by itself, why, and what to do."""
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return (
        f"error: the Milvus Lite server on {HOST}:{server.port} {how}; its log "
        f"({server.log}) ends: {server.tail()[-200:]!r}: start it again with "
        f"`python -m ctxselect.stores.milvus.server {server.folder}` (the data is kept)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
