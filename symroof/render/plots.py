"""Figures of a derivation, as data, and their two renderings: SVG (matplotlib) and
pgfplots (LaTeX).

>>> from symroof import chip, einsum, roofline
>>> roof_label(roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1")))
'mxu bf16 197 TFLOP/s / hbm 8.2e11 B/s, rev. B1'

The roofline figure is drawn from the chip's exact peak and ridge; threshold curves sample
the engine's attainable-FLOP/s expression. Nothing here derives: it lays out what the
derivation holds.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp

from ..claims.model import Derivation
from ..core.parse import exact, symbol
from ..core.printer import approx, tex_escape
from ..engine.rooflines import Roofline

SAMPLES = 64
DASHES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P")
PGF_DASHES = ("solid", "dashed", "dashdotted", "densely dotted")
PGF_MARKS = ("*", "square*", "triangle*", "diamond*", "pentagon*", "otimes*")


@dataclass(frozen=True)
class Series:
    """One line (or set of points) of a figure; ``style`` picks its dash and marker, so
    lines that lie on top of each other stay apart."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    points: bool = False
    style: int = 0
    dash: int = -1  # a dash of its own (-1: the style's)


@dataclass(frozen=True)
class FigureData:
    """One log-log figure: its file stem, axes, series and marked x values."""

    name: str
    kind: str
    caption_args: Mapping[str, str]
    xlabel: str
    series: tuple[Series, ...]
    marks: tuple[tuple[float, str], ...] = ()
    ylabel: str = ""
    title: str = ""


def roof_label(rl: Roofline) -> str:
    """A roof's legend, from the roofline itself: compute unit, dtype and peak; memory or
    link and its bandwidth; the catalogue revision when it is not the default one."""
    chip = rl.chip
    unit, dtype = rl.compute or rl.op.compute, rl.dtype or rl.op.dtype
    peak_fig = chip.figures.get(f"{unit}.{dtype}")
    bw_fig = chip.figures.get(rl.primary)
    peak = peak_fig.text if peak_fig else approx(rl.peak, 3)
    bw = bw_fig.text if bw_fig else approx(rl.bandwidths[rl.primary], 3)
    rev = [f.label for f in (peak_fig, bw_fig) if f is not None and f.label != "default"]
    tail = f", rev. {'/'.join(rev)}" if rev else ""
    return f"{unit} {dtype} {peak} / {rl.primary} {bw}{tail}"


def figures(d: Derivation) -> list[FigureData]:
    """The roofline of every chip configuration the derivation uses, then its curves."""
    out: list[FigureData] = []
    by_chip: dict[str, dict[tuple[str, float, float], list[tuple[str, float]]]] = {}
    titles: dict[str, str] = {}
    for rl in d.rooflines:
        if not (rl.peak.is_number and rl.ridge.is_number):
            continue
        roofs = by_chip.setdefault(rl.chip.name, {})
        titles[rl.chip.name] = rl.chip.title or rl.chip.name
        ops = roofs.setdefault((roof_label(rl), float(rl.peak),
                                float(rl.bandwidths[rl.primary])), [])
        if rl.intensity.is_number:
            ops.append((rl.op.name, float(rl.intensity)))
    for chip_name, roofs in sorted(by_chip.items()):
        series: list[Series] = []
        marks = []
        ridges = [peak / bw for _, peak, bw in roofs]
        lo, hi = min(ridges) / 1000, max(ridges) * 1000
        for k, ((label, peak, bw), ops) in enumerate(sorted(roofs.items())):
            ridge = peak / bw
            series.append(Series(f"{label} (ridge {ridge:.4g})", (lo, ridge, hi),
                                 (lo * bw, peak, peak), style=k))
            marks.append((ridge, "ridge"))
            series += [Series(name, (i,), (min(peak, i * bw),), points=True, style=k)
                       for name, i in sorted(set(ops))[:6]]
        out.append(FigureData(f"{d.id}-roofline-{chip_name}", "roofline",
                              {"chip": chip_name,
                               "ridge": ", ".join(f"{r:.4g}" for r in sorted(set(ridges)))},
                              "intensity", tuple(series), tuple(sorted(set(marks))),
                              title=f"{titles[chip_name]}: roofline"))
    for n, curve in enumerate(d.curves, 1):
        rl, s = curve.roofline, symbol(curve.symbol)
        peak, bw = float(rl.peak), float(rl.bandwidths[rl.primary])
        lo, hi = curve.span
        xs = tuple(lo * (hi / lo) ** (k / (SAMPLES - 1)) for k in range(SAMPLES))
        lines: list[Series] = []
        for fixed in curve.fixed:
            values = {symbol(k): exact(v) for k, v in fixed.items()}
            f = sp.lambdify(s, rl.intensity.subs(values), "math")
            ys = tuple(min(peak, float(f(x)) * bw) for x in xs)
            label = ", ".join(f"{k}={v}" for k, v in fixed.items())
            lines.append(Series(label, xs, ys, style=len(lines)))
        out.append(FigureData(f"{d.id}-curve-{n}", "curve",
                              {"title": curve.title, "symbol": curve.symbol}, curve.symbol,
                              tuple(lines), title=f"{curve.title} ({rl.chip.name}, "
                              f"{rl.compute or rl.op.compute} {rl.dtype or rl.op.dtype} / "
                              f"{rl.primary})"))
    return out


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def svg(fig: FigureData, xlabel: str, ylabel: str) -> str:
    """The figure as a deterministic SVG (fixed hash salt, no dates, text kept as text)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    with matplotlib.rc_context({"svg.hashsalt": "symroof", "svg.fonttype": "none",
                                "font.size": 9, "figure.figsize": (6.0, 3.8)}):
        figure, ax = plt.subplots()
        for s in fig.series:
            color = f"C{s.style % 10}"
            if s.points:
                ax.plot(s.xs, s.ys, MARKERS[s.style % len(MARKERS)], label=s.label,
                        markersize=5, color=color, markerfacecolor="white")
            else:
                dash = s.dash if s.dash >= 0 else s.style
                ax.plot(s.xs, s.ys, linestyle=DASHES[dash % len(DASHES)], label=s.label,
                        linewidth=1.6 + 0.6 * (s.style == 0), color=color)
        for x, label in fig.marks:
            ax.axvline(x, linestyle=":", color="grey", linewidth=1)
            ax.annotate(f"{label} {x:.4g}", (x, ax.get_ylim()[0]), textcoords="offset points",
                        xytext=(3, 4), fontsize=8, color="grey")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
        # a roofline's upper left is empty; elsewhere the lower right is
        ax.legend(fontsize=7, loc="upper left" if fig.kind == "step" else "lower right")
        if fig.title:
            ax.set_title(fig.title, fontsize=9)
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": "symroof"})
        plt.close(figure)
    return buffer.getvalue()


def pgfplots(fig: FigureData, xlabel: str, ylabel: str, caption: str) -> str:
    """The figure as a pgfplots log-log axis inside a figure environment."""
    lines = [r"\begin{figure}[H]", r"\centering", r"\begin{tikzpicture}",
             r"\begin{loglogaxis}[width=0.85\linewidth, height=6cm, xlabel={" + xlabel +
             r"}, ylabel={" + ylabel + r"}, title={" + tex_escape(fig.title) + r"}, "
             r"title style={font=\small}, legend cell align=left, "
             r"legend style={font=\scriptsize, at={(0.5,-0.3)}, anchor=north}, "
             r"grid=major]"]
    for s in fig.series:
        coords = " ".join(f"({_num(x)},{_num(y)})" for x, y in zip(s.xs, s.ys, strict=True))
        dash = s.dash if s.dash >= 0 else s.style
        style = (f"only marks, mark={PGF_MARKS[s.style % len(PGF_MARKS)]}" if s.points
                 else f"thick, no marks, {PGF_DASHES[dash % len(PGF_DASHES)]}")
        lines.append(rf"\addplot+[{style}] coordinates {{{coords}}};")
        lines.append(r"\addlegendentry{" + tex_escape(s.label) + "}")
    for x, _ in fig.marks:
        lines.append(rf"\draw[dotted, gray] ({{axis cs:{_num(x)},1}}|-{{rel axis cs:0,0}}) -- "
                     rf"({{axis cs:{_num(x)},1}}|-{{rel axis cs:0,1}});")
    lines += [r"\end{loglogaxis}", r"\end{tikzpicture}", r"\caption{" + caption + "}",
              r"\end{figure}"]
    return "\n".join(lines)


def _num(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return "0"
    return f"{x:.6e}"

