"""The metrics offload image: the collector sidecar of a run whose `metrics.offload.enabled` is
true (`taugrid-portal experiment offload metrics`), built from this checkout's own wheel.

`tau-e2e.local/offload:<key>` has two layers:

- **base**: Debian (offload.toml's packages) with the wheel's dependencies from PyPI, pinned by
  offload.toml's lock, in the system python. Its key hashes offload.toml and pyproject's
  dependencies: built once per machine, in `<cache>/images/offload-base-<key>/` (its root
  filesystem is kept there, to install the wheel from, and its layer tar beside it).
- **tau**: the wheel, installed without dependencies over the base. Its key is the wheel's
  sha256, so each commit that changes the package makes a new layer of a few MB, in seconds,
  and nothing else is rebuilt.

The wheel is built from the checkout with hatchling's PEP 517 hook, in a venv of its own in the
cache, with SOURCE_DATE_EPOCH fixed: the same sources give the same bytes, hence the same key.
The platform side names the image by digest (`ImageArchive.pinned`): the `team-real`
workspace's `spec.experiments.offloadImage`.

    python -m tests.e2e.controlplane.offload_image [build]   # build what is missing, print it
    python -m tests.e2e.controlplane.offload_image lock      # re-resolve offload.toml's lock
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from tests.e2e.controlplane import oci, rootfs
from tests.e2e.controlplane.image import REGISTRY, ImageArchive, _key, _locked, images_root

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RECIPE_FILE = HERE / "offload.toml"
PYPROJECT = ROOT / "pyproject.toml"
#: Where the wheel's folder and the layer's staging folder are mounted in the base's root.
WHEEL_MOUNT = "/run/tau-wheel"
STAGE_MOUNT = "/run/tau-stage"
SITE = "usr/local/lib/python3.11/dist-packages"
#: What the collector imports: the base is checked to import each as the non-root user.
BASE_CHECK = "import pyarrow, pyarrow.fs, pyarrow.parquet, psycopg, yaml, cyclopts"


def _recipe() -> dict[str, object]:
    return tomllib.loads(RECIPE_FILE.read_text())


def requirements() -> tuple[str, ...]:
    """The wheel's dependencies as pyproject.toml states them (plus its `portal` extra, when
    the project has one): what the base layer installs."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extra = (project.get("optional-dependencies") or {}).get("portal") or []
    return tuple(project["dependencies"]) + tuple(extra)


def base_key() -> str:
    return _key(b"offload-base", RECIPE_FILE.read_bytes(), "\n".join(requirements()).encode())


def _base_recipe() -> rootfs.Recipe:
    data = _recipe()
    debian, pypi = data["debian"], data["pypi"]
    assert isinstance(debian, dict) and isinstance(pypi, dict)
    return rootfs.Recipe(
        suite=debian["suite"],
        mirror=debian["mirror"],
        variant=debian["variant"],
        packages=tuple(debian["packages"]),
        requirements=requirements(),
        lock=tuple(pypi["lock"]),
    )


# ---------------------------------------------------------------------------------- the wheel


def _builder() -> Path:
    """The python of a venv holding the pinned hatchling (made once per machine)."""
    build = _recipe()["build"]
    assert isinstance(build, dict)
    version = str(build["hatchling"])
    venv = images_root() / f"wheel-builder-hatchling-{version}"
    python = venv / "bin" / "python"
    if (venv / ".ready").is_file():
        return python
    with _locked():
        if (venv / ".ready").is_file():
            return python
        # A venv's scripts name its own path: it is made where it stays, and marked ready last.
        shutil.rmtree(venv, ignore_errors=True)
        rootfs.run([sys.executable, "-m", "venv", str(venv)], what="python -m venv")
        rootfs.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-cache-dir",
                f"hatchling=={version}",
            ],
            what=f"pip install hatchling=={version}",
        )
        (venv / ".ready").write_text(version + "\n")
    return python


def build_wheel() -> Path:
    """This checkout's wheel, in `<cache>/images/tau-wheels/<sha256[:12]>/`."""
    python = _builder()
    with tempfile.TemporaryDirectory(prefix="tau-wheel-") as out:
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(oci.EPOCH)}
        name = (
            rootfs.run(
                [
                    str(python),
                    "-c",
                    "import sys; from hatchling.build import build_wheel; "
                    "print(build_wheel(sys.argv[1]))",
                    out,
                ],
                what="hatchling build_wheel",
                env=env,
                cwd=ROOT,
            )
            .strip()
            .splitlines()[-1]
        )
        built = Path(out) / name
        sha = hashlib.sha256(built.read_bytes()).hexdigest()
        folder = images_root() / "tau-wheels" / sha[:12]
        if not (folder / name).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, folder / f".{name}")
            (folder / f".{name}").rename(folder / name)
    return folder / name


# ---------------------------------------------------------------------------------- the base


def _base() -> tuple[oci.Descriptor, Path, Path]:
    """(layer descriptor, layer tar, root filesystem) of the base, building it when missing."""
    folder = images_root() / f"offload-base-{base_key()}"
    if not (folder / "descriptor.json").is_file():
        with _locked():
            if not (folder / "descriptor.json").is_file():
                _build_base(folder)
    desc = json.loads((folder / "descriptor.json").read_text())
    descriptor = oci.Descriptor(desc["mediaType"], desc["digest"], desc["size"])
    return descriptor, folder / "layer.tar", folder / "rootfs"


def _build_base(folder: Path) -> None:
    rootfs.check_host()
    recipe = _base_recipe()
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    print(f"building the offload image's base in {partial}", file=sys.stderr, flush=True)
    try:
        root, scratch = partial / "rootfs", partial / "scratch"
        scratch.mkdir()
        (scratch / "constraints.txt").write_text("\n".join(recipe.lock) + "\n")
        timings: dict[str, float] = {}
        started = time.monotonic()
        rootfs.debootstrap(recipe, root)
        timings["mmdebstrap_s"] = time.monotonic() - started
        started = time.monotonic()
        rootfs.pip_install(recipe, root, images_root() / "wheels", scratch / "constraints.txt")
        timings["pip_s"] = time.monotonic() - started
        rootfs.finish(root, oci.EPOCH)
        rootfs.in_root(
            root,
            f'python3 -c "{BASE_CHECK}"',
            what="offload base self-check",
            user=rootfs.NONROOT_UID,
        )
        shutil.rmtree(scratch)
        started = time.monotonic()
        layer = oci.layer_file(root, partial / "layer.tar")
        timings["layer_s"] = time.monotonic() - started
        (partial / "descriptor.json").write_text(json.dumps(layer.to_json()) + "\n")
        (partial / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    print(f"built the offload image's base: {folder}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- the image


def build() -> ImageArchive:
    """The offload image of this checkout, building what the cache lacks."""
    wheel = build_wheel()
    base, base_tar, base_root = _base()
    wheel_sha = wheel.parent.name
    key = _key(b"offload", base.digest.encode(), wheel_sha.encode())
    folder = images_root() / f"offload-{key}"
    name = f"{REGISTRY}/offload:{key}"
    if not (folder / "digest").is_file():
        with _locked():
            if not (folder / "digest").is_file():
                _build_top(folder, name, wheel, (base, base_tar, base_root))
    # Recently used: pruning (newest first) keeps it.
    os.utime(folder)
    os.utime(wheel.parent)
    digest = (folder / "digest").read_text().strip()
    return ImageArchive(name, folder / "image.tar", digest)


def _build_top(
    folder: Path, name: str, wheel: Path, base: tuple[oci.Descriptor, Path, Path]
) -> None:
    started = time.monotonic()
    descriptor, base_tar, base_root = base
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    stage = partial / "stage"
    stage.mkdir(parents=True)
    try:
        site = f"{STAGE_MOUNT}/{SITE}"
        rootfs.in_root(
            base_root,
            f"pip install --quiet --no-deps --no-index --no-compile --no-cache-dir "
            f"--break-system-packages --root {STAGE_MOUNT} {WHEEL_MOUNT}/{wheel.name}",
            what="pip install the tau wheel",
            binds={WHEEL_MOUNT: wheel.parent, STAGE_MOUNT: stage},
        )
        # Bytecode against the layer's fixed mtime (see rootfs.finish), naming the paths the
        # files have in the image.
        _epoch(stage)
        rootfs.in_root(
            base_root,
            f"python3 -m compileall -q -f -j0 -s {STAGE_MOUNT} -p / {site} >/dev/null",
            what="compileall the tau wheel",
            binds={STAGE_MOUNT: stage},
        )
        _epoch(stage)
        if not (stage / "usr/local/bin/taugrid-portal").is_file():
            raise rootfs.StepFailed(f"{wheel.name} installed no taugrid-portal script")
        top = oci.layer_file(stage, partial / "tau-layer.tar")
        runtime = oci.Runtime(
            env=(f"PATH={rootfs.PATH}", "LANG=C.UTF-8", "PYTHONUNBUFFERED=1"),
            cmd=("taugrid-portal", "--help"),
            labels={"tau.e2e/wheel": wheel.name, "tau.e2e/wheel-sha256": wheel.parent.name},
        )
        manifest = oci.write_layered_archive(
            name,
            runtime,
            [(descriptor, base_tar), (top, partial / "tau-layer.tar")],
            partial / "image.tar",
        )
        (partial / "tau-layer.tar").unlink()
        shutil.rmtree(stage)
        (partial / "name").write_text(name + "\n")
        (partial / "digest").write_text(manifest.digest + "\n")
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    print(
        f"built {name} ({top.size / 1e6:.1f} MB tau layer) in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
        flush=True,
    )
    _prune()


#: How many offload archives (each carries its own copy of the base layer) and wheels stay.
KEEP_IMAGES, KEEP_WHEELS = 3, 10


def _prune() -> None:
    """Drop all but the newest few archives and wheels: each commit that touches the package
    makes one, and an archive holds the whole base. The newest stay for the worktrees that
    alternate on this machine; a pruned one is rebuilt in seconds."""
    root = images_root()
    images = [
        p
        for p in root.glob("offload-*")
        if p.is_dir() and not p.name.startswith("offload-base-") and not p.name.endswith(".partial")
    ]
    wheels = [p for p in (root / "tau-wheels").glob("*") if p.is_dir()]
    for found, keep in ((images, KEEP_IMAGES), (wheels, KEEP_WHEELS)):
        for old in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)[keep:]:
            shutil.rmtree(old, ignore_errors=True)


def _epoch(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.utime(os.path.join(folder, name), (oci.EPOCH, oci.EPOCH), follow_symlinks=False)
    os.utime(root, (oci.EPOCH, oci.EPOCH))


def relock() -> None:
    """Rewrite offload.toml's `lock` from pyproject's dependencies (python 3.11 only)."""
    from tests.e2e.controlplane.image import write_lock

    write_lock(RECIPE_FILE, requirements(), images_root() / "offload-lock-report.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.e2e.controlplane.offload_image",
        description=(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument("command", nargs="?", default="build", choices=["build", "lock"])
    args = parser.parse_args(argv)
    if args.command == "lock":
        relock()
        return 0
    started = time.monotonic()
    try:
        image = build()
    except rootfs.StepFailed as exc:
        print(f"offload image build failed: {exc}", file=sys.stderr)
        return 1
    print(f"{image.pinned}\t{image.archive}")
    print(f"ready in {time.monotonic() - started:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
