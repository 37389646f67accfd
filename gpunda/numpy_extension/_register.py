"""MXNet's ``mx.npx._register``: where MXNet generates mx.npx's operator functions from
its C++ registry at import. gpunda builds them from its op registry instead; nothing here."""
