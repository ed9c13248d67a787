"""Figures as the report writes them: numbers, dollars, verdicts against a target, and prose."""

from __future__ import annotations

from collections.abc import Callable, Mapping


def verdict(values: Mapping[int, float], ok: Callable[[float], bool]) -> str:
    """'met at every size', or which sizes meet a target and which do not."""
    good = [f"{size:,}" for size, value in sorted(values.items()) if ok(value)]
    bad = [f"{size:,}" for size, value in sorted(values.items()) if not ok(value)]
    if not bad:
        return "met at every size"
    if not good:
        return "NOT met at any size"
    return f"met at {', '.join(good)} steps; NOT met at {', '.join(bad)}"


def by_size_text(values: Mapping[int, float], render: Callable[[float], str]) -> str:
    return ", ".join(f"{size:,}: {render(value)}" for size, value in sorted(values.items()))


def fmt(value: float, digits: int = 3) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) < 0.01:
        return f"{value:.2g}"
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if "." in f"{value:.{digits}f}" else f"{value}"


def usd(value: float) -> str:
    if 0 < value < 0.001:
        return f"${value:.2g}"
    return f"${value:,.3f}" if value < 10 else f"${value:,.2f}"


def prose(text: str) -> str:
    return " ".join(text.split())
