"""A test chapter in a book's style: an AllGather's time as V/W, a time over the one-way
link figure, an 8 GiB array printed as "8 GB" and an approximate time."""

from symroof import mesh
from symroof.claims import Chapter
from symroof.parallel import all_gather, sharded


def claims(ch: Chapter) -> None:
    m = mesh("X=16", "tpu-v5e")
    ag = all_gather("bf16[4096_X, 8192]", "X", m)
    ch.add(t_book=ch.with_choices(ag), t_one_way=ch.with_choices(ag),
           t_declared=ch.with_choices(ag, collectives="leading", latency="off"),
           t_approx=ag.time, t_exact=ag.time,
           array=sharded("fp32[65536, 32768]", m).device_bytes)
