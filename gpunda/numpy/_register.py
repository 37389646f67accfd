"""MXNet's ``mx.np._register``: where MXNet generates mx.np's operator functions from
its C++ registry at import. gpunda builds them from its op registry instead; nothing here."""
