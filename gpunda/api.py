"""MXNet's ``mxnet.api``: the namespace its C++ library fills with packed functions;
empty here (gpunda has no C++ library).
"""
