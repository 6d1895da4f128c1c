"""The runtime image's root filesystem: Debian from its mirror (mmdebstrap), the pinned PyPI
wheels in the system python, and a check that Ray and torch.distributed really work in it.

Every command inside the root filesystem runs under `chroot` in a private mount namespace
(`unshare --mount`), so /proc, /dev, /dev/shm, /tmp and the wheel folder mounted for it vanish
with the command and the host's mounts are never touched. This needs root, as building a root
filesystem owned by root does.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

#: The non-root user tau's pods may run as (runAsUser/runAsGroup 65532), with a writable home.
NONROOT_UID = 65532
NONROOT_HOME = "/home/nonroot"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
#: A check that has not finished in this time hangs (say, on a name that does not resolve).
CHECK_TIMEOUT = 900.0
#: Where the wheel folder is mounted inside the root filesystem while pip runs.
WHEELS_MOUNT = "/run/tau-wheels"
#: Where the recipe's helper files are mounted inside the root filesystem during the checks.
CHECK_MOUNT = "/run/tau-check"

# Two processes each add their rank + 1 over gloo: the sum 3 proves the collective ran.
ALL_REDUCE = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
if dist.get_rank() == 0:
    print(f"all_reduce sum {value.item():.0f} over {dist.get_world_size()} processes")
dist.destroy_process_group()
"""
CHECK = f"""\
set -euo pipefail
python3 -c "import torch, torch.distributed as d, ray, ray.train.torch; \
print('torch', torch.__version__, 'ray', ray.__version__, 'gloo', d.is_gloo_available())"
which python3 ray torchrun wget
GLOO_SOCKET_IFNAME=lo torchrun --nproc_per_node=2 --standalone {CHECK_MOUNT}/all_reduce.py
"""


@dataclass(frozen=True)
class Recipe:
    suite: str
    mirror: str
    variant: str
    packages: tuple[str, ...]
    requirements: tuple[str, ...]
    lock: tuple[str, ...]

    @classmethod
    def load(cls, path: Path) -> Recipe:
        data = tomllib.loads(path.read_text())
        debian, pypi = data["debian"], data["pypi"]
        return cls(
            suite=debian["suite"],
            mirror=debian["mirror"],
            variant=debian["variant"],
            packages=tuple(debian["packages"]),
            requirements=tuple(pypi["requirements"]),
            lock=tuple(pypi["lock"]),
        )

    def pinned(self, name: str) -> str:
        """The locked version of a PyPI package (e.g. `ray`)."""
        for line in self.lock:
            package, _, version = line.partition("==")
            if package.lower() == name.lower():
                return version
        raise KeyError(name)


class StepFailed(RuntimeError):
    """A build step's command failed; the message carries its output."""


def run(
    argv: list[str],
    *,
    what: str,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    cwd: Path | None = None,
) -> str:
    """Run a host command; its combined output, or StepFailed naming the step with that output.
    On timeout the command's whole process group is killed (torchrun's workers included)."""
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,
    ) as proc:
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            raise StepFailed(
                f"{what} did not finish in {timeout:.0f}s: {shlex.join(argv)}\n"
                f"--- output (last lines) ---\n{_tail(output)}"
            ) from None
    if proc.returncode != 0:
        raise StepFailed(
            f"{what} failed (exit {proc.returncode}): {shlex.join(argv)}\n"
            f"--- output (last lines) ---\n{_tail(output)}"
        )
    return output


def _tail(output: str) -> str:
    return "\n".join(output.splitlines()[-60:])


#: Host tools the runtime build runs, and the Debian package that installs each.
HOST_TOOLS = {"mmdebstrap": "mmdebstrap", "unshare": "util-linux", "chroot": "coreutils"}


def check_host() -> None:
    """StepFailed naming what to install when the host cannot build the root filesystem."""
    if os.geteuid() != 0:
        raise StepFailed("building the runtime image needs root (chroot, mounts, owned files)")
    missing = sorted({pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None})
    if missing:
        raise StepFailed(
            f"the runtime image build needs {', '.join(HOST_TOOLS)}: "
            f"apt-get install {' '.join(missing)}"
        )


def debootstrap(recipe: Recipe, root: Path) -> None:
    """Debian's minimal system plus the recipe's packages, from the mirror, into `root`."""
    run(
        [
            "mmdebstrap",
            f"--variant={recipe.variant}",
            f"--include={','.join(recipe.packages)}",
            # Manuals and translated messages are dead weight in a container; licences stay.
            "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-include=/usr/share/doc/*/copyright",
            recipe.suite,
            str(root),
            recipe.mirror,
        ],
        what="mmdebstrap",
    )
    # The host's name and resolver do not belong in the image: the runtime provides both.
    for name in ("etc/hostname", "etc/resolv.conf"):
        (root / name).unlink(missing_ok=True)
    # The runtime mounts its own /etc/hosts over this one; without any, `localhost` does not
    # resolve in the chroot and torchrun's rendezvous store waits forever.
    (root / "etc/hosts").write_text(HOSTS)
    _add_nonroot_user(root)


def _add_nonroot_user(root: Path) -> None:
    """`nonroot` (65532:65532) with a home it owns, so a pod's HOME is writable without root."""
    with (root / "etc/passwd").open("a") as f:
        f.write(f"nonroot:x:{NONROOT_UID}:{NONROOT_UID}:nonroot:{NONROOT_HOME}:/bin/bash\n")
    with (root / "etc/group").open("a") as f:
        f.write(f"nonroot:x:{NONROOT_UID}:\n")
    home = root / NONROOT_HOME.lstrip("/")
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, NONROOT_UID, NONROOT_UID)
    home.chmod(0o755)
    (root / "tmp").chmod(0o1777)


def in_root(
    root: Path,
    script: str,
    *,
    what: str,
    binds: dict[str, Path] | None = None,
    user: int | None = None,
    network: bool = False,
    timeout: float | None = None,
) -> str:
    """Run a bash script in `root` under chroot, in a private mount namespace with fresh /proc,
    /dev, /dev/shm and /tmp; `binds` mounts host folders at paths inside (read-only)."""
    mounts = [
        f"mount -t proc proc {_q(root, '/proc')}",
        f"mount --rbind /dev {_q(root, '/dev')}",
        f"mount -t tmpfs -o mode=1777 shm {_q(root, '/dev/shm')}",
        f"mount -t tmpfs -o mode=1777 tmp {_q(root, '/tmp')}",
    ]
    created: list[Path] = []
    for inside, host in (binds or {}).items():
        target = root / inside.lstrip("/")
        if not target.exists():
            if host.is_dir():
                target.mkdir(parents=True)
            else:
                target.touch()
            created.append(target)
        mounts.append(f"mount --bind {shlex.quote(str(host))} {shlex.quote(str(target))}")
    if network:
        # The host's resolver and certificates, for pip's downloads only.
        for name in ("etc/resolv.conf", "etc/ssl/certs/ca-certificates.crt"):
            target = root / name
            if not target.exists():
                target.touch()
                created.append(target)
            mounts.append(f"mount --bind /{name} {shlex.quote(str(target))}")
    userspec = [f"--userspec={user}:{user}"] if user is not None else []
    home = "/root" if user is None else "/tmp"
    chroot = shlex.join(
        [
            "chroot",
            *userspec,
            str(root),
            "/usr/bin/env",
            "-i",
            f"PATH={PATH}",
            f"HOME={home}",
            "LANG=C.UTF-8",
            "/bin/bash",
            "-lc",
            script,
        ]
    )
    outer = " && ".join([*mounts, f"exec {chroot}"])
    try:
        return run(
            ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", outer],
            what=what,
            timeout=timeout,
        )
    finally:
        # Mount points made for this command only; their mounts died with its namespace.
        for path in reversed(created):
            path.rmdir() if path.is_dir() else path.unlink()


def _q(root: Path, inside: str) -> str:
    return shlex.quote(str(root / inside.lstrip("/")))


def pip_install(recipe: Recipe, root: Path, wheels: Path, constraints: Path) -> None:
    """Download the locked wheels into the persistent `wheels` folder (what is there already is
    kept) and install them, offline, into the system python's /usr/local."""
    wheels.mkdir(parents=True, exist_ok=True)
    reqs = " ".join(shlex.quote(r) for r in recipe.requirements)
    lock = f"{CHECK_MOUNT}/constraints.txt"
    binds = {WHEELS_MOUNT: wheels, CHECK_MOUNT: constraints.parent}
    in_root(
        root,
        f"pip download --quiet --no-cache-dir --only-binary=:all: "
        f"-d {WHEELS_MOUNT} -c {lock} {reqs}",
        what="pip download",
        binds=binds,
        network=True,
    )
    in_root(
        root,
        # No bytecode yet: it is compiled once the files have their final mtimes (finish()).
        f"pip install --quiet --break-system-packages --no-index --no-compile --no-cache-dir "
        f"--find-links {WHEELS_MOUNT} -c {lock} {reqs}",
        what="pip install",
        binds=binds,
    )


def finish(root: Path, epoch: int) -> None:
    """Give every file the layer's fixed mtime, then compile Python's bytecode against it: a
    .pyc names its source's mtime, and a stale one would be recompiled (or, for a non-root
    user, re-parsed) at every import."""
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.utime(os.path.join(folder, name), (epoch, epoch), follow_symlinks=False)
    script = (
        "python3 -m compileall -q -f -j0 /usr/lib/python3.11 /usr/lib/python3/dist-packages "
        "/usr/local/lib/python3.11/dist-packages >/dev/null || true"
    )
    in_root(root, script, what="compileall")
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.utime(os.path.join(folder, name), (epoch, epoch), follow_symlinks=False)
    # Pods install `runtime.pip` into this python (tau renders `python3 -m pip install`, as
    # in any trainer image): Debian's PEP 668 marker would refuse every such install.
    (root / "usr/lib/python3.11/EXTERNALLY-MANAGED").unlink(missing_ok=True)
    for leftover in ("root/.cache", "var/cache/apt", "var/lib/apt/lists"):
        path = root / leftover
        if path.is_dir():
            for child in path.iterdir():
                shutil.rmtree(
                    child
                ) if child.is_dir() and not child.is_symlink() else child.unlink()


def self_check(root: Path, scratch: Path) -> str:
    """Import torch, torch.distributed, ray and ray.train.torch, find `ray`, `torchrun` and
    `wget` on a login shell's PATH, and all_reduce over gloo with two processes: as the
    non-root user pods run as, so permissions are checked too. Returns the output."""
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "all_reduce.py").write_text(ALL_REDUCE)
    # torchrun's rendezvous serves on this machine's name, as it does on a pod's (which the
    # kubelet's /etc/hosts names): the check's /etc/hosts names it too.
    (scratch / "hosts").write_text(
        HOSTS + f"127.0.1.1\t{socket.getfqdn()} {socket.gethostname()}\n"
    )
    output = in_root(
        root,
        CHECK,
        what="runtime self-check",
        binds={CHECK_MOUNT: scratch, "/etc/hosts": scratch / "hosts"},
        user=NONROOT_UID,
        timeout=CHECK_TIMEOUT,
    )
    if "all_reduce sum 3 over 2 processes" not in output:
        raise StepFailed(f"runtime self-check printed no all_reduce sum:\n{output}")
    return output
