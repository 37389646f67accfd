"""Graphs the fusion figures, tests and NVRTC check use: a BERT-base-shaped encoder written with Gluon
layers (GluonNLP's BERTEncoder layout: post-LayerNorm cells, GELU feed-forward, dropout
on attention weights and on each sub-layer's output) and an unrolled LSTM language model
cell (the word-language-model example's LSTM, which hybridizes to element-wise gate
arithmetic around two GEMMs per step)."""
from __future__ import annotations

from gpunda import gluon
from gpunda.gluon import nn, rnn


class SelfAttention(gluon.HybridBlock):
    """Multi-head scaled dot-product self-attention (GluonNLP's DotProductSelfAttention)."""

    def __init__(self, units, heads, dropout, **kw):
        super().__init__(**kw)
        self._units, self._heads = units, heads
        with self.name_scope():
            self.qkv = nn.Dense(3 * units, flatten=False, use_bias=True)
            self.proj = nn.Dense(units, flatten=False)
            self.drop = nn.Dropout(dropout)

    def hybrid_forward(self, F, x):
        h, d = self._heads, self._units // self._heads
        qkv = self.qkv(x)                                       # (B, T, 3U)
        qkv = F.reshape(qkv, shape=(0, 0, 3, h, d))             # (B, T, 3, H, D)
        qkv = F.transpose(qkv, axes=(2, 0, 3, 1, 4))            # (3, B, H, T, D)
        q, k, v = F.split(qkv, num_outputs=3, axis=0, squeeze_axis=True)
        q = F.reshape(q, shape=(-3, 0, 0))                      # (B*H, T, D)
        k = F.reshape(k, shape=(-3, 0, 0))
        v = F.reshape(v, shape=(-3, 0, 0))
        att = F.batch_dot(q, k, transpose_b=True) * (1.0 / d ** 0.5)
        att = self.drop(F.softmax(att, axis=-1))
        out = F.batch_dot(att, v)                               # (B*H, T, D)
        out = F.reshape(out, shape=(-4, -1, h, 0, 0))           # (B, H, T, D)
        out = F.transpose(out, axes=(0, 2, 1, 3))
        return self.proj(F.reshape(out, shape=(0, 0, -3)))


class EncoderCell(gluon.HybridBlock):
    """One post-norm transformer layer: attention, dropout, residual, LayerNorm, GELU
    feed-forward, dropout, residual, LayerNorm."""

    def __init__(self, units, hidden, heads, dropout, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.att = SelfAttention(units, heads, dropout)
            self.ln1 = nn.LayerNorm()
            self.ffn1 = nn.Dense(hidden, flatten=False)
            self.ffn2 = nn.Dense(units, flatten=False)
            self.ln2 = nn.LayerNorm()
            self.drop = nn.Dropout(dropout)

    def hybrid_forward(self, F, x):
        x = self.ln1(x + self.drop(self.att(x)))
        h = F.LeakyReLU(self.ffn1(x), act_type="gelu")
        return self.ln2(x + self.drop(self.ffn2(h)))


class BertEncoder(gluon.HybridBlock):
    """Embeddings (word + position + token type, LayerNorm, dropout), ``layers`` encoder
    cells and the tanh pooler: BERT-base with layers=12, units=768, hidden=3072, heads=12."""

    def __init__(self, vocab=30522, layers=12, units=768, hidden=3072, heads=12, max_len=512,
                 dropout=0.1, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.word = nn.Embedding(vocab, units)
            self.pos = nn.Embedding(max_len, units)
            self.seg = nn.Embedding(2, units)
            self.ln = nn.LayerNorm()
            self.drop = nn.Dropout(dropout)
            self.cells = nn.HybridSequential()
            for _ in range(layers):
                self.cells.add(EncoderCell(units, hidden, heads, dropout))
            self.pooler = nn.Dense(units, activation="tanh", flatten=False)

    def hybrid_forward(self, F, tokens, segments, positions):
        x = self.word(tokens) + self.seg(segments) + self.pos(positions)
        x = self.cells(self.drop(self.ln(x)))
        return self.pooler(F.slice_axis(x, axis=1, begin=0, end=1))


class LSTMLM(gluon.HybridBlock):
    """An embedding, an ``LSTMCell`` unrolled over ``steps`` time steps and a decoder:
    the word-language-model example with its cell written out."""

    def __init__(self, vocab=10000, units=650, steps=35, dropout=0.5, **kw):
        super().__init__(**kw)
        self._steps = steps
        with self.name_scope():
            self.emb = nn.Embedding(vocab, units)
            self.cell = rnn.LSTMCell(units, input_size=units)
            self.drop = nn.Dropout(dropout)
            self.dec = nn.Dense(vocab, flatten=False)

    def hybrid_forward(self, F, tokens):
        x = self.drop(self.emb(tokens))
        out, _ = self.cell.unroll(self._steps, x, layout="NTC", merge_outputs=True)
        return self.dec(self.drop(out))


def symbol_of(block, *names):
    """The Symbol of ``block`` on variables ``names``."""
    from gpunda.symbol import var
    return block(*[var(n) for n in names])


def _graphs():
    """(name, symbol, shapes, dtypes) of the graphs whose fused kernels CI compiles: a
    model-zoo CNN, the BERT-shaped encoder and the unrolled LSTM, small but with every
    layer kind (a kernel's code depends on the shapes only through baked-in sizes)."""
    from gpunda.gluon.model_zoo import vision
    graphs = []
    for dt in ("float32", "float16"):
        graphs.append((f"resnet18_v1/{dt}", symbol_of(vision.resnet18_v1(classes=10), "data"),
                       {"data": (2, 3, 32, 32)}, {"data": dt}))
    tok = {n: "int32" for n in ("tokens", "segments", "positions")}
    graphs.append(("bert_encoder", symbol_of(BertEncoder(vocab=50, layers=2, units=16, hidden=32,
                                                         heads=2, max_len=8),
                                             "tokens", "segments", "positions"),
                   {n: (2, 8) for n in tok}, tok))
    graphs.append(("lstm_lm", symbol_of(LSTMLM(vocab=30, units=8, steps=5), "tokens"),
                   {"tokens": (2, 5)}, {"tokens": "int32"}))
    graphs.append(("wide_rows", symbol_of(WideRows(), "x"), {"x": (2, 3, 300)}, {}))
    return graphs


class WideRows(gluon.HybridBlock):
    """Dense -> GELU and Dense -> residual add -> LayerNorm over rows wider than a block
    (NOTE [Column sums]: a thread sums several columns of the bias and LayerNorm
    gradients)."""

    def __init__(self, units=300, hidden=600, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.ffn1 = nn.Dense(hidden, flatten=False, in_units=units)
            self.ffn2 = nn.Dense(units, flatten=False, in_units=hidden)
            self.norm = nn.LayerNorm(in_channels=units)

    def hybrid_forward(self, F, x):
        h = F.LeakyReLU(self.ffn1(x), act_type="gelu")
        return self.norm(self.ffn2(h) + x) * 2


def cuda_sources():
    """The fusion pass's kernels for the graphs above, in training and inference mode,
    forward and backward, each distinct source once (a provider of the NVRTC check,
    gpunda/_core/cuda_sources.py)."""
    from gpunda._core.cuda_sources import CudaSource
    from gpunda._engine import fusion
    seen = set()
    for gname, s, shapes, dtypes in _graphs():
        for train in (False, True):
            for kname, code in fusion.sources_for(s, shapes, dtypes, train=train):
                if code not in seen:
                    seen.add(code)
                    yield CudaSource(f"{gname}/{'train' if train else 'predict'}/{kname}", code)
