"""Did-you-mean suggestions for mistyped config keys. Pure."""

from __future__ import annotations

from collections.abc import Iterable


def distance(a: str, b: str) -> int:
    """Levenshtein edit distance between two strings."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def limit(word: str) -> int:
    """How many edits still count as a typo of `word`: a third of its length, 2..6."""
    return max(2, min(6, len(word) // 3))


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to `word` within the typo limit, or None; ties go alphabetical."""
    best: tuple[int, str] | None = None
    for candidate in candidates:
        d = distance(word.lower(), candidate.lower())
        if d <= limit(word) and (best is None or (d, candidate) < best):
            best = (d, candidate)
    return best[1] if best else None
