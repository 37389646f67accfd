"""MXNet's Cython sources (``mxnet.cython``); gpunda has none (pure Python).
"""
