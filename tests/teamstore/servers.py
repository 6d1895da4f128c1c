"""A real PostgreSQL and a real S3-compatible server (versitygw) for the team store tests.

Both listen on 127.0.0.1 only, keep their data in a temporary folder, and are stopped by the
fixtures that start them. PostgreSQL's `initdb` refuses to run as root, so as root the server
runs as the `postgres` user of Debian's package (through `runuser`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DB_USER = "tau"
HINT = "run tests/teamstore/install.sh (.ci/run does)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: object, what: str, timeout: float = 60.0) -> None:
    """Poll `check()` until true; a clear failure after `timeout` (a condition, not a sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout:.0f}s")
        time.sleep(0.1)


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Postgres:
    """One PostgreSQL cluster in `root` (a temporary folder)."""

    def __init__(self, root: Path, bindir: Path) -> None:
        self.root = root
        self.bindir = bindir
        self.data = root / "data"
        self.sockets = root / "sock"
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        # No pipes: a server pg_ctl starts would hold them open, and this would wait forever.
        with open(self.root / "ctl.log", "ab") as log:
            subprocess.run(
                [*self._as, *args], check=True, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.sockets.mkdir(exist_ok=True)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.sockets, "postgres")
            shutil.chown(pwfile, "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            DB_USER,
            "--pwfile",
            str(pwfile),
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "--locale=C.UTF-8",
            "-E",
            "UTF8",
        )
        pwfile.unlink()

    def start(self) -> None:
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} "
            "-c fsync=off -c max_connections=100",
            "start",
        )
        wait_until(lambda: _port_open(self.port), "PostgreSQL")

    def restart(self) -> None:
        """A fast restart: every open session is cut, the server is back when this returns."""
        self.stop("fast")
        self.start()

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def env(self) -> dict[str, str]:
        return {"PGPASSWORD": self.password}

    def url(self, db: str) -> str:
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/{db}"

    def create_db(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), password=self.password, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')


class ObjectServer:
    """versitygw's posix backend over `root/objects`, with root credentials from its env."""

    def __init__(self, root: Path, binary: Path) -> None:
        self.root = root
        self.binary = binary
        self.port = free_port()
        self.access_key = "tau" + secrets.token_hex(4)
        self.secret_key = secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        data = self.root / "objects"
        data.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        # Credentials through the environment, never on a command line `ps` can show.
        env.update(ROOT_ACCESS_KEY=self.access_key, ROOT_SECRET_KEY=self.secret_key)
        self.proc = subprocess.Popen(
            [str(self.binary), "--port", f"127.0.0.1:{self.port}", "posix", str(data)],
            env=env,
            stdout=open(self.root / "versitygw.log", "ab"),  # noqa: SIM115 - lives with the proc
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(lambda: _port_open(self.port), "versitygw")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def create_bucket(self, name: str) -> None:
        """A bucket is a folder of the posix backend; made through S3 all the same."""
        import pyarrow.fs as pafs

        fs = pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        )
        fs.create_dir(name)


@contextlib.contextmanager
def running_postgres(root: Path) -> Iterator[Postgres]:
    bindir = postgres_bin()
    assert bindir is not None
    pg = Postgres(root / "pg", bindir)
    pg.init()
    pg.start()
    try:
        yield pg
    finally:
        pg.stop("immediate")
        shutil.rmtree(pg.root, ignore_errors=True)


@contextlib.contextmanager
def running_objects(root: Path, binary: Path) -> Iterator[ObjectServer]:
    server = ObjectServer(root / "s3", binary)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
