"""Text for registry output: canonical JSON, aligned tables, sizes and the detail views.

Pure. Everything here turns values into strings; the CLI prints them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def to_json(value: Any) -> str:
    """Stable JSON: sorted keys, 2-space indent, one trailing newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def human_bytes(n: int) -> str:
    """Binary-unit size such as ``512B``, ``1.5GiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "PiB":
            return f"{n}B" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}PiB"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces, no trailing blanks, trailing newline."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *rows)
    ]
    return "\n".join(lines) + "\n"


def short_digest(digest: str) -> str:
    """The first 12 hex characters of a ``sha256:`` digest."""
    return digest.removeprefix("sha256:")[:12]


def tags_text(tags: Mapping[str, Any]) -> str:
    """``k=v,k2=v2`` in key order, or ``-`` when there are none."""
    return ",".join(f"{k}={v}" for k, v in sorted(tags.items())) or "-"


DATASET_COLUMNS = ("NAME", "VERSION", "PURPOSE", "FILES", "SIZE", "ASSURANCE", "DIGEST", "CREATED")


def dataset_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The ``dataset list`` table."""
    rows = [
        (
            r["name"],
            r["version"],
            r["purpose"],
            str(len(r.get("files", []))),
            human_bytes(int(r.get("total_bytes", 0))),
            r.get("assurance", ""),
            short_digest(r.get("digest", "")),
            r.get("created_at", ""),
        )
        for r in records
    ]
    return table(DATASET_COLUMNS, rows)


def location_text(rec: Mapping[str, Any]) -> str:
    """Where the bytes are: ``az://account/container/prefix`` or ``file://prefix``."""
    account, container, prefix = rec.get("account"), rec.get("container"), rec.get("prefix", "")
    if account:
        return f"az://{account}/{container}/{prefix}".rstrip("/")
    return f"file://{prefix}" if prefix else "-"


def dataset_detail(rec: Mapping[str, Any]) -> str:
    """The ``dataset show`` table view."""
    src = rec.get("source") or {}
    source = " ".join(p for p in (src.get("kind"), src.get("repo")) if p) or "-"
    if src.get("revision"):
        source += f"@{src['revision']}"
    purpose = rec["purpose"]
    section = rec.get(purpose) or {}
    fields = [
        ("Name", rec["name"]),
        ("Version", rec["version"]),
        ("Purpose", purpose),
        ("Assurance", rec.get("assurance", "")),
        ("Digest", rec.get("digest", "")),
        ("Files", str(len(rec.get("files", [])))),
    ]
    components = rec.get("components") or []
    if components:
        fields.append(
            (
                "Components",
                ", ".join(
                    "/".join(str(c.get(k, "")) for k in ("source", "domain", "split"))
                    for c in components
                ),
            )
        )
    total = int(rec.get("total_bytes", 0))
    fields += [
        ("Total bytes", f"{total} ({human_bytes(total)})"),
        ("Location", location_text(rec)),
        ("Source", source),
        ("Created", rec.get("created_at", "")),
        (purpose.capitalize(), " ".join(f"{k}={v}" for k, v in sorted(section.items())) or "-"),
        ("Tags", tags_text(rec.get("tags") or {})),
    ]
    width = max(len(k) for k, _ in fields) + 2
    return "".join(f"{(k + ':').ljust(width)}{v}\n" for k, v in fields)


def verify_text(report: Mapping[str, Any]) -> str:
    """``<name>@<version>: OK|FAILED``, both digests, then one ``  - `` line per mismatch."""
    lines = [
        f"{report['name']}@{report['version']}: {'OK' if report['ok'] else 'FAILED'}",
        f"  record digest: {report['record_digest']}",
        f"  actual digest: {report['actual_digest']}",
    ]
    lines += [f"  - {m}" for m in report["mismatches"]]
    return "\n".join(lines) + "\n"


MODEL_COLUMNS = ("MODEL", "RUN", "METRIC({})", "DIRECTION", "TAGS", "ARTIFACT", "STATUS")


def model_table(rows: Sequence[Mapping[str, Any]], metric: str | None) -> str:
    """The ``model list`` table; `rows` carry ``metric_value``/``metric_direction`` already."""
    header = [c.format(metric or "primary") for c in MODEL_COLUMNS]
    body = []
    for r in rows:
        value = r.get("metric_value")
        art: Mapping[str, Any] = next(iter(r["record"].get("artifacts") or []), {})
        body.append(
            (
                r["record"]["model"],
                r["record"]["run"],
                "-" if value is None else f"{value:g}",
                r.get("metric_direction") or "-",
                tags_text(r["record"].get("tags") or {}),
                art.get("durable_path") or "-",
                art.get("status") or "-",
            )
        )
    return table(header, body)


def model_summary(rec: Mapping[str, Any]) -> str:
    """The ``model show -o summary`` view."""
    pm = rec.get("primary_metric") or {}
    metric = f"{pm['name']}={pm['value']:g} ({pm['direction']})" if pm else "-"
    art: Mapping[str, Any] = next(iter(rec.get("artifacts") or []), {})
    fields = [
        ("Model", rec["model"]),
        ("Run", rec["run"]),
        ("Namespace", rec.get("namespace") or "-"),
        ("Created", rec.get("created_at") or "-"),
        ("Completed", rec.get("completed_at") or "-"),
        ("Primary metric", metric),
        ("Artifact", art.get("durable_path") or "-"),
        ("Status", art.get("status") or "-"),
        ("Tags", tags_text(rec.get("tags") or {})),
        ("Record", rec.get("record_path") or "-"),
    ]
    width = max(len(k) for k, _ in fields) + 2
    return "".join(f"{(k + ':').ljust(width)}{v}\n" for k, v in fields)
