"""The verbs as requests: frozen dataclasses whose fields are parameters, each run by one
function into a library result.

>>> from symroof.commands.derive import DeriveRequest, derive
>>> derive(DeriveRequest(flops="2*B*D*F", bytes="2*D*F", solve="B")).threshold.integer
244

The command line turns its flags into a request (``derive``, ``collective``, ``model``,
``optimize``, ``plan``; ``reality`` puts published runs to ``plan``'s request) and prints
the result; errors raised here name the request's fields
(``where="comm_bytes"``), and ``cli/`` writes them as flags.
"""
