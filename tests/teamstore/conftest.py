"""Session fixtures: one real PostgreSQL and one real versitygw for every team store test.

Outside CI a machine without them skips these tests with the install hint; in CI (CI=true)
they fail, because `.ci/run` installs both and a silent skip would hide a broken install.
Each test gets its own database and bucket prefix, so tests never see each other's runs.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.teamstore import build
from tests.teamstore.servers import (
    HINT,
    ObjectServer,
    Postgres,
    postgres_bin,
    running_objects,
    running_postgres,
)

BUCKET = "team"


def _missing(what: str) -> None:
    message = f"{what} is not installed: {HINT}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def servers_root() -> Iterator[Path]:
    # Not pytest's tmp_path: its folders are private to root, and PostgreSQL runs as `postgres`.
    root = Path(tempfile.mkdtemp(prefix="tau-teamstore-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres(servers_root: Path) -> Iterator[Postgres]:
    if postgres_bin() is None:
        _missing("PostgreSQL (Debian's postgresql package)")
    with running_postgres(servers_root) as pg:
        yield pg


@pytest.fixture(scope="session")
def objects(servers_root: Path) -> Iterator[ObjectServer]:
    binary = build.cached()
    if binary is None:
        _missing(f"versitygw {build.VERSION}")
    assert binary is not None
    with running_objects(servers_root, binary) as server:
        server.create_bucket(BUCKET)
        yield server


@dataclass
class Team:
    """A fresh team store: its URL (no secret in it) and the environment that reaches it."""

    url: str
    env: dict[str, str]
    postgres: Postgres
    objects: ObjectServer
    database: str
    prefix: str


@pytest.fixture
def team(postgres: Postgres, objects: ObjectServer, monkeypatch: pytest.MonkeyPatch) -> Team:
    name = "t" + secrets.token_hex(6)
    postgres.create_db(name)
    prefix = f"stores/{name}"
    url = f"{postgres.url(name)}?objects=s3://{BUCKET}/{prefix}"
    env = postgres.env() | objects.env()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("TAU_EXP_STORE", raising=False)
    return Team(url, env, postgres, objects, name, prefix)
