"""Ops that run code above the op layer: foreach/while_loop/cond run a subgraph, Custom runs
user Python. The engine and front ends register the runners at import (docs/architecture.md)."""
