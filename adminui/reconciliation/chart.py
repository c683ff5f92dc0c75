"""A chart per provider of spend reconciliation: for each day, what the provider billed
beside what the gateway computed (USD), drawn like the spend chart (SVG from
``templates/adminui/_bar_chart.html``, no JavaScript)."""

from collections import defaultdict
from datetime import date

from adminui.records.charts import (
    BOTTOM,
    HEIGHT,
    PALETTE,
    RIGHT,
    TOP,
    WIDTH,
    Bar,
    BarChart,
    left_margin,
)
from inference.reconciliation.records import DriftRow

SERIES = (("billed", PALETTE[0]), ("computed", PALETTE[1]))


def provider_charts(rows: list[DriftRow]) -> dict[str, BarChart]:
    """Each provider's chart, by provider name."""
    totals: dict[str, dict[date, dict[str, float]]] = defaultdict(
        lambda: defaultdict(lambda: {"billed": 0.0, "computed": 0.0})
    )
    for row in rows:
        day = totals[row.provider][row.day]
        day["billed"] += row.billed_usd
        day["computed"] += row.computed_usd
    return {
        provider: paired_bars(f"{provider}: billed and computed per day (USD)", days)
        for provider, days in sorted(totals.items())
    }


def paired_bars(title: str, days: dict[date, dict[str, float]]) -> BarChart:
    """Two bars a day, side by side: billed, then computed."""
    ordered = sorted(days)
    top = max((max(values.values()) for values in days.values()), default=0.0) or 1.0
    scale = (HEIGHT - TOP - BOTTOM) / top
    y_ticks = tuple(
        (HEIGHT - BOTTOM - fraction * top * scale, f"${fraction * top:.2g}")
        for fraction in (0, 0.5, 1)
    )
    left = left_margin(label for _, label in y_ticks)
    slot = (WIDTH - left - RIGHT) / max(1, len(ordered))
    width = slot * 0.35
    bars = []
    for index, day in enumerate(ordered):
        for position, (series, color) in enumerate(SERIES):
            value = days[day][series]
            x = left + index * slot + slot * 0.15 + position * width
            tip = f"{series} · {day:%d %b}: ${value:.4f}"
            bars.append(Bar(x, HEIGHT - BOTTOM - value * scale, value * scale, color, tip))
    step = max(1, len(ordered) // 6)
    x_ticks = tuple(
        (left + index * slot + slot / 2, f"{day:%d %b}")
        for index, day in enumerate(ordered)
        if index % step == 0
    )
    return BarChart(title, tuple(bars), SERIES, x_ticks, y_ticks, width, left=left)
