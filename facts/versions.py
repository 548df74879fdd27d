"""Which of two app versions is the newer: the order an update, a downgrade refusal and a
revoked version are judged by, in the store's transaction and in focus alike."""

from __future__ import annotations

__all__ = ["compare_versions"]


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as dotted numeric version `a` is below, equal to or above `b` ("0.1" ==
    "0.1.0"). A part that is not a number compares as 0; a `+build` suffix is left out."""

    def parts(version: str) -> list[int]:
        numbers = [
            int(p) if p.isdigit() else 0 for p in version.split("+", maxsplit=1)[0].split(".")
        ]
        while numbers and numbers[-1] == 0:
            numbers.pop()
        return numbers

    left, right = parts(a), parts(b)
    return (left > right) - (left < right)
