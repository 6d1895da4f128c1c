"""The GPU node probe: the script a probe pod runs, and the pure parser of what it prints.

Pure. The script runs on the host through nsenter and prints four marked sections (the
nvidia-smi GPU query, `nvidia-smi nvlink --status`, `ibstat`), always exiting 0 so a broken
driver still yields a log to read. `parse` turns that log into a `ProbeResult`; `assess` turns a
result into HEALTHY / DEGRADED / UNHEALTHY with reasons. Both are tested on recorded outputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARK = "### tau-probe "
GPU_QUERY = (
    "index,name,driver_version,ecc.errors.uncorrected.volatile.total,"
    "ecc.errors.corrected.volatile.total,retired_pages.pending"
)
#: Runs in the host's namespaces (hostPID + nsenter -t 1) so the host's driver tools are used.
SCRIPT = f"""set +e
echo '{MARK}nvidia-smi'
nvidia-smi --query-gpu={GPU_QUERY} --format=csv,noheader 2>&1
echo '{MARK}nvlink'
nvidia-smi nvlink --status 2>&1
echo '{MARK}ibstat'
if command -v ibstat >/dev/null 2>&1; then ibstat 2>&1; else echo 'ibstat: not installed'; fi
echo '{MARK}end'
exit 0
"""

HEALTHY, DEGRADED, UNHEALTHY, UNKNOWN = "HEALTHY", "DEGRADED", "UNHEALTHY", "UNKNOWN"


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    driver: str
    ecc_uncorrected: int | None
    ecc_corrected: int | None
    retired_pending: bool


@dataclass(frozen=True)
class IbPort:
    device: str
    port: int
    state: str
    physical_state: str
    link_layer: str


@dataclass(frozen=True)
class ProbeResult:
    """What one node's probe found.

    Attributes:
        smi_error: the first line nvidia-smi printed when it could not list the GPUs.
        nvlinks: (gpu index, link, up) for every NVLink reported; empty when the GPUs have none.
        ib_ports: every InfiniBand port; None when the node has no InfiniBand at all.
        complete: the log had every section (the probe ran to the end).
    """

    gpus: tuple[Gpu, ...] = ()
    smi_error: str | None = None
    nvlinks: tuple[tuple[int, int, bool], ...] = ()
    ib_ports: tuple[IbPort, ...] | None = None
    complete: bool = False


def _sections(log: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in log.splitlines():
        if line.startswith(MARK):
            current = sections.setdefault(line[len(MARK) :].strip(), [])
        elif current is not None:
            current.append(line.rstrip())
    return sections


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _parse_gpus(lines: list[str]) -> tuple[tuple[Gpu, ...], str | None]:
    gpus = []
    for line in (ln for ln in lines if ln.strip()):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 6 or not parts[0].isdigit():
            # nvidia-smi prints its failure instead of CSV ("Failed to initialize NVML: ...").
            return (), line.strip()
        gpus.append(
            Gpu(
                index=int(parts[0]),
                name=parts[1],
                driver=parts[2],
                ecc_uncorrected=_int_or_none(parts[3]),
                ecc_corrected=_int_or_none(parts[4]),
                retired_pending=parts[5].lower() == "yes",
            )
        )
    return tuple(gpus), (None if gpus else "nvidia-smi listed no GPUs")


_GPU_HEAD = re.compile(r"^GPU (\d+):")
_LINK = re.compile(r"^\s+Link (\d+): (.+)$")


def _parse_nvlink(lines: list[str]) -> tuple[tuple[int, int, bool], ...]:
    links, gpu = [], -1
    for line in lines:
        head = _GPU_HEAD.match(line)
        if head:
            gpu = int(head[1])
            continue
        link = _LINK.match(line)
        if link and gpu >= 0:
            # An active link shows its speed ("26.562 GB/s"); a broken one "<inactive>".
            links.append((gpu, int(link[1]), "inactive" not in link[2].lower()))
    return tuple(links)


def _parse_ibstat(lines: list[str]) -> tuple[IbPort, ...] | None:
    ports: list[IbPort] = []
    device, port = "", 0
    fields: dict[str, str] = {}

    def flush() -> None:
        if device and port:
            ports.append(
                IbPort(
                    device,
                    port,
                    fields.get("State", "?"),
                    fields.get("Physical state", "?"),
                    fields.get("Link layer", "InfiniBand"),
                )
            )

    for line in lines:
        stripped = line.strip()
        if stripped.startswith("CA '"):
            flush()
            device, port, fields = stripped[4:].rstrip("'"), 0, {}
        elif re.fullmatch(r"Port \d+:", stripped):
            flush()
            port, fields = int(stripped[5:-1]), {}
        elif ":" in stripped and port:
            key, _, value = stripped.partition(":")
            fields[key.strip()] = value.strip()
    flush()
    infiniband = tuple(p for p in ports if p.link_layer.lower() == "infiniband")
    return infiniband or None


def parse(log: str) -> ProbeResult:
    """Parse a probe pod's log. Pure; never raises on odd input."""
    sections = _sections(log)
    gpus, smi_error = _parse_gpus(sections.get("nvidia-smi", []))
    return ProbeResult(
        gpus=gpus,
        smi_error=smi_error,
        nvlinks=_parse_nvlink(sections.get("nvlink", [])),
        ib_ports=_parse_ibstat(sections.get("ibstat", [])),
        complete="end" in sections,
    )


@dataclass(frozen=True)
class Assessment:
    """A node's status, its reasons, and the table cells the probe fills."""

    status: str
    reasons: tuple[str, ...] = ()
    nvlink: str = "-"
    ib: str = "-"
    ecc: str = "-"
    driver: str = "-"


def assess(result: ProbeResult, expected_gpus: int) -> Assessment:
    """HEALTHY, DEGRADED or UNHEALTHY, with the reasons, from one node's probe result. Pure."""
    bad: list[str] = []
    degraded: list[str] = []
    if not result.complete:
        degraded.append("probe output incomplete")
    driver = "-"
    if result.smi_error:
        mismatch = "version mismatch" in result.smi_error.lower()
        bad.append(
            "driver/library version mismatch" if mismatch else f"nvidia-smi: {result.smi_error}"
        )
        driver = "mismatch" if mismatch else "error"
    else:
        versions = sorted({g.driver for g in result.gpus})
        driver = ",".join(versions)
        if len(versions) > 1:
            bad.append(f"mixed driver versions {driver}")
        if expected_gpus and len(result.gpus) < expected_gpus:
            degraded.append(f"nvidia-smi sees {len(result.gpus)} of {expected_gpus} GPUs")
    ecc = _ecc(result, bad, degraded)
    # Without a working nvidia-smi the NVLink section holds the same error, not link states.
    nvlink = "-" if result.smi_error else _nvlink(result, degraded)
    ib = _ib(result, degraded)
    status = UNHEALTHY if bad else DEGRADED if degraded else HEALTHY
    return Assessment(status, tuple(bad + degraded), nvlink, ib, ecc, driver)


def _ecc(result: ProbeResult, bad: list[str], degraded: list[str]) -> str:
    if not result.gpus:
        return "-"
    counted = [g for g in result.gpus if g.ecc_uncorrected is not None]
    if not counted:
        return "n/a"
    failing = [g for g in counted if g.ecc_uncorrected]
    for gpu in failing:
        bad.append(f"uncorrectable ECC errors on GPU {gpu.index} ({gpu.ecc_uncorrected})")
    pending = [g.index for g in result.gpus if g.retired_pending]
    if pending:
        degraded.append(f"page retirement pending on GPU {','.join(map(str, pending))}")
    total = sum(g.ecc_uncorrected or 0 for g in failing)
    return f"{total} uncorr" if failing else "ok"


def _nvlink(result: ProbeResult, degraded: list[str]) -> str:
    if not result.nvlinks:
        return "n/a"
    down = [(gpu, link) for gpu, link, up in result.nvlinks if not up]
    if down:
        where = ", ".join(f"GPU {g} link {lk}" for g, lk in down[:4]) + (
            " ..." if len(down) > 4 else ""
        )
        degraded.append(f"NVLink down: {where}")
        return f"down {len(down)}/{len(result.nvlinks)}"
    return f"ok {len(result.nvlinks)}"


def _ib(result: ProbeResult, degraded: list[str]) -> str:
    if result.ib_ports is None:
        return "none"
    down = [p for p in result.ib_ports if p.state.lower() != "active"]
    for port in down:
        degraded.append(f"IB {port.device} port {port.port} {port.state} ({port.physical_state})")
    total = len(result.ib_ports)
    return f"down {len(down)}/{total}" if down else f"ok {total}"
