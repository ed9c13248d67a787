"""Figures as the report writes them: numbers, dollars, and prose (one line: the file's writer wraps it)."""

from __future__ import annotations


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
