"""The images the e2e control plane's real node runs, built here since no registry is reachable.

- `tau-e2e.local/runtime:<key>`: Debian (image.toml's suite and packages) with the pinned Ray,
  Ray Train and torch in the system python; what tau's Jobs and RayJobs run in.
- `tau-e2e.local/pause:<key>`: containerd's sandbox image, the static Go program in pause/.
- `tau-e2e.local/offload:<key>`: the metrics collector's image, this checkout's wheel over a
  small Debian (offload_image.py, offload.toml); pods name it by digest.

Each is an OCI archive in `<cache>/images/<image>-<key>/image.tar` (with its full name in a
`name` file beside it); the key hashes every input, so a warm call finds the archive and builds
nothing. A build happens in a `.partial` folder renamed at the end: a killed build leaves no
half image. `import_image` loads an archive into containerd's `k8s.io` namespace, where the
kubelet finds it.

    python -m tests.e2e.controlplane.image [build]  # build what is missing; print names, archives
    python -m tests.e2e.controlplane.image lock     # re-resolve image.toml's lock (requirements)
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.controlplane import oci, rootfs
from tests.e2e.controlplane.build import cache_root, go_env, go_version

HERE = Path(__file__).resolve().parent
RECIPE_FILE = HERE / "image.toml"
PAUSE_SOURCE = HERE / "pause"
REGISTRY = "tau-e2e.local"
#: Bump when the recipe's code changes what an image holds (the key includes it).
RECIPE_VERSION = "2"
NAMESPACE = "k8s.io"
SNAPSHOTTER = "overlayfs"
PLATFORM = "linux/amd64"


@dataclass(frozen=True)
class ImageArchive:
    name: str
    """The full image reference, e.g. `tau-e2e.local/runtime:0123456789ab`."""
    archive: Path
    """The OCI archive `ctr images import` reads."""
    digest: str | None = None
    """The manifest's digest, for an image named by digest (`pinned`)."""

    @property
    def pinned(self) -> str:
        """The reference by digest (`tau-e2e.local/offload@sha256:…`), else the name."""
        if not self.digest:
            return self.name
        return f"{self.name.rsplit(':', 1)[0]}@{self.digest}"


Builder = Callable[[Path, str], dict[str, float]]


def _key(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in (RECIPE_VERSION.encode(), *parts):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def runtime_key() -> str:
    return _key(b"runtime", RECIPE_FILE.read_bytes())


def pause_key(go: str) -> str:
    sources = sorted(p for p in PAUSE_SOURCE.iterdir() if p.is_file())
    return _key(b"pause", *(p.name.encode() + b"\0" + p.read_bytes() for p in sources), go.encode())


def images_root() -> Path:
    return cache_root() / "images"


@contextmanager
def _locked() -> Iterator[None]:
    """One build at a time on the machine: a second caller waits, then finds the archive."""
    images_root().mkdir(parents=True, exist_ok=True)
    with (images_root() / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _cached(kind: str, key: str, builder: Builder) -> ImageArchive:
    folder = images_root() / f"{kind}-{key}"
    name = f"{REGISTRY}/{kind}:{key}"
    archive = folder / "image.tar"
    if archive.is_file() and (folder / "name").is_file():
        return ImageArchive((folder / "name").read_text().strip(), archive)
    with _locked():
        if archive.is_file() and (folder / "name").is_file():
            return ImageArchive(name, archive)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        print(f"building {name} in {partial}", file=sys.stderr, flush=True)
        try:
            timings = builder(partial, name)
        except BaseException as exc:
            # A failed build frees its disk at once (the runtime's is several GB).
            print(
                f"build of {name} failed ({type(exc).__name__}); removing {partial}",
                file=sys.stderr,
                flush=True,
            )
            shutil.rmtree(partial, ignore_errors=True)
            raise
        timings["archive_bytes"] = (partial / "image.tar").stat().st_size
        (partial / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
        (partial / "name").write_text(name + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        summary = ", ".join(f"{k} {v:.0f}" for k, v in timings.items())
        print(f"built {name}: {summary}", file=sys.stderr, flush=True)
    return ImageArchive(name, archive)


def _build_runtime(folder: Path, name: str) -> dict[str, float]:
    rootfs.check_host()
    recipe = rootfs.Recipe.load(RECIPE_FILE)
    root = folder / "rootfs"
    scratch = folder / "scratch"
    scratch.mkdir()
    (scratch / "constraints.txt").write_text("\n".join(recipe.lock) + "\n")
    timings: dict[str, float] = {}
    started = time.monotonic()
    rootfs.debootstrap(recipe, root)
    timings["mmdebstrap_s"] = time.monotonic() - started
    started = time.monotonic()
    rootfs.pip_install(recipe, root, images_root() / "wheels", scratch / "constraints.txt")
    timings["pip_s"] = time.monotonic() - started
    started = time.monotonic()
    rootfs.finish(root, oci.EPOCH)
    timings["bytecode_s"] = time.monotonic() - started
    started = time.monotonic()
    print(rootfs.self_check(root, scratch).rstrip(), file=sys.stderr, flush=True)
    timings["self_check_s"] = time.monotonic() - started
    started = time.monotonic()
    runtime = oci.Runtime(
        env=(f"PATH={rootfs.PATH}", "LANG=C.UTF-8", "PYTHONUNBUFFERED=1"),
        cmd=("bash",),
        labels={
            "tau.e2e/ray": recipe.pinned("ray"),
            "tau.e2e/torch": recipe.pinned("torch"),
            "tau.e2e/debian": recipe.suite,
        },
    )
    oci.write_archive(root, name, runtime, folder / "image.tar")
    timings["archive_s"] = time.monotonic() - started
    started = time.monotonic()
    timings["unpacked_bytes"] = float(_tree_bytes(root))
    shutil.rmtree(root)
    shutil.rmtree(scratch)
    timings["cleanup_s"] = time.monotonic() - started
    return timings


def _tree_bytes(root: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(root):
        for file in files:
            total += os.lstat(os.path.join(folder, file)).st_size
    return total


def _build_pause(folder: Path, name: str) -> dict[str, float]:
    if shutil.which("go") is None:
        raise rootfs.StepFailed("building the pause image needs Go (`go` on PATH)")
    root = folder / "rootfs"
    root.mkdir()
    started = time.monotonic()
    env = go_env()
    env["CGO_ENABLED"] = "0"
    rootfs.run(
        [
            "go",
            "-C",
            str(PAUSE_SOURCE),
            "build",
            "-trimpath",
            "-ldflags",
            "-s -w",
            "-o",
            str(root / "pause"),
            ".",
        ],
        what="go build pause",
        env=env,
    )
    timings = {"go_build_s": time.monotonic() - started}
    started = time.monotonic()
    runtime = oci.Runtime(env=(f"PATH={rootfs.PATH}",), entrypoint=("/pause",))
    oci.write_archive(root, name, runtime, folder / "image.tar")
    timings["archive_s"] = time.monotonic() - started
    shutil.rmtree(root)
    return timings


def build_images() -> dict[str, ImageArchive]:
    """The node's images ("runtime", "pause", and "offload", the metrics collector's image made
    from this checkout's wheel: see offload_image), building what the cache lacks."""
    from tests.e2e.controlplane import offload_image

    return {
        "runtime": _cached("runtime", runtime_key(), _build_runtime),
        "pause": _cached("pause", pause_key(go_version()), _build_pause),
        "offload": offload_image.build(),
    }


def _ctr(ctr: Path, address: Path, *args: str) -> list[str]:
    return [str(ctr), "--address", str(address), "--namespace", NAMESPACE, *args]


def image_present(ctr: Path, address: Path, image: ImageArchive) -> bool:
    """Whether containerd's k8s.io namespace already holds the image under its name."""
    out = rootfs.run(
        _ctr(ctr, address, "images", "ls", "-q", f"name=={image.name}"), what="ctr images ls"
    )
    return image.name in out.split()


def import_image(ctr: Path, address: Path, image: ImageArchive) -> None:
    """Import the archive and unpack it for the overlayfs snapshotter the CRI runs containers
    from; the image keeps the full name its index annotations give it."""
    rootfs.run(
        _ctr(
            ctr,
            address,
            "images",
            "import",
            "--platform",
            PLATFORM,
            "--snapshotter",
            SNAPSHOTTER,
            str(image.archive),
        ),
        what=f"ctr images import {image.name}",
    )
    if not image_present(ctr, address, image):
        raise rootfs.StepFailed(
            f"ctr images import {image.archive} finished but containerd lists no {image.name}"
        )


def ensure_imported(ctr: Path, address: Path, image: ImageArchive) -> bool:
    """Import the image unless containerd has it; True when it was imported now."""
    if image_present(ctr, address, image):
        return False
    import_image(ctr, address, image)
    return True


def relock() -> None:
    """Rewrite image.toml's `lock` list: resolve the requirements against PyPI with this
    python (it must be 3.11, the image's python) without installing anything."""
    recipe = rootfs.Recipe.load(RECIPE_FILE)
    write_lock(RECIPE_FILE, recipe.requirements, images_root() / "lock-report.json")


def write_lock(recipe_file: Path, requirements: Sequence[str], report: Path) -> None:
    """Rewrite `recipe_file`'s `lock = [...]` list (its last entry) with every wheel pip
    resolves `requirements` to for python 3.11 (the images' python), pinned."""
    if sys.version_info[:2] != (3, 11):
        raise SystemExit(
            f"lock needs python 3.11 (the image's python), not {sys.version.split()[0]}"
        )
    report.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--only-binary=:all:",
            "--report",
            str(report),
            *requirements,
        ],
        check=True,
    )
    installs = json.loads(report.read_text())["install"]
    pins = sorted(
        (f"{i['metadata']['name']}=={i['metadata']['version']}" for i in installs), key=str.lower
    )
    text = recipe_file.read_text()
    head, _, _ = text.partition("lock = [")
    recipe_file.write_text(head + "lock = [\n" + "".join(f'  "{p}",\n' for p in pins) + "]\n")
    tomllib.loads(recipe_file.read_text())
    print(f"{recipe_file}: {len(pins)} pins", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.e2e.controlplane.image", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("command", nargs="?", default="build", choices=["build", "lock"])
    args = parser.parse_args(argv)
    if args.command == "lock":
        relock()
        return 0
    started = time.monotonic()
    try:
        images = build_images()
    except rootfs.StepFailed as exc:
        print(f"image build failed: {exc}", file=sys.stderr)
        return 1
    for kind, image in images.items():
        print(f"{kind}\t{image.name}\t{image.archive}")
    print(f"ready in {time.monotonic() - started:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
