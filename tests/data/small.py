"""A small derivation for the golden write-up tests: a bf16 matmul on TPU v5e."""

from __future__ import annotations

from symroof import chip, einsum
from symroof.claims.model import Derivation, Erratum, Source


def build() -> Derivation:
    src = Source("A small book", chapter="1", section="Matmul", seed="demo", language="en")
    d = Derivation.begin("small", "A bf16 matmul on TPU v5e", src)
    d.assume("HBM at 8.2e11 B/s (catalogue label B1); 50% of readers skip this & that_1 #2.")
    rl = d.roofline(einsum("B D, D F -> B F", "bf16", name="matmul"), chip("tpu-v5e", hbm="B1"))
    t = d.threshold(rl, "B", regime="B<<D,F")
    x = d.expansion(rl.intensity, "B<<D,F", title="intensity")
    d.claim("intensity", kind="expr", stated="B*D*F/(B*D + D*F + B*F)",
            statement="The matmul's intensity.", quote="BDF / (BD + DF + BF)",
            derive=lambda: rl.intensity)
    d.claim("leading", kind="expr", stated="B", statement="For B << D, F it is about B.",
            quote="roughly B", derive=lambda: x.leading)
    d.claim("threshold", kind="relation", stated="B > 240",
            statement="Compute-bound when B > 240.", quote="B > 240",
            derive=lambda: t.symbol > t.asymptotic)
    d.claim("ridge_typo", stated="204", statement="The ridge, misprinted.",
            quote="about 204 FLOPs/byte \\input{x} $y_{ma x}$ $\\input{z}$",
            derive=lambda: rl.ridge,
            erratum=Erratum("digits swapped", right="240"))
    d.note("A dollar $y$ is text here, \\input{x} too.")
    return d.build()
