"""The team store beside the control plane: Debian's PostgreSQL (the index) and versitygw (the
S3 objects), started as the team store tests start them (tests/teamstore/servers.py).

Both listen on 127.0.0.1, where the researcher's shell reaches them. The real node's pods live
in the node's network namespace, whose loopback is not the host's: as the node's kubelet
reaches the apiserver, they reach the store through relays on the host's end of the node's link
(`node.HOST_IP`, the same port numbers), so the URL the platform names in the workspace differs
from the researcher's only in its host. PostgreSQL sees every connection come from loopback;
stopping it (`stop_index`) makes the relay close each connection it takes, as a store that
is down does.

The credentials are the platform's: a Secret in the workspace's namespace (`secret_data`, the
keys the store's code reads: PGPASSWORD and the AWS variables) for the pods, and a file of
`export` lines (`write_env_file`, mode 0600) for the researcher's shell. No URL holds a secret.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.controlplane.node import STORE_FOLDER_PREFIX
from tests.e2e.controlplane.processes import (
    Process,
    StartError,
    Supervisor,
    stop_process,
    wait_until,
)
from tests.teamstore import build
from tests.teamstore.servers import DB_USER, ObjectServer, Postgres, postgres_bin

DATABASE = "team"
BUCKET = "team"
PREFIX = "store"
#: The Secret the `team-real` workspace names (`spec.experiments.credentialsSecret`).
SECRET = "tau-experiment-store"
HINT = "run tests/teamstore/install.sh (.ci/run does)"


class StoreMissing(StartError):
    """PostgreSQL or versitygw is not installed on this machine."""


@dataclass
class TeamStore:
    supervisor: Supervisor
    #: The address the node's pods reach the host on (the link's host end).
    pod_host: str
    root: Path = field(default_factory=Path)
    postgres: Postgres | None = None
    objects: ObjectServer | None = None
    relays: list[Process] = field(default_factory=list)

    # ------------------------------------------------------------------ addresses

    def url(self, host: str | None = None) -> str:
        """The store URL through `host` (the pods' address by default); no secret in it."""
        port = self._pg().port
        where = host or self.pod_host
        return f"postgresql://{DB_USER}@{where}:{port}/{DATABASE}?objects=s3://{BUCKET}/{PREFIX}"

    @property
    def local_url(self) -> str:
        """What the researcher's shell names (`STORE=`): the same store on loopback."""
        return self.url("127.0.0.1")

    def secret_data(self, host: str | None = None) -> dict[str, str]:
        """The credentials and endpoint as the store's code reads them, for pods by default."""
        pg, s3 = self._pg(), self._s3()
        return {
            **pg.env(),
            **s3.env(),
            "AWS_ENDPOINT_URL": f"http://{host or self.pod_host}:{s3.port}",
        }

    def shell_env(self) -> dict[str, str]:
        """The researcher's shell's view: loopback endpoints."""
        return self.secret_data("127.0.0.1")

    def write_env_file(self, path: Path) -> Path:
        """`export` lines a researcher sources (`. store.env`); readable by its owner only."""
        import shlex

        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("# The team store's credentials (cluster-up); `. this-file` in your shell.\n")
            for key, value in sorted(self.shell_env().items()):
                f.write(f"export {key}={shlex.quote(value)}\n")
        return path

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> TeamStore:
        bindir, binary = postgres_bin(), build.cached()
        if bindir is None:
            raise StoreMissing(f"PostgreSQL (Debian's postgresql package) is not installed: {HINT}")
        if binary is None:
            raise StoreMissing(f"versitygw {build.VERSION} is not built: {HINT}")
        # Not under the control plane's root: PostgreSQL runs as `postgres`, which must reach
        # its folder, and that root (certificates, keys) stays private to its owner.
        self.root = Path(tempfile.mkdtemp(prefix=STORE_FOLDER_PREFIX))
        self.root.chmod(0o755)
        try:
            pg = Postgres(self.root / "pg", bindir)
            self.postgres = pg
            pg.init()
            pg.start()
            pg.create_db(DATABASE)
            s3 = ObjectServer(self.root / "s3", binary)
            self.objects = s3
            s3.start()
            s3.create_bucket(BUCKET)
            for name, port in (("store-postgres-relay", pg.port), ("store-s3-relay", s3.port)):
                self.relays.append(self._relay(name, port))
            self._init()
        except BaseException:
            self.stop()
            raise
        return self

    def _relay(self, name: str, port: int) -> Process:
        relay = self.supervisor.start(
            name,
            [
                sys.executable,
                "-m",
                "tests.e2e.controlplane.relay",
                f"{self.pod_host}:{port}",
                f"127.0.0.1:{port}",
            ],
            env={"PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        )
        wait_until(f"the relay {name}", lambda: "relaying" in relay.tail(), timeout=60, proc=relay)
        return relay

    def _init(self) -> None:
        """`taugrid-portal experiment init --store URL`: the store's schema, as a team's
        platform makes it once."""
        from tests.e2e.controlplane.researcher import console_script

        env = {**os.environ, **self.shell_env()}
        env.pop("TAU_EXP_STORE", None)
        done = subprocess.run(
            [console_script("taugrid-portal"), "experiment", "init", "--store", self.local_url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"taugrid-portal experiment init --store {self.local_url} exited "
                f"{done.returncode}:\n{done.stdout}\n{done.stderr}"
            )

    def stop_index(self) -> None:
        """Stop PostgreSQL at once (every session cut), as a database that goes down does."""
        self._pg().stop("immediate")

    def start_index(self) -> None:
        """Start PostgreSQL again on the same port; returns once it accepts connections."""
        self._pg().start()

    def stop(self) -> None:
        for relay in self.relays:
            stop_process(relay)
        self.relays.clear()
        if self.objects is not None:
            self.objects.stop()
        if self.postgres is not None:
            with contextlib.suppress(Exception):
                self.postgres.stop("immediate")
        if self.root != Path():
            shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ started parts

    def _pg(self) -> Postgres:
        assert self.postgres is not None, "the team store is not started"
        return self.postgres

    def _s3(self) -> ObjectServer:
        assert self.objects is not None, "the team store is not started"
        return self.objects
