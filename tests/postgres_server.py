"""A throwaway PostgreSQL server for the class-store tests (Debian's ``postgresql`` package).

``python -m tests.postgres_server start DIR`` starts one in DIR on a free port and prints its URL;
``python -m tests.postgres_server stop DIR`` stops it (scripts/test.sh does both around the tests).
The tests call :func:`start` themselves when no URL was exported. PostgreSQL refuses to run as root:
as root the cluster belongs to the ``postgres`` user (made if missing) and its commands run through
``runuser``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

USER = "postgres"


def binaries() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb, or None when none is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", USER], check=True)
    return ["runuser", "-u", USER, "--", *cmd]


def new_folder() -> Path:
    """A new folder for a server under the system's temporary folder (pytest's own temporary folders
    are private to root, out of reach of the server's user)."""
    return Path(tempfile.mkdtemp(prefix="attention-lab-pg-"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(folder: Path) -> str:
    """Start a server with its data in ``folder`` (made; given to the server's user); returns its URL."""
    bin_dir = binaries()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL is not installed (Debian package: postgresql)")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _as_owner(["true"])  # makes the user if missing
        shutil.chown(folder, USER, USER)
    data, port = folder / "data", free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "check": True, "cwd": "/"}
    subprocess.run(_as_owner([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "-E", "UTF8"]),
                   **quiet)  # fmt: skip
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"),
                              "-w", "-t", "60", "start"]), **quiet)  # fmt: skip
    (folder / "port").write_text(str(port))
    return url_of(folder)


def url_of(folder: Path) -> str:
    return f"postgresql://{USER}@127.0.0.1:{(Path(folder) / 'port').read_text().strip()}/postgres"


def restart(folder: Path) -> None:
    """Stop the server (fast: connections are cut) and start it again on the same port and data."""
    bin_dir, data = binaries(), Path(folder) / "data"
    subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "restart"]),
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, cwd="/")  # fmt: skip


def stop(folder: Path) -> None:
    bin_dir, data = binaries(), Path(folder) / "data"
    if bin_dir is not None and data.exists():
        subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd="/")  # fmt: skip


if __name__ == "__main__":
    action, where = sys.argv[1], Path(sys.argv[2])
    if action == "start":
        print(start(where))
    elif action == "stop":
        stop(where)
    else:
        sys.exit("usage: python -m tests.postgres_server start|stop DIR")
