"""Requests arriving at a rate (``plan --serve --rate R``): the utilisation against the
plan's requests/s, the M/D/1 (Pollaczek-Khinchine) mean wait below 1, none at or above 1."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.core.errors import InputError
from symroof.models import model
from symroof.parallel.mesh import mesh
from symroof.plans.queueing import parse_rate, queue
from symroof.plans.serving import serve
from tests.conftest import examples, run_cli

PLAN = ["plan", "llama-3-70b", "--serve", "--mesh", "X=8", "--chip", "h100-sxm", "--batch",
        "16", "--context", "4096"]


def _pk(lam: Fraction, mu: Fraction) -> Fraction:
    # M/D/1: W_q = lambda E[S^2] / (2 (1 - rho)) with S = 1/mu deterministic (Kleinrock,
    # Queueing Systems I, ch. 5: the Pollaczek-Khinchine mean-value formula)
    rho = lam / mu
    return lam * (1 / mu) ** 2 / (2 * (1 - rho))


@settings(max_examples=examples(30), deadline=None)
@given(lam=st.fractions(min_value=Fraction(1, 1000), max_value=100),
       mu=st.fractions(min_value=Fraction(1, 1000), max_value=100))
def test_the_wait_is_pollaczek_khinchine_below_one_and_none_from_one(
        lam: Fraction, mu: Fraction) -> None:
    requests = {"requests_per_s": sp.Rational(mu.numerator, mu.denominator),
                "time_to_first_token": sp.Rational(1, 3), "request_latency": sp.Integer(2)}
    q = queue(requests, sp.Rational(lam.numerator, lam.denominator))
    assert q.utilisation == sp.Rational((lam / mu).numerator, (lam / mu).denominator)
    if lam < mu:
        w = _pk(lam, mu)
        assert q.wait == sp.Rational(w.numerator, w.denominator)
        assert q.time_to_first_token == sp.Rational(1, 3) + q.wait
        assert q.request_latency == 2 + q.wait
    else:
        assert not q.stable and q.wait is None and q.request_latency is None


def test_the_queue_takes_the_plans_requests_per_second() -> None:
    s = serve(model("llama-3-70b"), mesh("X=8", "h100-sxm"), batch=16, context=4096)
    assert s.requests is not None
    q = queue(s.requests, "3")
    assert q.capacity == s.requests["requests_per_s"]
    assert q.utilisation == 3 / s.requests["requests_per_s"]
    assert q.wait == q.utilisation / (2 * q.capacity * (1 - q.utilisation))


def test_plan_serve_rate_prints_the_utilisation_and_the_wait() -> None:
    done = run_cli(*PLAN, "--rate", "3")
    assert done.returncode == 0, done.stderr
    s = serve(model("llama-3-70b"), mesh("X=8", "h100-sxm"), batch=16, context=4096)
    assert s.requests is not None
    q = queue(s.requests, "3")
    from symroof.core.printer import approx, si
    assert "requests arriving at 3 per second:" in done.stdout
    assert f"utilisation                  {approx(q.utilisation)}" in done.stdout
    assert f"mean wait in the queue       {si(q.wait, 's')}" in done.stdout
    assert "M/D/1 (Pollaczek-Khinchine" in done.stdout
    data = json.loads(run_cli(*PLAN, "--rate", "3", "--json").stdout)["queue"]
    assert data["stable"] is True
    assert sp.Rational(data["queue"]["wait"]) == q.wait


def test_a_rate_the_mesh_cannot_serve_says_so() -> None:
    done = run_cli(*PLAN, "--rate", "40")
    assert done.returncode == 0, done.stderr
    assert ">= 1: the queue grows without bound; the mesh serves at most 4.04 requests/s" \
        in done.stdout
    assert "mean wait in the queue  " not in done.stdout


@pytest.mark.parametrize(("text", "message"), [
    ("abc", "rate: expected requests per second such as 12 or 5/2, got 'abc'"),
    ("0", "rate: an arrival rate is positive (requests per second), got '0'"),
    ("-2", "rate: an arrival rate is positive (requests per second), got '-2'"),
    ("1e400", "rate: an arrival rate past a float's range, got '1e400'"),
])
def test_bad_rates_name_the_rate(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        parse_rate(text)
    assert str(e.value) == message
