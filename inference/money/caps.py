"""The caps on a user's usage a request carries: the token caps a client declares in
``metadata`` and the operator's ``budgets:`` in tokens and in USD, each over a rolling
window (docs/api.md, "Token budgets"; docs/cost-and-keys.md)."""

from dataclasses import dataclass

from agents.schema import BudgetsConfig

# The metadata keys of the caps a client may declare, and their rolling windows.
WINDOWS: dict[str, tuple[str, int]] = {
    "tokens_per_hour": ("hour", 3600),
    "tokens_per_day": ("day", 86400),
    "tokens_per_month": ("month", 30 * 86400),
}


@dataclass(frozen=True)
class TokenCap:
    window: str  # "hour", "day" or "month"
    seconds: int
    cap: int  # tokens, or micro-USD for a USD cap
    usd: bool = False  # a cap on cost rather than tokens
    param: str = ""  # what set it, for the refusal (default: the metadata key)

    @property
    def source(self) -> str:
        unit = "usd" if self.usd else "tokens"
        return self.param or f"metadata.{unit}_per_{self.window}"

    def amount(self, tokens: int, micro_usd: int) -> int:
        return micro_usd if self.usd else tokens

    def shown(self, value: int) -> str:
        """A tokens figure as a number, a USD one as dollars."""
        return f"${value / 1e6:.6f}" if self.usd else str(value)

    def used(self, value: int) -> str:
        return f"{self.shown(value)} {'spent' if self.usd else 'tokens used'}"


def operator_caps(budgets: BudgetsConfig, user_id: str) -> tuple[TokenCap, ...]:
    """The caps ``budgets:`` sets for the user: their entry's keys, the rest from
    ``default``."""
    own = budgets.users.get(user_id)
    if own is None and not budgets.default.model_fields_set:
        return ()
    caps = []
    for unit in ("tokens", "usd"):
        for window, seconds in (("hour", 3600), ("day", 86400), ("month", 30 * 86400)):
            key = f"{unit}_per_{window}"
            if own is not None and key in own.model_fields_set:
                value, param = getattr(own, key), f"budgets.users.{user_id}.{key}"
            else:
                value, param = getattr(budgets.default, key), f"budgets.default.{key}"
            if value is None:
                continue
            cap = round(value * 1_000_000) if unit == "usd" else int(value)
            caps.append(TokenCap(window, seconds, cap, usd=unit == "usd", param=param))
    return tuple(caps)
