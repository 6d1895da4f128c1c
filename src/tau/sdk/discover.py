"""Import a user's module and find its @tau.train, @tau.eval and tau.serve handles.

Performs I/O (imports the module: its top-level code runs, as `python MODULE` would). Whatever
goes wrong while the module runs, the user gets one line pointing into their own file (the
decorator with the bad argument, the failing import), never a traceback.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tau.errors import Location, TauError
from tau.sdk.errors import SdkError
from tau.sdk.staging import RESERVED_MODULE_NAMES, load_staged_module

#: The module name a user's file is imported under (never one of theirs).
INSPECT_MODULE = "__tau_inspect__"
MARKERS = {"train": "_tau_train_handle", "eval": "_tau_eval_handle", "serve": "_tau_serve_handle"}


@dataclass(frozen=True)
class Found:
    """One handle and the module attribute it was found under."""

    attribute: str
    handle: Any


@dataclass(frozen=True)
class Handles:
    """A module's handles by kind, each in attribute (dir()) order."""

    train: tuple[Found, ...]
    eval: tuple[Found, ...]
    serve: tuple[Found, ...]
    module_path: Path


def _innermost(tb: Any, path: Path) -> Location:
    """The deepest traceback frame inside `path` (file:line:col), else the file alone."""
    target = path.resolve()
    best = Location(str(path))
    for frame in traceback.extract_tb(tb):
        try:
            inside = Path(frame.filename).resolve() == target
        except (OSError, ValueError):
            inside = False
        if inside and frame.lineno:
            col = (frame.colno + 1) if frame.colno is not None else 0
            best = Location(str(path), frame.lineno, col)
    return best


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TauError):
        return exc.message
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_module(path: Path) -> ModuleType:
    """Import the file at `path`; any failure is one located SdkError."""
    if path.stem in RESERVED_MODULE_NAMES:
        raise SdkError(
            f"cannot import {path}: module name {path.stem!r} is reserved by Tau",
            hint="rename the file (it would shadow a module Tau imports)",
            location=Location(str(path)),
        )
    try:
        return load_staged_module(path, module_name=INSPECT_MODULE)
    except SyntaxError as exc:
        where = Location(exc.filename or str(path), exc.lineno or 0, exc.offset or 0)
        if exc.filename and Path(exc.filename).resolve() == path.resolve():
            where = Location(str(path), exc.lineno or 0, exc.offset or 0)
        raise SdkError(f"cannot import {path}: SyntaxError: {exc.msg}", location=where) from None
    except SdkError as exc:
        if exc.__traceback__ is not None and _innermost(exc.__traceback__, path).line:
            raise SdkError(
                f"cannot import {path}: {exc.message}",
                hint=exc.hint,
                location=_innermost(exc.__traceback__, path),
            ) from None
        raise  # the loader's own refusal (no such file): already one line
    except (Exception, SystemExit) as exc:
        hint = None
        if isinstance(exc, ModuleNotFoundError):
            from tau.sdk.interpreter import how_to_choose

            hint = how_to_choose()
        raise SdkError(
            f"cannot import {path}: {_describe(exc)}",
            hint=hint,
            location=_innermost(exc.__traceback__, path),
        ) from None


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, type):  # the handle classes themselves carry the marker too
        return False
    try:
        return getattr(value, MARKERS[kind], False) is True
    except Exception:  # an attribute whose lookup raises is not a handle
        return False


def discover(path: Path) -> Handles:
    """The handles of the module at `path`; an object bound to two names counts once."""
    module = load_module(path)
    seen: set[int] = set()
    found: dict[str, list[Found]] = {kind: [] for kind in MARKERS}
    for attribute in dir(module):
        value = getattr(module, attribute, None)
        for kind in MARKERS:
            if _is(value, kind) and id(value) not in seen:
                seen.add(id(value))
                found[kind].append(Found(attribute, value))
    return Handles(
        train=tuple(found["train"]),
        eval=tuple(found["eval"]),
        serve=tuple(found["serve"]),
        module_path=path,
    )
