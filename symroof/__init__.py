"""symroof: exact symbolic rooflines for ML systems.

>>> from symroof import einsum, chip, roofline
>>> rl = roofline(einsum("B D, D F -> B F", "bf16"), chip("tpu-v5e", hbm="B1"))
>>> rl.ridge
9850/41

The public face is re-exported lazily, so ``import symroof`` does not import SymPy.
"""

from __future__ import annotations

from .core.lazy import lazy_names

__version__ = "0.1.0"

_EXPORTS = {
    "SymroofError": "core.errors",
    "InputError": "core.errors",
    "DerivationError": "core.errors",
    "parse_expr": "core.parse",
    "parse_relation": "core.parse",
    "parse_quantity": "core.units",
    "BANDWIDTH": "core.units",
    "CAPACITY": "core.units",
    "COMPUTE": "core.units",
    "FLOPS": "core.units",
    "TIME": "core.units",
    "symbol": "core.parse",
    "Step": "core.steps",
    "sizes": "core.sizes",
    "dtype_bytes": "core.sizes",
    "DTYPES": "core.sizes",
    "Chip": "hardware.catalog",
    "Catalog": "hardware.catalog",
    "chip": "hardware.catalog",
    "load_catalog": "hardware.catalog",
    "Op": "engine.ops",
    "op": "engine.ops",
    "einsum": "engine.ops",
    "backward": "engine.ops",
    "backward_specs": "engine.ops",
    "elementwise": "engine.ops",
    "sequence": "engine.ops",
    "fuse": "engine.ops",
    "Regime": "engine.asymptotics",
    "parse_regime": "engine.asymptotics",
    "expansion": "engine.asymptotics",
    "leading": "engine.asymptotics",
    "theta": "engine.asymptotics",
    "combine_powers": "engine.algebra",
    "Roofline": "engine.rooflines",
    "roofline": "engine.rooflines",
    "Threshold": "engine.thresholds",
    "threshold": "engine.thresholds",
    "between": "engine.thresholds",
    "roots": "engine.equations",
    "positive_root": "engine.equations",
    "supremum": "engine.extrema",
    "matrix_derivative": "engine.calculus",
    "polynomial_through": "engine.fits",
    "Link": "hardware.links",
    "Choices": "core.choices",
    "BOOK": "core.choices",
    "Mesh": "parallel.mesh",
    "mesh": "parallel.mesh",
    "ShardedArray": "parallel.sharding",
    "sharded": "parallel.sharding",
    "Collective": "parallel.collectives",
    "collective": "parallel.collectives",
    "all_gather": "parallel.collectives",
    "reduce_scatter": "parallel.collectives",
    "all_reduce": "parallel.collectives",
    "all_to_all": "parallel.collectives",
    "permute": "parallel.collectives",
    "sharded_matmul": "parallel.matmul",
    "weight_stationary": "parallel.stationary",
    "Expansion": "engine.asymptotics",
    "Figure": "hardware.catalog",
    "LAMBDA": "engine.optimize",
    "Optimum": "engine.optimize",
    "lagrange": "engine.optimize",
    "ConstantSet": "topics.scaling_laws",
    "constant_set": "topics.scaling_laws",
    # the topic models of the bundled texts
    **{name: "topics.attention" for name in (
        "ALGORITHM_1", "absorb", "block_sizes", "dominance_condition",
        "reduction", "score_bytes", "standard_attention", "tiled_attention")},
    **{name: "topics.online_softmax" for name in (
        "Recurrence", "online_softmax", "online_softmax_recurrence", "softmax_shift_residual")},
    **{name: "topics.adcost" for name in ("TEXT_KINDS", "recipe_bounds", "reverse_cost")},
    **{name: "topics.adcost_checks" for name in ("gradient", "random_expression")},
    # the claims of a derivation (also in symroof.claims)
    **{name: "claims.model" for name in ("Derivation", "DerivationBuilder", "Erratum",
                                         "Source", "Law")},
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
