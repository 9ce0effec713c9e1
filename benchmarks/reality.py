"""Published training runs against symroof: Korthikanti et al. 2022 (arXiv 2205.05198),
Table 5's iteration times and Figure 1's memory per GPU, each with symroof's bound at peak,
its prediction under the ``megatron-a100`` calibration and the relative error.

    python3 benchmarks/reality.py            # the table, the calibration, the means
    python3 benchmarks/reality.py --json     # {"rows": [...], "calibration": ..., "means": ...}
    python3 benchmarks/reality.py --svg benchmarks/reality.svg   # predicted against published

Calculon (calculon-ai/calculon, calculon/llm/validation.py) on the same rows: times 3.65%
mean |error| (8.87% worst), memory 8.49% (parameters + optimizer) and 2.08% (activations).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

PAPER, CALIBRATION = "korthikanti2022", "megatron-a100"
CALCULON = {"time": 0.0365, "parameters + optimizer": 0.0849, "activations": 0.0208}


def _rows() -> tuple[list[Any], Any]:
    from symroof.commands.reality import compare
    from symroof.plans.calibration import calibration
    return compare(PAPER, CALIBRATION), calibration(CALIBRATION)


def _means(rows: list[Any]) -> dict[str, float]:
    from symroof.commands.reality import mean_abs_error
    out = {"time": float(mean_abs_error(rows, "time")),
           "memory": float(mean_abs_error(rows, "memory"))}
    errors = [abs(float(r.error)) for r in rows if r.kind == "time" and not r.calibrated]
    out["time_worst"] = max(errors)
    return out


def _seconds_or_gib(value: float, unit: str) -> str:
    return f"{value:.2f} s" if unit == "s" else f"{value / 2**30:.2f} GiB"


def _text(rows: list[Any], cal: Any) -> str:
    lines = [f"{'figure':<68} {'published':>11} {'predicted':>11} {'T_lower':>9} "
             f"{'T_upper':>9} {'error':>7}"]
    for r in rows:
        pub, pred = float(r.published), float(r.predicted)
        lo, up = ("", "") if r.bound is None else (
            _seconds_or_gib(float(r.bound[0]), "s"), _seconds_or_gib(float(r.bound[1]), "s"))
        mark = " (calibrated)" if r.calibrated else ""
        lines.append(f"{r.source:<68} {_seconds_or_gib(pub, r.unit):>11} "
                     f"{_seconds_or_gib(pred, r.unit):>11} {lo:>9} {up:>9} "
                     f"{100 * float(r.error):>+6.2f}%{mark}")
    m = _means(rows)
    worst = max((r for r in rows if r.kind == "time" and not r.calibrated),
                key=lambda r: abs(float(r.error)))
    share = float(worst.terms[worst.binding] / sum(worst.terms.values()))
    lines += ["", f"time: mean |error| {100 * m['time']:.2f}% over the rows not calibrated "
              f"(worst {100 * m['time_worst']:.2f}%); Calculon {100 * CALCULON['time']:.2f}%",
              f"worst row: {worst.source} ({100 * float(worst.error):+.2f}%), its step bound "
              f"by {worst.binding} ({100 * share:.0f}% of its terms' time)" + (
                  f", whose fraction of peak was fitted on {cal.fitted.run} ({cal.fitted.mode})"
                  if cal.fitted is not None and cal.fitted.resource == worst.binding else ""),
              f"memory: mean |error| {100 * m['memory']:.2f}%; Calculon "
              f"{100 * CALCULON['parameters + optimizer']:.2f}% (parameters + optimizer), "
              f"{100 * CALCULON['activations']:.2f}% (activations)",
              *_search_text(_searches()), "",
              f"calibration {cal.name} ({cal.title}):"]
    lines += [f"  {line}" for line in cal.describe()]
    return "\n".join(lines)


def _searches() -> list[dict[str, Any]]:
    """For each model: ``symroof plan --train --search`` over the paper's GPUs and global
    batch under the same calibration (its conventions in every candidate), the paper's own
    configuration (sequence parallel + selective recomputation) given beside it, both timed
    by their predicted step (what the search ranks by)."""
    from symroof.commands.plan import PlanRequest
    from symroof.plans.published import published
    paper = published(PAPER)
    out = []
    for name in paper.runs:
        given = paper.run(name, "sequence+selective")
        result = PlanRequest(**{**given.options(), "recompute": "any"}, search=given.gpus,
                             efficiency=CALIBRATION).run()
        assert result.search is not None and result.given is not None
        chosen, best = result.search.plan, result.search.best
        out.append({"model": name, "gpus": given.gpus,
                    "paper_time": float(result.given.predicted or result.given.t_lower),
                    "searched_time": float(chosen.predicted or chosen.t_lower),
                    "tried": result.search.searched, "memory": float(chosen.memory["total"]),
                    "chosen": {"mesh": chosen.mesh, "strategy": chosen.strategy,
                               "microbatches": int(chosen.extra["microbatches"]),
                               "chunks": best.chunks,
                               "recompute": str(chosen.extra["recompute"])},
                    "command": given.command(CALIBRATION).replace(
                        " --recompute selective", " --recompute any") + f" --search {given.gpus}"})
    return out


def _search_text(found: list[dict[str, Any]]) -> list[str]:
    lines = ["", "plan --train --search over the paper's cluster (same GPUs, global batch and "
             "calibration and its conventions; microbatches and interleaving swept, the "
             "paper's among them; predicted):"]
    for f in found:
        c = f["chosen"]
        lines.append(f"  {f['model']}: {c['mesh']} {c['strategy']}, {c['microbatches']} "
                     f"microbatches, {c['chunks']} chunks per stage, recompute "
                     f"{c['recompute']}: {f['searched_time']:.2f} s "
                     f"against the paper's configuration {f['paper_time']:.2f} s "
                     f"({f['tried']} tried; {f['memory'] / 1e9:.1f} GB)")
    return lines


def _svg(rows: list[Any], path: str) -> None:
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "symroof"
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, kind, unit, scale in ((axes[0], "time", "s", 1.0),
                                  (axes[1], "memory", "GiB", 2.0**30)):
        chosen = [r for r in rows if r.kind == kind]
        pub = [float(r.published) / scale for r in chosen]
        pred = [float(r.predicted) / scale for r in chosen]
        ax.loglog(pub, pred, "o", color="tab:blue", label="predicted")
        cal = [(p, q) for p, q, r in zip(pub, pred, chosen, strict=True) if r.calibrated]
        if cal:
            ax.loglog(*zip(*cal, strict=True), "s", color="tab:red", label="calibrated on")
        if kind == "time":
            low = [float(r.bound[0]) / scale for r in chosen]
            ax.loglog(pub, low, "v", color="tab:gray", label="T_lower at peak")
        lo, hi = min(pub) / 1.5, max(pub) * 1.5
        ax.loglog([lo, hi], [lo, hi], "-", color="black", linewidth=0.8)
        ax.set_xlabel(f"published, {unit}")
        ax.set_ylabel(f"symroof, {unit}")
        ax.set_title("Table 5: iteration time" if kind == "time" else
                     "Figure 1: memory per GPU")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--svg", metavar="PATH", help="write a plot of predicted against "
                        "published")
    args = parser.parse_args(argv)
    rows, cal = _rows()
    if args.json:
        print(json.dumps({"rows": [r.to_json() for r in rows], "means": _means(rows),
                          "search": _searches(),
                          "calculon": CALCULON,
                          "calibration": {"name": cal.name, "title": cal.title,
                                          "fractions": {k: str(v) for k, v in
                                                        cal.fractions.items()},
                                          "fractions_value": {k: float(v) for k, v in
                                                              cal.fractions.items()},
                                          "sources": cal.sources}}, indent=1))
    else:
        print(_text(rows, cal))
    if args.svg:
        _svg(rows, args.svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
