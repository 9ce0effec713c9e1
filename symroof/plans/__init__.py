"""Training and serving plans: strategies on a mesh, step time, memory and critical batches.

>>> from symroof.models import model
>>> from symroof.parallel.mesh import mesh
>>> from symroof.plans.strategy import parse_strategy
>>> from symroof.plans.training import train
>>> p = train(model("llama-2-7b"), mesh("X=16,Y=16", "tpu-v5e"), parse_strategy("fsdp=X,tp=Y"),
...           batch=256, context=4096)
>>> p.bound
'tp over Y (ici)'

``strategy`` parses ``"fsdp=X,tp=Y"``; ``options`` holds ``StepOptions``, how a step runs
(dtypes, kernel, choices, overlap, efficiency, recompute, microbatching, interleave,
offload, in-network reduction), the one value ``train``, ``serve`` and ``device_step``
take; ``device_step`` is the one step a device runs (a
serving plan's prefill and decode, ``chunked``'s prefill chunks, ``model --decode``'s step,
and a training stage's forward bytes); ``training`` and ``serving`` build plans from it and
the parallel vocabulary's collectives; ``zero`` and ``pipeline`` hold
ZeRO's model states and the 1F1B schedule; ``search`` picks the fastest plan over every
factorisation of a chip count; ``mfu`` is PaLM's model FLOPs utilisation. ``conventions``
holds a framework's choices of the one training model (Megatron-LM's, as data in
``frameworks/``), ``published`` the runs of papers with their figures, ``calibration``
named fractions of peak and the conventions they were fitted under (``commands.reality``
compares the two through ``plan --train``); ``result`` is what a plan request gives.
``offload`` is the host-memory tier of a training plan, ``cost`` the price of a step and a
token, ``speculative`` speculative decoding's expected tokens per step and speedup.
"""
