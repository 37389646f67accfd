"""MXNet's Cython FFI (``mxnet._ffi._cy3``); gpunda has none.
"""
