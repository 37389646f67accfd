"""MXNet's TVM operator loader (``mxnet.tvmop``); empty in MXNet builds without TVM, as here.
"""
