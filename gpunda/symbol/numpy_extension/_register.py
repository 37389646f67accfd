"""MXNet's ``mx.sym.npx._register``: generated from its C++ registry in MXNet; nothing here."""
