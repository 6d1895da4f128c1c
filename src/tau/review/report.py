"""A review as text (terminal), markdown (a pull-request comment) or JSON (tools).

Pure. Text is short: one line per field, `path: old → new`, `+ path: value` or `- path: value`,
and payload files as unified diffs. Markdown gives one summary row per changed target, in words
("GPUs 16 → 8, image tag, +1 env"), then the details in a collapsed block. Unchanged targets
are counted, not listed, except in JSON.

JSON (`-o json`) is one object, keys sorted, stable across runs:

    {"version": 1, "from": "HEAD", "to": "work tree", "changed": true,
     "targets": [{"target": "train",            # the run name; PROJECT/NAME in a monorepo
                  "status": "changed",          # unchanged | changed | added | removed | error
                  "summary": "GPUs 16 → 8, +1 env",
                  "errors": [{"side": "HEAD", "message": "tau/train.yaml:3:1: error: ..."}],
                  "objects": [{"kind": "RayJob", "name": "train",
                               "status": "changed",   # changed | added | removed
                               "changes": [{"path": "spec.suspend", "op": "changed",
                                            "old": false, "new": true}],
                               "files": [{"path": "/script/train.py", "op": "changed",
                                          "diff": "--- a/script/train.py ..."}]}]}]}

`old`/`new` are JSON values (null where the field is absent); a Secret's data reads "<hidden>".
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from tau.k8s import meta
from tau.review.differ import Change, ObjectDiff
from tau.review.model import Review, TargetDiff

JSON_VERSION = 1
_MAX_VALUE = 120
#: Characters shown each side of where two long strings start to differ.
_CONTEXT = 40
_BARE = re.compile(r"^[A-Za-z_/<][\w./:@+=,<>-]*$")
_ENV = re.compile(r"\.env\[([^\]]+)\]")
_GPU = "nvidia.com/gpu"
_GROUP = re.compile(r".*\.workerGroupSpecs\[[^\]]+\]")


def _value(value: Any) -> str:
    """A value on one line: a plain string bare, anything else as compact JSON, cut at 120."""
    if isinstance(value, str) and _BARE.match(value) and value not in ("true", "false", "null"):
        text = value
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def _lines_diff(old: str, new: str) -> list[str]:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
    return [line for line in lines if not line.startswith(("---", "+++"))]


def _change(change: Change) -> list[str]:
    if change.op == "added":
        return [f"+ {change.path}: {_value(change.new)}"]
    if change.op == "removed":
        return [f"- {change.path}: {_value(change.old)}"]
    return _changed(change.path, change.old, change.new)


def _changed(path: str, old: Any, new: Any) -> list[str]:
    """A changed value; a script (a multi-line string) as a unified diff of its lines, and a
    list of the same length (a container's command) item by item, so a one-line change in a
    generated shell script reads as that line.
    """
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        return [f"{path}:", *(f"    {line}" for line in _lines_diff(old, new))]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out: list[str] = []
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                out += _changed(f"{path}[{index}]", a, b)
        return out
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > _MAX_VALUE:
        return [f"{path}: {_around(old, new)}"]
    return [f"{path}: {_value(old)} → {_value(new)}"]


def _around(old: str, new: str) -> str:
    """Two long one-line strings (a shell command) cut to where they differ, with context."""
    same = (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
    prefix = next(same, min(len(old), len(new)))
    start = max(0, prefix - _CONTEXT)

    def window(text: str) -> str:
        cut = text[start : prefix + _CONTEXT]
        return ("…" if start else "") + cut + ("…" if prefix + _CONTEXT < len(text) else "")

    return f"{_value(window(old))} → {_value(window(new))}"


def _object_lines(obj: ObjectDiff, *, files: bool = True) -> list[str]:
    if obj.op != "changed":
        return [f"{'+' if obj.op == 'added' else '-'} {obj.ref}"]
    lines = [obj.ref]
    for change in obj.changes:
        lines += [f"  {line}" for line in _change(change)]
    for file in obj.files if files else ():
        lines.append(f"  {file.path} ({file.op})")
        lines += [f"    {line}" for line in file.diff.splitlines()]
    return lines


def _target_lines(target: TargetDiff, *, files: bool = True) -> list[str]:
    if target.op == "error":
        return [line for label, text in target.errors for line in _error_lines(label, text)]
    return [f"  {line}" for obj in target.objects for line in _object_lines(obj, files=files)]


def details(target: TargetDiff) -> list[str]:
    """The indented lines under a target's heading in the text report."""
    return _target_lines(target)


def _error_lines(label: str, text: str) -> list[str]:
    """A side's error under its label: `at HEAD:` then the located lines, indented."""
    return [f"  at {label}:", *(f"    {line}" for line in text.splitlines())]


def _counts(review: Review) -> str:
    changed = sum(t.op != "unchanged" for t in review.targets)
    total = len(review.targets)
    noun = "target" if total == 1 else "targets"
    if not changed:
        return f"no change ({total} {noun}, {review.old} → {review.new})"
    return f"{changed} of {total} {noun} changed ({review.old} → {review.new})"


def text(review: Review) -> str:
    """The terminal report: each target that differs, then a count."""
    out: list[str] = []
    for target in review.targets:
        if target.op == "unchanged":
            continue
        out.append(f"{target.target}: {summary(target, review)}")
        out += _target_lines(target)
    out.append(_counts(review))
    return "\n".join(out) + "\n"


def markdown(review: Review) -> str:
    """A pull-request comment: the summary table, then each target's details, collapsed."""
    out = [f"### tau run --diff: {review.old} → {review.new}", ""]
    shown = [t for t in review.targets if t.op != "unchanged"]
    if not shown:
        out.append(f"No change to the rendered objects ({_counts(review)}).")
        return "\n".join(out) + "\n"
    out += ["| target | what changes |", "|---|---|"]
    out += [f"| `{t.target}` | {_cell(summary(t, review))} |" for t in shown]
    counts = _counts(review)
    out += ["", counts[0].upper() + counts[1:] + "."]
    for target in shown:
        out += ["", f"<details><summary><code>{target.target}</code></summary>", ""]
        details = _target_lines(target, files=False)
        out += ["```text", *(line[2:] for line in details), "```"]
        diffs = [f.diff.rstrip("\n") for obj in target.objects for f in obj.files]
        if diffs:
            out += ["", "```diff", *diffs, "```"]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def as_json(review: Review) -> str:
    """The documented JSON document (see the module docstring)."""
    doc = {
        "version": JSON_VERSION,
        "from": review.old,
        "to": review.new,
        "changed": review.changed,
        "targets": [
            {
                "target": t.target,
                "status": t.op,
                "summary": summary(t, review) if t.op != "unchanged" else "",
                "errors": [{"side": side, "message": msg} for side, msg in t.errors],
                "objects": [_object_json(o) for o in t.objects],
            }
            for t in review.targets
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _object_json(obj: ObjectDiff) -> dict[str, Any]:
    return {
        "kind": obj.kind,
        "name": obj.name,
        "status": obj.op,
        "changes": [{"path": c.path, "op": c.op, "old": c.old, "new": c.new} for c in obj.changes],
        "files": [{"path": f.path, "op": f.op, "diff": f.diff} for f in obj.files],
    }


def summary(target: TargetDiff, review: Review) -> str:
    """What changed, in words: "GPUs 16 → 8, image tag, +1 env, script train.py"."""
    if target.op == "added":
        return f"new target (not in {review.old})"
    if target.op == "removed":
        return f"target removed (not in {review.new})"
    if target.op == "error":
        return "; ".join(f"does not render ({side})" for side, _ in target.errors)
    if target.op == "unchanged":
        return "no change"
    words: list[str] = []
    for obj in target.objects:
        words += _words(obj)
    return ", ".join(dict.fromkeys(words))


def _words(obj: ObjectDiff) -> list[str]:
    if obj.op != "changed":
        return [f"{'+' if obj.op == 'added' else '−'}{obj.ref}"]
    words: list[str] = []
    env: dict[str, set[str]] = {"added": set(), "removed": set(), "changed": set()}
    other = 0
    for change in obj.changes:
        word = _word(change)
        found = _ENV.search(change.path)
        if found and word is None:
            op = change.op if change.path.endswith(f"env[{found.group(1)}]") else "changed"
            env[op].add(found.group(1))
        elif word is not None:
            words.append(word)
        else:
            other += 1
    for op, sign in (("added", "+"), ("removed", "−"), ("changed", "")):
        if env[op]:
            count = len(env[op])
            words.append(f"{sign}{count} env" + (" changed" if op == "changed" else ""))
    for file in obj.files:
        name = file.path.rsplit("/", 1)[-1]
        sign = {"added": "+", "removed": "−"}.get(file.op, "")
        words.append(f"{sign}script {name}")
    if other:
        words.append(f"{other} other field" + ("s" if other > 1 else ""))
    return words


def _word_value(value: Any) -> str:
    return value if isinstance(value, str) and len(value) <= 40 else _value(value)


def _word(change: Change) -> str | None:
    """The words for one field change, or None when no rule names it."""
    path, old, new = change.path, change.old, change.new
    moved = f"{_word_value(old)} → {_word_value(new)}" if change.op == "changed" else ""
    if path.endswith(f"[{meta.ANNOTATION_GPU_COUNT}]"):
        return f"GPUs {moved}" if moved else "GPUs"
    if path.endswith(f".limits[{_GPU}]"):
        return f"GPUs per pod {moved}" if moved else "GPUs per pod"
    if path.endswith((f".requests[{_GPU}]", "rayStartParams.num-gpus")):
        return "GPUs per pod"
    image = path.endswith((".image", f"[{meta.ANNOTATION_IMAGE}]"))
    if image and isinstance(old, str) and isinstance(new, str):
        same_repo = old.rsplit(":", 1)[0] == new.rsplit(":", 1)[0]
        return "image tag" if same_repo else "image"
    if _GROUP.fullmatch(path) and change.op != "changed":
        return f"{'+' if change.op == 'added' else '−'}worker group"
    if path.endswith(".replicas") and "workerGroupSpecs" in path:
        return f"workers {moved}"
    if path in ("spec.parallelism", "spec.completions"):
        return f"pods {moved}" if moved else "pods"
    if path.endswith(f"[{meta.KUEUE_QUEUE_NAME}]") and path.startswith("metadata"):
        return f"queue {moved}" if moved else "queue"
    if ".tolerations" in path:
        return "tolerations"
    if ".resources." in path and path.endswith((".cpu", ".memory")):
        return "CPU" if path.endswith(".cpu") else "memory"
    if path.endswith(".persistentVolumeClaim.claimName"):
        return f"PVC {moved}" if moved else "PVC"
    if path.endswith(".nodeSelector") or ".nodeSelector[" in path:
        return "node selector"
    in_container = ".containers[" in path or ".initContainers[" in path
    if in_container and (path.endswith((".command", ".args")) or "].command[" in path):
        return "command"
    return None
