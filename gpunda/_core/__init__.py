"""Base-layer machinery (imports nothing of gpunda above gpunda.base): the C-API stand-in's
types and handle table, deferred op errors, nested-list encoding, the not-built module stubs."""
