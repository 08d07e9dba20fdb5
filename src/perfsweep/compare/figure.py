"""The figure of one row of the ``perfsweep compare --html`` page, drawn as SVG (an ``<img>`` of inlined SVG
data): per parameter of B, both models' curves with the other parameters at the target, their resampled
models' ``level`` band, the measured medians of both sweeps on that line, the target marked, and the
ratio B/A with its interval in the title.

It draws what the page's matplotlib figures drew until 2026-11-27, without matplotlib: matplotlib's 40
PNG figures (and its import) were 7-10 s of a page of 10,000 call paths, these take milliseconds each."""

from __future__ import annotations

import base64
import html
import math

import numpy as np

from perfsweep.compare.judge import Row

WIDTH, HEIGHT = 330, 240  # one panel (one parameter), in px
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 28, 40  # the plot area's margins in a panel
SIDES = (("A", "#1f77b4"), ("B", "#ff7f0e"))
POINTS = 60  # along each curve


def figure(r: Row, level: float) -> str:
    """The row's figure as an ``<img>`` of inlined SVG ("" where a side has no model)."""
    if r.entry_a is None or r.entry_b is None:
        return ""
    names = list(r.target)
    a_names = [r.names_a[j] for j in r.order]  # A's name of each of B's parameters
    panels = [_panel(r, k, names, a_names[k], level, k * WIDTH) for k in range(len(names))]
    title = f"{r.region}/{r.metric}: B/A = {r.ratio:.3f}" + (f" [{r.low:.3f}, {r.high:.3f}]"
                                                             if math.isfinite(r.low) else "")
    width = WIDTH * len(names)
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{HEIGHT + 18}' "
           f"font-family='Helvetica, Arial, sans-serif' font-size='10'>"
           f"<rect width='100%' height='100%' fill='#fff'/>"
           f"<text x='{width / 2:.0f}' y='13' text-anchor='middle' font-size='11'>{html.escape(title)}</text>"
           f"<g transform='translate(0 18)'>{''.join(panels)}</g></svg>")
    return (f"<img alt='{html.escape(r.region)}' "
            f"src='data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}'>")


def _panel(r: Row, k: int, names: list[str], a_name: str, level: float, left: float) -> str:
    """The panel of B's parameter ``k``: the data as the matplotlib figure computed it, then drawn."""
    ea, eb = r.entry_a, r.entry_b
    back = np.argsort(r.order)  # B's columns in A's order
    tgt = np.array([r.target[n] for n in names])
    pa = ea.points[:, r.order] if ea.points.size else np.empty((0, len(names)))
    pb = eb.points if eb.points.size else np.empty((0, len(names)))
    values = np.concatenate([pa[:, k], pb[:, k], [tgt[k]]])
    lo, hi = float(np.min(values)), float(np.max(values))
    grid = np.geomspace(lo, hi, POINTS) if lo > 0 and hi > lo else np.linspace(lo, hi if hi > lo else lo + 1, POINTS)
    x = np.repeat(tgt[None], len(grid), axis=0)
    x[:, k] = grid
    others = [j for j in range(len(names)) if j != k]
    layers = []  # (label, colour, curve, band or None, measured x, measured y)
    for (label, colour), entry, pts, xs in zip(SIDES, (ea, eb), (pa, pb), (x[:, back], x)):
        with np.errstate(all="ignore"):
            curve = entry.model.predict(xs)
            band = None
            if entry.model.bootstrap:
                boots = np.array([b.predict(xs) for b in entry.model.bootstrap])
                q = (1 - level) / 2
                band = (np.nanquantile(boots, q, axis=0), np.nanquantile(boots, 1 - q, axis=0))
        on_line = np.all(np.isclose(pts[:, others], tgt[others]), axis=1) if others else np.ones(len(pts), bool)
        layers.append((label, colour, curve, band, pts[on_line, k], entry.medians[on_line]))
    ys = np.concatenate([np.concatenate([c, *(b or ()), my]) for _, _, c, b, _, my in layers])
    ys = ys[np.isfinite(ys)]
    y0, y1 = (float(ys.min()), float(ys.max())) if ys.size else (0.0, 1.0)
    pad = (y1 - y0) * 0.05 or abs(y0) * 0.05 or 1.0
    x0, x1 = float(grid[0]), float(grid[-1])
    frame = _Frame(left, x0 - (x1 - x0) * 0.03, x1 + (x1 - x0) * 0.03, y0 - pad, y1 + pad)
    out = [frame.axes(names[k] + (f" (A: {a_name})" if a_name != names[k] else ""), r.metric)]
    for label, colour, curve, band, mx, my in layers:
        if band is not None:
            out += [f"<polygon points='{pts}' fill='{colour}' fill-opacity='0.15'/>"
                    for pts in frame.band(grid, *band)]
        out += [f"<polyline points='{pts}' fill='none' stroke='{colour}' stroke-width='1.5'/>"
                for pts in frame.lines(grid, curve)]
        out += [f"<circle cx='{frame.x(u):.1f}' cy='{frame.y(v):.1f}' r='3' fill='{colour}'/>"
                for u, v in zip(mx, my) if math.isfinite(v)]
    tx = frame.x(tgt[k])
    out.append(f"<line x1='{tx:.1f}' x2='{tx:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='#888' "
               "stroke-dasharray='4 3' stroke-width='0.8'/>")
    if k == 0:
        out.append(_legend(layers))
    return f"<g transform='translate({left:.0f} 0)'>{''.join(out)}</g>"


def _legend(layers: list) -> str:
    out, y = [], TOP + 10
    for label, colour, _, _, mx, _ in layers:
        out.append(f"<line x1='{LEFT + 6}' x2='{LEFT + 20}' y1='{y - 3}' y2='{y - 3}' stroke='{colour}' "
                   f"stroke-width='1.5'/><text x='{LEFT + 24}' y='{y}' font-size='8'>{label} model</text>")
        y += 11
        if len(mx):
            out.append(f"<circle cx='{LEFT + 13}' cy='{y - 3}' r='3' fill='{colour}'/>"
                       f"<text x='{LEFT + 24}' y='{y}' font-size='8'>{label} measured</text>")
            y += 11
    return "".join(out)


class _Frame:
    """A panel's plot area: data to pixel coordinates, the axes and their ticks."""

    def __init__(self, left: float, x0: float, x1: float, y0: float, y1: float):
        self.left, self.x0, self.x1, self.y0, self.y1 = left, x0, x1, y0, y1

    def x(self, u: float) -> float:
        return LEFT + (u - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)

    def y(self, v: float) -> float:
        return HEIGHT - BOTTOM - (v - self.y0) / (self.y1 - self.y0) * (HEIGHT - TOP - BOTTOM)

    def axes(self, xlabel: str, ylabel: str) -> str:
        right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
        out = [f"<rect x='{LEFT}' y='{TOP}' width='{right - LEFT}' height='{bottom - TOP}' fill='none' stroke='#444' "
               "stroke-width='0.8'/>"]
        for u in _ticks(self.x0, self.x1):
            px = self.x(u)
            out.append(f"<line x1='{px:.1f}' x2='{px:.1f}' y1='{bottom}' y2='{bottom + 4}' stroke='#444'/>"
                       f"<text x='{px:.1f}' y='{bottom + 14}' text-anchor='middle'>{u:g}</text>")
        for v in _ticks(self.y0, self.y1):
            py = self.y(v)
            out.append(f"<line x1='{LEFT - 4}' x2='{LEFT}' y1='{py:.1f}' y2='{py:.1f}' stroke='#444'/>"
                       f"<text x='{LEFT - 6}' y='{py + 3:.1f}' text-anchor='end'>{v:.4g}</text>")
        out.append(f"<text x='{(LEFT + right) / 2:.0f}' y='{HEIGHT - 8}' text-anchor='middle'>{html.escape(xlabel)}</text>"
                   f"<text transform='translate(12 {(TOP + bottom) / 2:.0f}) rotate(-90)' text-anchor='middle'>"
                   f"{html.escape(ylabel)}</text>")
        return "".join(out)

    def lines(self, xs: np.ndarray, ys: np.ndarray) -> list[str]:
        """The curve's points, one polyline per stretch of finite values."""
        return [" ".join(f"{self.x(u):.1f},{self.y(v):.1f}" for u, v in zip(xs[s], ys[s])) for s in _runs(ys)]

    def band(self, xs: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[str]:
        """The band between ``low`` and ``high``, one polygon per stretch where both are finite."""
        out = []
        for s in _runs(low + high):
            upper = [f"{self.x(u):.1f},{self.y(v):.1f}" for u, v in zip(xs[s], high[s])]
            lower = [f"{self.x(u):.1f},{self.y(v):.1f}" for u, v in zip(xs[s][::-1], low[s][::-1])]
            out.append(" ".join(upper + lower))
        return out


def _runs(values: np.ndarray) -> list[slice]:
    """The stretches of finite values (each at least two points long)."""
    finite = np.isfinite(values)
    out, start = [], None
    for i, ok in enumerate([*finite, False]):
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            if i - start > 1:
                out.append(slice(start, i))
            start = None
    return out


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values within [lo, hi] (steps of 1, 2 or 5 times a power of ten)."""
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return []
    raw = span / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next((m for m in (1, 2, 5, 10) if raw <= m * step), 10)
    first = math.ceil(lo / step)
    return [float(f"{t * step:.12g}") for t in range(first, math.floor(hi / step) + 1)]
