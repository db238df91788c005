"""Server-side SVG charts for report.html: the ones whose labels must be placed (label_layout), so the
positions are fixed when the page is built, the same for every window width (the viewBox scales as a
whole) and the same bytes for the same results. Every text from a run is escaped."""

from __future__ import annotations

import html
from dataclasses import dataclass

FONT = "'DejaVu Sans', Verdana, sans-serif"  # the widest common sans first: the width estimate's basis
LABEL_MAX_CHARS = 32  # longer names are cut with an ellipsis on the chart; the hover title has it whole


@dataclass(frozen=True)
class SvgChart:
    """One pre-drawn chart: the id of its div, its section, title, caption and the <svg> markup."""

    id: str
    section: str
    title: str
    caption: str
    svg: str


def num(v: float) -> str:
    """A coordinate with one decimal, never "-0.0" (stable bytes)."""
    text = f"{v:.1f}"
    return "0.0" if text == "-0.0" else text


def attr(text: object) -> str:
    """Text escaped for an attribute value or element content."""
    return html.escape(str(text), quote=True)


def short(name: str) -> str:
    """A name as a chart label: cut to LABEL_MAX_CHARS with an ellipsis."""
    return name if len(name) <= LABEL_MAX_CHARS else name[: LABEL_MAX_CHARS - 1] + "\u2026"


def text(
    x: float, baseline: float, content: str, size: float, anchor: str = "start", cls: str = "", fill: str = ""
) -> str:
    """A <text> element at (x, baseline); its box spans ASCENT_EM above to DESCENT_EM below the
    baseline and text_width(content, size) across, placed by the anchor (start, middle or end)."""
    extra = (f" class='{cls}'" if cls else "") + (f" fill='{fill}'" if fill else "")
    return (
        f"<text x='{num(x)}' y='{num(baseline)}' font-size='{num(size)}' text-anchor='{anchor}'{extra}>"
        f"{attr(content)}</text>"
    )


def line(
    a: tuple[float, float], b: tuple[float, float], stroke: str, width: float = 1.0, extra: str = ""
) -> str:
    """A <line> from a to b."""
    return (
        f"<line x1='{num(a[0])}' y1='{num(a[1])}' x2='{num(b[0])}' y2='{num(b[1])}' stroke='{stroke}' "
        f"stroke-width='{num(width)}'{extra}/>"
    )


def document(width: float, height: float, title: str, body: list[str]) -> str:
    """The <svg> element: a viewBox of width x height that scales to its container."""
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {num(width)} {num(height)}' role='img' "
        f"aria-label='{attr(title)}' font-family=\"{FONT}\">"
        "<style>.lbl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}</style>"
        + "".join(body)
        + "</svg>"
    )
