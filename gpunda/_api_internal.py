"""MXNet's ``mxnet._api_internal``: filled by its C++ library with packed functions;
empty here (gpunda has no C++ library).
"""
