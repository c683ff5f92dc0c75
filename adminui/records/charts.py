"""Score charts drawn on the server as SVG: one line per series over time, 0 to 10.

The geometry is computed here; ``templates/adminui/_line_chart.html`` writes the SVG
(so every label is escaped like any other value). No JavaScript, nothing fetched.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from inference.ledger.queries import TrendPoint

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 36, 44, 12, 28
# Twelve series' colours, each pair at least 30 apart in CIELAB (ΔE*76), so no two read
# as one (the eight before had two oranges 8 apart).
PALETTE = (
    "#3451b2",
    "#e8590c",
    "#2b8a3e",
    "#c2255c",
    "#1098ad",
    "#7048e8",
    "#f59f00",
    "#495057",
    "#8c5a2b",
    "#74b816",
    "#f783ac",
    "#862e9c",
)
# The width of a tick label's character at its 10 px, a little over the widest digit's.
_TICK_CHARACTER = 6.5
_LABELS = {"hour": "%d %b %H:00", "day": "%d %b"}


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    tip: str  # shown on hover: when, mean, how many scores


@dataclass(frozen=True)
class Line:
    name: str
    color: str
    dots: tuple[Dot, ...]

    @property
    def path(self) -> str:
        return " ".join(f"{dot.x:.1f},{dot.y:.1f}" for dot in self.dots)


@dataclass(frozen=True)
class LineChart:
    title: str
    lines: tuple[Line, ...]
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    bottom_edge: int = HEIGHT - BOTTOM


def line_chart(title: str, points: list[TrendPoint], bucket: str) -> LineChart:
    times = sorted({point.bucket for point in points})
    label = _LABELS.get(bucket, "%d %b")

    def x(moment: datetime) -> float:
        if len(times) < 2:
            return (LEFT + WIDTH - RIGHT) / 2
        span = (times[-1] - times[0]).total_seconds()
        return LEFT + (moment - times[0]).total_seconds() / span * (WIDTH - LEFT - RIGHT)

    def y(score: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - score / 10)

    names = sorted({point.series for point in points})
    lines = tuple(
        Line(
            name=name,
            color=PALETTE[index % len(PALETTE)],
            dots=tuple(
                Dot(
                    x(point.bucket),
                    y(point.mean),
                    f"{name} · {point.bucket:{label}}: {point.mean:.2f} ({point.count} scores)",
                )
                for point in points
                if point.series == name
            ),
        )
        for index, name in enumerate(names)
    )
    step = max(1, len(times) // 5)
    x_ticks = tuple((x(moment), f"{moment:{label}}") for moment in times[::step])
    y_ticks = tuple((y(score), str(score)) for score in range(0, 11, 2))
    return LineChart(title, lines, x_ticks, y_ticks)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    height: float
    color: str
    tip: str


@dataclass(frozen=True)
class BarChart:
    title: str
    bars: tuple[Bar, ...]
    legend: tuple[tuple[str, str], ...]  # (series, color)
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    bar_width: float
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    bottom_edge: int = HEIGHT - BOTTOM


def left_margin(labels: Iterable[str]) -> int:
    """Room left of the plot for the longest y-axis label (set 6 px off the axis), at
    least ``LEFT``: a label like ``$0.013`` was cut at the chart's edge."""
    longest = max((len(label) for label in labels), default=0)
    return max(LEFT, math.ceil(6 + 4 + longest * _TICK_CHARACTER))


def stacked_bars(title: str, points: list[tuple[datetime, str, float]]) -> BarChart:
    """One bar per day, stacked by series (USD)."""
    days = sorted({day for day, _, _ in points})
    names = sorted({name for _, name, _ in points})
    colors = {name: PALETTE[index % len(PALETTE)] for index, name in enumerate(names)}
    totals = {day: sum(value for when, _, value in points if when == day) for day in days}
    top = max(totals.values(), default=0.0) or 1.0
    scale = (HEIGHT - TOP - BOTTOM) / top
    y_ticks = tuple(
        (HEIGHT - BOTTOM - fraction * top * scale, f"${fraction * top:.2g}")
        for fraction in (0, 0.5, 1)
    )
    left = left_margin(label for _, label in y_ticks)
    slot = (WIDTH - left - RIGHT) / max(1, len(days))
    bars = []
    for index, day in enumerate(days):
        base = float(HEIGHT - BOTTOM)
        for _, name, value in sorted((p for p in points if p[0] == day), key=lambda p: p[1]):
            height = value * scale
            base -= height
            tip = f"{name} · {day:%d %b}: ${value:.4f}"
            bars.append(Bar(left + index * slot + slot * 0.15, base, height, colors[name], tip))
    step = max(1, len(days) // 6)
    x_ticks = tuple(
        (left + index * slot + slot / 2, f"{day:%d %b}")
        for index, day in enumerate(days)
        if index % step == 0
    )
    return BarChart(
        title, tuple(bars), tuple(colors.items()), x_ticks, y_ticks, slot * 0.7, left=left
    )


def score_bars(title: str, values: list[tuple[str, float]]) -> BarChart:
    """One bar per name, its score on the 0 to 10 scale (an evaluation's agents)."""
    colors = {name: PALETTE[index % len(PALETTE)] for index, (name, _) in enumerate(values)}
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(values))
    scale = (HEIGHT - TOP - BOTTOM) / 10
    bars = tuple(
        Bar(
            LEFT + index * slot + slot * 0.15,
            HEIGHT - BOTTOM - score * scale,
            score * scale,
            colors[name],
            f"{name}: {score:.2f}",
        )
        for index, (name, score) in enumerate(values)
    )
    x_ticks = tuple(
        (LEFT + index * slot + slot / 2, name) for index, (name, _) in enumerate(values)
    )
    y_ticks = tuple((HEIGHT - BOTTOM - score * scale, str(score)) for score in range(0, 11, 2))
    return BarChart(title, bars, tuple(colors.items()), x_ticks, y_ticks, slot * 0.7)
