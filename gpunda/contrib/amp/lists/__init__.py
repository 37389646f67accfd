"""``mx.contrib.amp.lists``: the op lists of automatic mixed precision (float16, bfloat16)."""
from gpunda.contrib.amp.lists import symbol_bf16, symbol_fp16  # noqa: F401
