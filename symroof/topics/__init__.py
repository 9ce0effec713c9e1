"""Topic code of the appendices, beside the transformer models: attention's IO, the online
softmax, the cost of reverse-mode differentiation, and scaling laws' constant sets.

>>> from symroof.topics.scaling_laws import constant_set
>>> constant_set("hoffmann2022").name
'hoffmann2022'
"""
