"""Cost of a step and of a token from a price per chip-hour the user states (an input, never
a catalogue figure), exact.

>>> price = parse_price("2.5 USD/h")
>>> price.amount, price.currency
(5/2, 'USD')
>>> c = cost_of(price, chips=8, seconds=sp.Rational(1, 5), tokens=32768, what="training step")
>>> c.per_step, c.per_token
(1/900, 1/29491200)

cost per step = price per chip-hour x chips x step seconds / 3600; cost per token = cost per
step / tokens per step. A training step's tokens are batch x context at T_lower (the
T_upper cost beside it); a decode step's are the sequences it extends by one token each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.units import COUNT, TIME, records

_PRICE = re.compile(r"^\s*(?P<amount>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*"
                    r"(?P<currency>[A-Za-z]{1,5}|\$|€|£)\s*/\s*(?:chip[- /]?)?"
                    r"(?P<unit>h|hr|hour|min|minute|s|sec|second)\s*$")
SECONDS = {"h": 3600, "hr": 3600, "hour": 3600, "min": 60, "minute": 60, "s": 1, "sec": 1,
           "second": 1}


@dataclass(frozen=True)
class Price:
    """A price per chip-hour, exact, in the currency it was stated in."""

    amount: Expr
    currency: str
    stated: str

    @property
    def per_chip_second(self) -> Expr:
        return self.amount / 3600


def parse_price(text: str, where: str = "price") -> Price:
    """``"2.5 USD/h"``, ``"2.5 USD/chip-hour"``, ``"0.05 EUR/min"`` -> a price per chip-hour.

    >>> parse_price("3 EUR/min").amount
    180
    """
    m = _PRICE.match(text)
    if m is None:
        raise InputError(f"expected a price per chip and time such as '2.5 USD/h', got "
                         f"{text!r}", where)
    amount = sp.Rational(Fraction(m["amount"])) * 3600 / SECONDS[m["unit"]]
    if amount <= 0:
        raise InputError(f"a price must be positive, got {text!r}", where)
    return Price(amount, m["currency"], text.strip())


@dataclass(frozen=True)
class Cost:
    """What one step costs on ``chips`` chips at ``price`` (exact, in the price's currency)."""

    price: Price
    chips: Expr
    seconds: Expr
    tokens: Expr
    what: str
    upper_seconds: Expr | None = None

    @property
    def per_step(self) -> Expr:
        return self.price.per_chip_second * self.chips * self.seconds

    @property
    def per_token(self) -> Expr:
        return self.per_step / self.tokens

    @property
    def per_step_upper(self) -> Expr | None:
        if self.upper_seconds is None:
            return None
        return self.price.per_chip_second * self.chips * self.upper_seconds

    @property
    def per_million_tokens(self) -> Expr:
        return self.per_token * 10**6


@records(per_step=COUNT, per_token=COUNT, per_million_tokens=COUNT,
         per_step_upper=COUNT, through={"seconds": TIME, "upper_seconds": TIME})
def cost_of(price: Price, *, chips: Expr | int, seconds: Expr, tokens: Expr | int, what: str,
            upper_seconds: Expr | None = None) -> Cost:
    """The cost of one ``what`` taking ``seconds`` on ``chips`` chips for ``tokens`` tokens."""
    n, t, k = (sp.sympify(x) for x in (chips, seconds, tokens))
    if not (n.is_positive and t.is_positive and k.is_positive):
        raise InputError(f"a {what} must take positive time on chips for tokens to be "
                         f"priced (chips {n}, seconds {t}, tokens {k})", "price")
    return Cost(price, n, t, k, what, None if upper_seconds is None
                else sp.sympify(upper_seconds))
