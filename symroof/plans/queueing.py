"""Requests arriving at a rate: the serving plan's utilisation and an M/D/1 forecast of the
time a request waits before its batch starts.

>>> import sympy as sp
>>> q = queue({"requests_per_s": sp.Integer(10), "time_to_first_token": sp.Rational(1, 2),
...            "request_latency": sp.Integer(3)}, "5")
>>> q.utilisation, q.wait, q.time_to_first_token, q.request_latency
(1/2, 1/20, 11/20, 61/20)

The mesh is taken as one server that serves its ``requests_per_s`` (``serving.per_request``:
a batch of sequences, pp batches in flight, one after another) at a deterministic time per
request, 1/mu, and the requests arrive as a Poisson stream of rate lambda. The mean wait in
the queue is then the Pollaczek-Khinchine formula for a deterministic service (Kleinrock,
Queueing Systems I, 1975, ch. 5, the M/G/1 queue; M/D/1): W_q = rho / (2 mu (1 - rho)),
rho = lambda / mu. A request's time to first token and its latency are W_q more than the
plan's. At rho >= 1 the queue grows without bound: no wait is forecast and the plan says
how many requests per second the mesh serves at most. The time a request waits for its
batch to fill, and any batching of requests that arrive together, are not modelled
(stated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy import Expr

from ..core.errors import InputError
from ..core.parse import exact_number
from ..core.units import COUNT, PER_SECOND, TIME, records

SOURCE = ("M/D/1 (Pollaczek-Khinchine, deterministic service; Kleinrock, Queueing Systems "
          "I, 1975, ch. 5)")


@dataclass(frozen=True)
class Queue:
    """Arrivals at ``rate`` requests/s against a mesh serving ``capacity`` requests/s: the
    utilisation and, below 1, the mean queueing wait and what a request then sees."""

    rate: Expr
    capacity: Expr
    utilisation: Expr
    wait: Expr | None
    time_to_first_token: Expr | None
    request_latency: Expr | None

    @property
    def stable(self) -> bool:
        return self.wait is not None

    def assumptions(self) -> tuple[str, ...]:
        return (f"requests arrive as a Poisson stream; the mesh is one server of "
                f"deterministic time per request 1/mu (mu: its requests/s); the mean wait "
                f"in the queue is {SOURCE}: rho / (2 mu (1 - rho)); the wait for a batch to "
                f"fill is not modelled",)

    def to_json(self) -> dict[str, Any]:
        from ..core.vocabulary import exact_map
        return {"source": SOURCE, "stable": self.stable, **exact_map("queue", {
            k: v for k, v in (("arrival_rate", self.rate), ("capacity", self.capacity),
                              ("utilisation", self.utilisation), ("wait", self.wait),
                              ("time_to_first_token", self.time_to_first_token),
                              ("request_latency", self.request_latency)) if v is not None})}


def parse_rate(text: str, where: str = "rate") -> Expr:
    """A request arrival rate in requests per second: a positive decimal or fraction.

    >>> parse_rate("2.5"), parse_rate("5/2")
    (5/2, 5/2)
    >>> parse_rate("0")
    Traceback (most recent call last):
    ...
    symroof.core.errors.InputError: rate: an arrival rate is positive (requests per second), got '0'
    """
    try:
        value = exact_number(text, where)
    except InputError:
        raise InputError(f"expected requests per second such as 12 or 5/2, got {text!r}",
                         where) from None
    if not value > 0:
        raise InputError(f"an arrival rate is positive (requests per second), got {text!r}",
                         where)
    if not math.isfinite(float(value)):
        raise InputError(f"an arrival rate past a float's range, got {text!r}", where)
    return value


@records(rate=PER_SECOND, capacity=PER_SECOND, utilisation=COUNT, wait=TIME,
         time_to_first_token=TIME, request_latency=TIME, through={"requests": None})
def queue(requests: Mapping[str, Expr], rate: Expr | str) -> Queue:
    """The M/D/1 forecast of requests arriving at ``rate`` per second for a plan's
    ``requests`` figures (``serving.per_request``)."""
    lam = parse_rate(rate) if isinstance(rate, str) else sp.sympify(rate)
    mu = requests["requests_per_s"]
    rho = lam / mu
    if not rho < 1:
        return Queue(lam, mu, rho, None, None, None)
    wait = rho / (2 * mu * (1 - rho))
    return Queue(lam, mu, rho, wait, requests["time_to_first_token"] + wait,
                 requests["request_latency"] + wait)
