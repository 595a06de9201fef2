"""A private PostgreSQL cluster for the tests that restart a server or change settings only a
restart applies (``max_connections``): initdb into a temporary directory, start on a free
port, stop and delete at the end. Needs the PostgreSQL server binaries (``.ci/postgres.sh``
installs them); ``require`` skips without them outside CI and fails with ``CI=true``."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.prerequisites import require


def server_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    bindir: Path
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if os.geteuid() == 0:  # the server refuses to run as root
            command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(
                f"'{a}'" for a in command)]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def _options(self, settings: dict[str, str]) -> str:
        extra = " ".join(f"-c {k}={v}" for k, v in settings.items())
        return (f"-p {self.port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off "
                f"{extra}")

    def start(self, **settings: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-o", self._options(settings),
                  "-l", str(self.data / "log"), "-w", "start")

    def restart(self, **settings: str) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-o", self._options(settings),
                  "-l", str(self.data / "log"), "-w", "restart")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


def start_cluster(**settings: str) -> Cluster:
    bindir = server_bindir()
    require(bindir is not None, "the PostgreSQL server binaries (/usr/lib/postgresql/*/bin)")
    assert bindir is not None
    data = Path(tempfile.mkdtemp(prefix="profstore-test-pg."))
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    cluster = Cluster(bindir, data, _free_port())
    cluster._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres")
    cluster.start(**settings)
    return cluster


def remove_cluster(cluster: Cluster) -> None:
    try:
        cluster.stop()
    finally:
        shutil.rmtree(cluster.data, ignore_errors=True)
