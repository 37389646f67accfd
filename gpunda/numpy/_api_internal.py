"""MXNet's ``mx.nd.numpy._api_internal``: packed functions of its C++ library; empty here
(gpunda has no C++ library)."""
