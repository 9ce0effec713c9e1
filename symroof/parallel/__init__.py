"""Meshes, sharded arrays and collectives: the multi-chip vocabulary.

A mesh names logical axes and maps them onto a chip's topology (``chips.toml``):

>>> from symroof.parallel import mesh, sharded, all_gather, collective
>>> m = mesh("X=16,Y=4", "tpu-v5e")
>>> m.axis("X").wraps, m.axis("Y").wraps, m.axis("X").link.one_way
(True, False, 45000000000)
>>> node = mesh({"node": 2, "gpu": 8}, "h100-sxm")     # a dict works too
>>> [(a.kind, a.link.name, a.bandwidth) for a in node.axes.values()]
[('scale-out', 'ib', 50000000000), ('switch', 'nvlink', 450000000000)]

A sharded array is written as the books write it; it knows its shapes and bytes:

>>> a = sharded("bf16[B_X, D_Y]", m)
>>> a.device_shape, a.device_bytes, a.replication
((B/16, D/4), B*D/32, 1)

A collective is an op with a bandwidth term and a latency term, both exact:

>>> ag = all_gather(a, "X", m)
>>> ag.result.text, ag.bytes_per_device, ag.bandwidth_time, ag.latency_time
('bf16[B, D_Y]', 15*B*D/32, B*D/192000000000, 1/125000)
>>> ag.latency_bound_below                  # bytes gathered per device, V
768000

Plans cost raw byte counts: gradients of P bf16 parameters all-reduced over X:

>>> g = collective("allreduce", "2*P", "X", m)
>>> g.bytes_per_device, g.time
(15*P/4, P/24000000000 + 1/62500)

The API:

- ``mesh(spec, chip, topology=None)`` -> ``Mesh``; ``Mesh.axis(name)`` -> ``Axis`` with
  ``size`` (an integer or a symbol), ``kind`` (torus, ring, switch, scale-out), ``link``
  (a ``symroof.hardware.links.Link``), ``wraps``, ``bidirectional``, ``bandwidth`` (one-way
  bytes/s per chip), ``latency`` (seconds per hop, or the symbol ``alpha_<link>``).
  ``Mesh.with_axis(name, wraps=True)`` changes one axis.
- ``sharded(spec, mesh)`` -> ``ShardedArray`` with ``global_shape``, ``device_shape``,
  ``global_bytes``, ``device_bytes``, ``replication``.
- ``all_gather``, ``reduce_scatter``, ``all_reduce``, ``all_to_all`` (array, axes, mesh)
  and ``permute`` (array, axis, mesh); ``collective(kind, nbytes, axes, mesh)`` for a raw
  byte count. Each returns a frozen ``Collective`` with ``bytes_per_device``,
  ``bytes_per_link``, ``bandwidth_time``, ``latency_time``, ``time``,
  ``latency_bound_below``, ``result``, ``op``, ``terms()``, ``roofline()`` and
  ``threshold(symbol)``.
- ``totals(mesh)`` (chips, hosts, aggregate FLOP/s, HBM and its bandwidth), ``flops_time``
  (F FLOPs on n chips at an MFU), ``global_batch`` (a per-chip batch times the chips, times
  E/k for a mixture of experts), ``send`` (point to point) and ``gather_to_one``.
- ``Collective.under(choices)``: the same collective under a text's modelling choices
  (``symroof.core.choices``: the leading term in the axis size, no latency, ...).
- ``sharded_matmul(lhs, rhs, mesh)`` -> ``ShardedMatmul``: the collectives it needs, the
  result's sharding, per-device FLOPs, bytes and comms, and its roofline over named terms.
- ``mlp_step(mesh, fsdp=AXES, tp=AXES, choices=...)`` -> ``MlpStep``: one MLP layer's
  training step with the batch and weights over the FSDP axes (M of them gather at once)
  and F over the tensor-parallel ones: per phase its FLOPs, compute time, comm time per
  kind and per link; ``critical_batch()`` the batch (and per chip) above which it is
  compute-bound.
- ``together(*collectives, choices=...)`` -> ``Together``: collectives issued together,
  one after the other or (``concurrent=shared``) at once, their bytes adding on a link they
  share.
- ``weight_stationary(mesh, f=AXES, d=AXES, choices=...)`` -> ``WeightStationary``: an
  MLP's inference forward with the weights at rest, 1-D (F over ``f``) or 2-D (D over
  ``d`` too): its collectives, per-chip FLOPs and communication (``comm_time``), roofline,
  ``best_split(chips)`` and ``chips_to_beat(one_d)``.
- Rooflines: ``roofline(op, chip, bandwidths=..., extra={"latency": t}, serial=(...))``
  has ``terms`` (``compute``, each memory level and link, the extras); terms overlap
  unless named in ``serial``. ``symroof.engine.thresholds.between(rl, "math", "ici", "D")``
  solves any two terms for a size, or says there is no closed form.

>>> from symroof.engine.thresholds import between
>>> from symroof.parallel import sharded_matmul
>>> mm = sharded_matmul("bf16[B, D_X]", "bf16[D_X, F]", mesh("X=16", "tpu-v5e"))
>>> [c.kind for c in mm.collectives], between(mm.roofline(), "math", "ici", "D").inequality
(['allreduce'], D > 197000/3)
"""

from ..core.lazy import lazy
from .mesh import mesh as mesh  # the function, not its module (see symroof.core.lazy)

# each submodule and the public names it defines
__all__, __getattr__, __dir__ = lazy(__name__, {
    "collectives": ("Collective Stage all_gather all_reduce all_to_all collective permute "
                    "reduce_scatter"),
    "matmul": "ShardedMatmul sharded_matmul",
    "mesh": "Axis Mesh mesh",
    "sharding": "Dim ShardedArray per_chip sharded",
    "aggregates": ("Totals Transfer flops_time gather_to_one global_batch pipeline_sends send "
                   "totals"),
    "mlp": "MlpStep mlp_step",
    "stationary": "Split WeightStationary weight_stationary",
    "concurrent": "Together together",
})
