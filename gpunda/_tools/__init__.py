"""The tools layer: the ``mxnet`` alias, ``python -m gpunda run/inspect/im2rec/demo``."""
