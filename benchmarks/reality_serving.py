"""Published serving measurements against symroof: TensorRT-LLM's A100 (FP16) and H100 (FP8
W8A8) tables, each row's bound at peak (the catalogue's link latencies counted), its
forecast under the ``trtllm-a100`` or ``trtllm-h100`` serving calibration (one fraction
fitted on one row each) and the error.

    python3 benchmarks/reality_serving.py           # the table, the calibration, the mean
    python3 benchmarks/reality_serving.py --json    # {"rows", "calibrations", "means"}

A time's bound is at most its measurement, a rate's at least (``bound_holds``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

CALIBRATIONS = ("trtllm-a100", "trtllm-h100")


def _report() -> dict[str, Any]:
    from symroof.plans.serving_reality import compare, mean_abs_error, serving_calibration
    rows, cals, means = [], {}, {}
    for name in CALIBRATIONS:
        found = compare(name)
        rows += [r.to_json() | {"calibration": name} for r in found]
        cal = serving_calibration(name)
        cals[name] = {"title": cal.title, "chip": cal.chip, "published": cal.published,
                      "fractions": {k: str(v) for k, v in cal.fractions.items()},
                      "fractions_value": {k: float(v) for k, v in cal.fractions.items()},
                      "sources": cal.sources, "fitted": cal.fitted, "row": cal.row,
                      "why": cal.why,
                      "overlap": cal.overlap, "overlap_why": cal.overlap_why,
                      "calls": {k: [{"protocol": c.protocol, "per_call": float(c.per_call),
                                     "per_hop": float(c.per_hop),
                                     "bandwidth": None if c.bandwidth is None
                                     else float(c.bandwidth), "source": c.source}
                                    for c in cs] for k, cs in cal.calls.items()}}
        means[name] = mean_abs_error(found)
    return {"rows": rows, "calibrations": cals, "means": means}


def _unit(what: str, value: float) -> str:
    return f"{value * 1e3:.1f} ms" if what == "time to first token" else f"{value:.0f} tok/s"


def _text(report: dict[str, Any]) -> str:
    lines = [f"{'row':<86} {'published':>11} {'predicted':>11} {'bound':>11} {'error':>8}"]
    for r in report["rows"]:
        mark = " (calibrated)" if r["calibrated"] else ""
        lines.append(f"{r['source']:<86} {_unit(r['what'], r['published']):>11} "
                     f"{_unit(r['what'], r['predicted']):>11} {_unit(r['what'], r['bound']):>11} "
                     f"{100 * r['error']:>+7.2f}%{mark}")
    for name, cal in report["calibrations"].items():
        lines += ["", f"{name}: mean |error| {100 * report['means'][name]:.2f}% over the rows "
                  f"not calibrated; every bound on its side of the measurement: "
                  f"{all(r['bound_holds'] for r in report['rows'] if r['calibration'] == name)}",
                  f"calibration {name} ({cal['title']}):"]
        lines += [f"  {k} at {v} of peak ({cal['sources'][k]})"
                  for k, v in cal["fractions"].items()]
        lines += [f"  {k} collectives under {c['protocol']}: {1e6 * c['per_call']:.1f} us a "
                  f"call and {1e6 * c['per_hop']:.1f} us a hop"
                  + ("" if c["bandwidth"] is None else f" at {c['bandwidth'] / 1e9:.1f} GB/s")
                  + f" ({c['source']})" for k, cs in cal["calls"].items() for c in cs]
        if cal["overlap"] == "none":
            lines.append(f"  forecast: each op's compute and memory traffic one after another "
                         f"({cal['overlap_why']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    report = _report()
    print(json.dumps(report, indent=2) if args.json else _text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
