"""The charts' colours: up to twelve series, no two alike (an admin's spend chart showed
two agents in nearly the same orange)."""

import itertools
from datetime import UTC, datetime

from adminui.records.charts import stacked_bars


def lab(color: str) -> tuple[float, float, float]:
    """An sRGB ``#rrggbb`` colour in CIELAB (D65)."""

    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(int(color[index : index + 2], 16) / 255) for index in (1, 3, 5))
    x = (0.4124 * red + 0.3576 * green + 0.1805 * blue) / 0.95047
    y = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    z = (0.0193 * red + 0.1192 * green + 0.9505 * blue) / 1.08883

    def f(value: float) -> float:
        return value ** (1 / 3) if value > 0.008856 else 7.787 * value + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def difference(first: str, second: str) -> float:
    """ΔE*76: about 2.3 is just noticeable; under 10, two series read as one at a glance."""
    return sum((a - b) ** 2 for a, b in zip(lab(first), lab(second), strict=True)) ** 0.5


def test_twelve_series_of_the_spend_chart_have_colours_far_apart() -> None:
    day = datetime(2026, 11, 28, tzinfo=UTC)
    chart = stacked_bars("Spend", [(day, f"agent-{index:02}", 0.01) for index in range(12)])

    colours = [colour for _, colour in chart.legend]
    assert len(colours) == 12
    closest = min(difference(a, b) for a, b in itertools.combinations(colours, 2))
    assert closest >= 20
