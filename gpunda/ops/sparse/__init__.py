"""Ops on csr and row_sparse storage."""
