"""The ``_np_*``/``_npi_*``/``_npx_*`` ops behind ``mx.np`` and ``mx.npx`` (MXNet's src/operator/numpy)."""
