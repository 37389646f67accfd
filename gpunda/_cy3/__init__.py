"""MXNet's Cython bindings for Python 3 (``mxnet._cy3``); gpunda has none (pure Python).
"""
