"""One class per framework: ``setup(case)`` returns ``(step, check)``.

``step()`` runs one unit of the case; ``check`` is a NumPy value compared with
the NumPy floor's before timing (None when there is nothing to compare). A
case a framework cannot run raises ``Unavailable`` with the reason.
"""
from __future__ import annotations

import numpy as np

from . import common as C


class Unavailable(Exception):
    """This framework cannot run this case (the message says why)."""


class Framework:
    name = "?"
    device = "cpu"

    def setup(self, case):
        fn = getattr(self, case, None)
        if fn is None:
            raise Unavailable(f"{self.name} has no implementation of {case}")
        return fn()

    def sync(self):
        pass

    # W1: each framework writes _w1(case) once
    def w1_add_1(self):
        return self._w1("w1_add_1")

    def w1_add_1000(self):
        return self._w1("w1_add_1000")

    def w1_add_1000x1000(self):
        return self._w1("w1_add_1000x1000")

    def w1_exp_1(self):
        return self._w1("w1_exp_1")


# ---------------------------------------------------------------------------
class NumpyFloor(Framework):
    name = "numpy"

    def _w1(self, case):
        a, b = C.w1_inputs(case)
        if "exp" in case:
            return (lambda: np.exp(a)), np.exp(a)
        return (lambda: a + b), a + b

    def w2_chain100(self):
        x, c = C.chain_inputs()
        return (lambda: C.numpy_chain(x, c)), C.numpy_chain(x, c)

    def w3_mlp_step(self):
        x, y, ws, bs = C.mlp_inputs()
        loss = C.numpy_mlp_step(x, y, [w.copy() for w in ws], [b.copy() for b in bs])
        return (lambda: C.numpy_mlp_step(x, y, ws, bs)), np.float32(loss)

    def w4_graph50(self):
        x = C.graph50_input()
        return (lambda: C.numpy_graph50(x)), C.numpy_graph50(x)

    def _w12(self, case):
        name, hp = C.OPT_CASES[case]
        pairs = C.opt_inputs()
        ws, gs = [w for w, _ in pairs], [g for _, g in pairs]
        states, t = {}, [0]

        def step():
            t[0] += 1
            C.numpy_opt_step(name, hp, ws, gs, states, t[0])
            return ws[0]
        return step, step().copy()

    def w12_opt_adam(self):
        return self._w12("w12_opt_adam")

    def w12_opt_sgd_mom(self):
        return self._w12("w12_opt_sgd_mom")

    def w12_opt_lamb(self):
        return self._w12("w12_opt_lamb")

    def w9_imagerec(self):
        from concurrent.futures import ThreadPoolExecutor
        payloads = C.imagerec_payloads(C.imagerec_file())
        batch = C.IMAGEREC["batch"]
        pool = ThreadPoolExecutor(C.imagerec_threads())

        def step():
            return [np.stack(list(pool.map(C.numpy_imagerec_image, payloads[i:i + batch])))
                    for i in range(0, len(payloads), batch)]
        return step, step()[0]

    def w10_fit_module(self):
        x, y, ws, bs = C.fit_inputs()
        ws1, bs1 = [w.copy() for w in ws], [b.copy() for b in bs]
        C.numpy_fit_epoch(x, y, ws1, bs1)
        return (lambda: C.numpy_fit_epoch(x, y, ws, bs)), ws1[2]

    w10_fit_gluon = w10_fit_module

    def w5_csr_dot(self):
        a, d = C.csr_inputs()
        return (lambda: a @ d), a @ d

    def w5_csr_dot_t(self):
        a, d = C.csr_inputs()
        return (lambda: a.T @ d), a.T @ d


# ---------------------------------------------------------------------------
class Gpunda(Framework):
    name = "gpunda"

    def __init__(self, device="cpu"):
        import gpunda as mx
        self.mx = mx
        self.device = device
        self.ctx = mx.gpu(0) if device == "gpu" else mx.cpu(0)

    def sync(self):
        self.mx.nd.waitall()

    def _arr(self, x):
        return self.mx.nd.array(x, ctx=self.ctx, dtype=x.dtype)

    def _w1(self, case):
        nd = self.mx.nd
        a, b = (self._arr(v) for v in C.w1_inputs(case))
        if "exp" in case:
            return (lambda: nd.exp(a)), nd.exp(a).asnumpy()
        return (lambda: a + b), (a + b).asnumpy()

    def w2_chain100(self):
        mx, nd = self.mx, self.mx.nd
        x0, c0 = C.chain_inputs()
        x, c = self._arr(x0), self._arr(c0)
        x.attach_grad()

        def step():
            with mx.autograd.record():
                h = x
                for i in range(100):
                    k = i % 3
                    h = h * c if k == 0 else (h + c if k == 1 else nd.tanh(h))
            h.backward()
            return x.grad
        return step, step().asnumpy()

    def _mlp(self, hybrid):
        mx = self.mx
        try:
            gluon = self.mx.gluon
            net = gluon.nn.HybridSequential()
            with net.name_scope():
                net.add(gluon.nn.Dense(512, activation="relu"), gluon.nn.Dense(512, activation="relu"),
                        gluon.nn.Dense(10))
        except Exception as e:   # noqa: BLE001 -- report what is missing
            raise Unavailable(f"gluon not usable: {e}")
        x0, y0, ws, bs = C.mlp_inputs()
        net.initialize(ctx=self.ctx)
        net(self._arr(x0))
        for layer, w, b in zip(net, ws, bs):
            layer.weight.set_data(self._arr(w))
            layer.bias.set_data(self._arr(b))
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        x, y = self._arr(x0), self._arr(y0.astype(np.float32))

        def step():
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x0.shape[0])
            return loss
        first = step().mean().asnumpy()
        return step, first.astype(np.float32).reshape(())

    def _w12(self, case):
        # the same code drives MXNet (its Parameter/Trainer API is the same); only
        # marking the gradients fresh, as backward would, differs (_fresh)
        gluon = self.mx.gluon
        name, hp = C.OPT_CASES[case]
        params = []
        for i, (w, g) in enumerate(C.opt_inputs()):
            p = gluon.Parameter(f"w12_{i}", shape=w.shape)
            p.initialize(ctx=self.ctx)
            p.set_data(self._arr(w))
            p.grad(self.ctx)[:] = self._arr(g)
            params.append(p)
        trainer = gluon.Trainer(params, name, dict(hp), kvstore=None)
        fresh = self._fresh

        def step():
            fresh(params)
            trainer.step(1)
            return params[0].data(self.ctx)
        return step, step().asnumpy()

    def _fresh(self, params):
        from gpunda._engine.autograd import bump_version
        for p in params:
            bump_version(p._grad[0])

    def w12_opt_adam(self):
        return self._w12("w12_opt_adam")

    def w12_opt_sgd_mom(self):
        return self._w12("w12_opt_sgd_mom")

    def w12_opt_lamb(self):
        return self._w12("w12_opt_lamb")

    def w3_mlp_step(self):
        return self._mlp(False)

    def w3_mlp_step_hybrid(self):
        return self._mlp(True)

    def _graph50_block(self):
        gluon = self.mx.gluon

        class G(gluon.HybridBlock):
            def hybrid_forward(self, F, h):
                for op, s in C.GRAPH50:
                    if op == "mul":
                        h = h * s
                    elif op == "add":
                        h = h + s
                    elif op == "tanh":
                        h = F.tanh(h)
                    else:
                        h = F.sin(h)
                return h
        return G()

    def w4_graph50(self):
        x = self._arr(C.graph50_input())
        nd = self.mx.nd

        def step():
            h = x
            for op, s in C.GRAPH50:
                h = h * s if op == "mul" else h + s if op == "add" else nd.tanh(h) if op == "tanh" \
                    else nd.sin(h)
            return h
        return step, step().asnumpy()

    def w4_graph50_cached(self):
        mx = self.mx
        if not hasattr(mx, "CachedOp"):
            raise Unavailable("CachedOp not available")
        x = self._arr(C.graph50_input())
        data = mx.sym.var("data")
        h = data
        for op, s in C.GRAPH50:
            h = h * s if op == "mul" else h + s if op == "add" else mx.sym.tanh(h) if op == "tanh" \
                else mx.sym.sin(h)
        cop = mx.CachedOp(h, flags=[("static_alloc", True), ("static_shape", True)])
        step = lambda: cop(x)  # noqa: E731
        out = step()
        out = out[0] if isinstance(out, (list, tuple)) else out
        return step, out.asnumpy()

    def _csr(self, transpose):
        nd = self.mx.nd
        if not hasattr(nd, "sparse"):
            raise Unavailable("nd.sparse not available")
        a0, d0 = C.csr_inputs()
        a = nd.sparse.csr_matrix(a0, ctx=self.ctx)
        d = self._arr(d0)
        step = lambda: nd.dot(a, d, transpose_a=transpose)  # noqa: E731
        r = step()
        return step, r.asnumpy()

    def w5_csr_dot(self):
        return self._csr(False)

    def w5_csr_dot_t(self):
        return self._csr(True)

    def _cnn(self, hybrid):
        mx = self.mx
        try:
            from gpunda._tools import demo
            net = demo.build_model()
        except Exception as e:   # noqa: BLE001
            raise Unavailable(f"demo model not usable: {e}")
        from gpunda import gluon
        x0, y0 = C.cnn_inputs()
        net.initialize(mx.init.Xavier(), ctx=self.ctx)
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        return _gluon_sgd_step(mx, gluon, net, self._arr(x0), self._arr(y0.astype(np.float32)),
                               0.05, 0.9)

    def w7_cnn_step(self):
        return self._cnn(False)

    def w7_cnn_step_hybrid(self):
        return self._cnn(True)

    def _resnet(self, hybrid):
        return _gluon_resnet_step(self.mx, self.mx.gluon, self.ctx, hybrid, self._arr)

    def w11_resnet_step(self):
        return self._resnet(False)

    def w11_resnet_step_hybrid(self):
        return self._resnet(True)

    def _conv_layers(self, case):
        """W13 for gpunda and MXNet alike: nd.Convolution under autograd, backward with
        the output gradient (both gradients; a stem's data gradient is not wanted)."""
        mx = self.mx
        layers = []
        for x0, w0, g0, geo, count, need_dx in C.conv_layers(case):
            x, w, g = self._arr(x0), self._arr(w0), self._arr(g0)
            if need_dx:
                x.attach_grad()
            w.attach_grad()
            layers.append((x, w, g, geo, count))

        def step():
            for x, w, g, geo, count in layers:
                for _ in range(count):
                    with mx.autograd.record():
                        y = mx.nd.Convolution(x, w, **geo)
                    y.backward(g)
        step()
        self.sync()
        return step, None

    def w13_conv_resnet20(self):
        return self._conv_layers("w13_conv_resnet20")

    def w13_conv_resnet50(self):
        return self._conv_layers("w13_conv_resnet50")

    def w8_lstm_step(self):
        mx = self.mx
        s = C.LSTM_SIZES
        layer = mx.gluon.rnn.LSTM(s["hidden"], num_layers=s["layers"], input_size=s["inputs"])
        layer.initialize(mx.init.Uniform(0.1))
        x0, h0 = C.lstm_inputs()
        x, head = self._arr(x0), self._arr(h0)

        def step():
            with mx.autograd.record():
                y = layer(x)
            y.backward(head)
            return y
        step()
        self.sync()
        return step, None

    def w9_imagerec(self):
        """One epoch of mx.io.ImageRecordIter from reset (the same arguments in gpunda and
        MXNet). A whole epoch per call, because an iterator that decodes ahead in threads
        would otherwise do part of a block's work unmeasured, between blocks."""
        p = C.IMAGEREC
        it = self.mx.io.ImageRecordIter(
            path_imgrec=C.imagerec_file(), data_shape=p["data_shape"], batch_size=p["batch"],
            resize=p["resize"], rand_crop=False, rand_mirror=False, shuffle=False,
            mean_r=p["mean"][0], mean_g=p["mean"][1], mean_b=p["mean"][2],
            std_r=p["std"][0], std_g=p["std"][1], std_b=p["std"][2],
            preprocess_threads=C.imagerec_threads())

        def step():
            it.reset()
            out = [batch.data[0].as_in_context(self.ctx) for batch in it]
            assert len(out) * p["batch"] == p["images"], len(out)
            return out
        return step, step()[0].asnumpy()

    def w10_fit_module(self):
        """Module.fit, one more epoch per call (begin_epoch moves on, as a resumed fit)."""
        import logging
        mx = self.mx
        x0, y0, ws, bs = C.fit_inputs()
        h = mx.sym.var("data")
        for i, units in enumerate((512, 512, 10)):
            h = mx.sym.FullyConnected(h, num_hidden=units, name=f"fc{i}")
            h = mx.sym.Activation(h, act_type="relu") if i < 2 else h
        net = mx.sym.SoftmaxOutput(h, name="softmax")
        it = mx.io.NDArrayIter(x0, y0.astype(np.float32), batch_size=C.FIT["batch"])
        quiet = logging.getLogger("bench.w10")    # no per-epoch log lines in the timing
        quiet.setLevel(logging.ERROR)
        mod = mx.mod.Module(net, context=self.ctx, logger=quiet)
        params = {f"fc{i}_{k}": self._arr(v) for i, (w, b) in enumerate(zip(ws, bs))
                  for k, v in (("weight", w), ("bias", b))}
        epoch = [0]

        def step():
            mod.fit(it, eval_metric="acc", optimizer="sgd",
                    optimizer_params=(("learning_rate", C.FIT["lr"]),), arg_params=params,
                    begin_epoch=epoch[0], num_epoch=epoch[0] + 1)
            epoch[0] += 1
        step()
        first = mod.get_params()[0]["fc2_weight"].asnumpy()
        return step, first

    def w10_fit_gluon(self):
        """The W10 epoch as a Gluon user writes it, hybridized, on the same NDArrayIter."""
        mx = self.mx
        gluon = mx.gluon
        x0, y0, ws, bs = C.fit_inputs()
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(512, activation="relu", in_units=784),
                gluon.nn.Dense(512, activation="relu", in_units=512),
                gluon.nn.Dense(10, in_units=512))
        net.initialize(ctx=self.ctx)
        for layer, w, b in zip(net, ws, bs):
            layer.weight.set_data(self._arr(w))
            layer.bias.set_data(self._arr(b))
        net.hybridize(static_alloc=True, static_shape=True)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": C.FIT["lr"]})
        it = mx.io.NDArrayIter(x0, y0.astype(np.float32), batch_size=C.FIT["batch"])
        acc = mx.metric.Accuracy()

        def step():
            it.reset()
            acc.reset()
            for batch in it:
                x = batch.data[0].as_in_context(self.ctx)
                y = batch.label[0].as_in_context(self.ctx)
                with mx.autograd.record():
                    out = net(x)
                    loss = loss_fn(out, y)
                loss.backward()
                trainer.step(x.shape[0])
                acc.update([y], [out])
            return acc.get()
        step()
        return step, net[2].weight.data().asnumpy()

    def w9_box_nms(self):
        nd = self.mx.nd
        x = self._arr(C.nms_inputs())
        step = lambda: nd.contrib.box_nms(x, overlap_thresh=0.5, valid_thresh=0.01,  # noqa: E731
                                          id_index=0)
        return step, step().asnumpy()

    def w9_roi_align(self):
        nd = self.mx.nd
        data, rois = (self._arr(v) for v in C.roi_align_inputs())
        step = lambda: nd.contrib.ROIAlign(data, rois, pooled_size=(7, 7),  # noqa: E731
                                           spatial_scale=1 / 16, sample_ratio=2)
        return step, step().asnumpy()


# ---------------------------------------------------------------------------
class Torch(Framework):
    name = "torch"

    def __init__(self, device="cpu", threads=1):
        import torch
        self.torch = torch
        torch.set_num_threads(threads)
        self.device = device
        self.dev = torch.device("cuda" if device == "gpu" else "cpu")

    def sync(self):
        if self.device == "gpu":
            self.torch.cuda.synchronize()

    def _t(self, x):
        return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.dev)

    def _w1(self, case):
        a, b = (self._t(v) for v in C.w1_inputs(case))
        if "exp" in case:
            return (lambda: self.torch.exp(a)), self.torch.exp(a).cpu().numpy()
        return (lambda: a + b), (a + b).cpu().numpy()

    def w2_chain100(self):
        torch = self.torch
        x0, c0 = C.chain_inputs()
        c = self._t(c0)

        def step():
            x = self._t(x0).requires_grad_(True)
            h = x
            for i in range(100):
                k = i % 3
                h = h * c if k == 0 else (h + c if k == 1 else torch.tanh(h))
            h.backward(torch.ones_like(h))
            return x.grad
        return step, step().cpu().numpy()

    def _mlp_model(self):
        torch = self.torch
        x0, y0, ws, bs = C.mlp_inputs()
        net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                  torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(self.dev)
        with torch.no_grad():
            for lin, w, b in zip([net[0], net[2], net[4]], ws, bs):
                lin.weight.copy_(self._t(w))
                lin.bias.copy_(self._t(b))
        return net, self._t(x0), self._t(y0.astype(np.int64))

    def _mlp(self, compiled):
        net, x, y = self._mlp_model()
        step, first = _torch_sgd_step(self.torch, net, x, y, compiled, lr=0.1)
        return step, np.float32(first.item())

    def w3_mlp_step(self):
        return self._mlp(False)

    def w3_mlp_step_hybrid(self):
        return self._mlp(True)

    def w4_graph50(self):
        torch = self.torch
        x = self._t(C.graph50_input())

        def step():
            h = x
            for op, s in C.GRAPH50:
                h = h * s if op == "mul" else h + s if op == "add" else torch.tanh(h) if op == "tanh" \
                    else torch.sin(h)
            return h
        return step, step().cpu().numpy()

    def _csr(self, transpose):
        torch = self.torch
        a0, d0 = C.csr_inputs()
        a = a0.T.tocsr() if transpose else a0
        t = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                    torch.from_numpy(a.indices.astype(np.int64)),
                                    torch.from_numpy(a.data), size=a.shape).to(self.dev)
        d = self._t(d0)
        step = lambda: t @ d  # noqa: E731
        return step, step().cpu().numpy()

    def w5_csr_dot(self):
        return self._csr(False)

    def w5_csr_dot_t(self):
        # torch has no transposed CSR product: the transpose is made once, outside the timing
        return self._csr(True)

    def w7_cnn_step(self):
        torch = self.torch
        nn = torch.nn
        net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                            nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4, 10)).to(self.dev)
        x0, y0 = C.cnn_inputs()
        x, y = self._t(x0), self._t(y0.astype(np.int64))
        return _torch_sgd_step(torch, net, x, y, False, lr=0.05, momentum=0.9)[0], None

    def _resnet(self, compiled):
        torch = self.torch
        p = C.RESNET
        net = _torch_resnet20(torch.nn).to(self.dev)
        x0, y0 = C.resnet_inputs()
        x, y = self._t(x0), self._t(y0.astype(np.int64))
        return _torch_sgd_step(torch, net, x, y, compiled, lr=p["lr"],
                               momentum=p["momentum"])[0], None

    def w11_resnet_step(self):
        return self._resnet(False)

    def w11_resnet_step_hybrid(self):
        return self._resnet(True)

    def _conv_layers(self, case):
        """W13: F.conv2d with autograd, backward with the output gradient."""
        torch = self.torch
        fconv = torch.nn.functional.conv2d
        layers = []
        for x0, w0, g0, geo, count, need_dx in C.conv_layers(case):
            x, w, g = self._t(x0), self._t(w0), self._t(g0)
            x.requires_grad_(need_dx)
            w.requires_grad_(True)
            layers.append((x, w, g, geo["stride"], geo["pad"], count))

        def step():
            for x, w, g, stride, pad, count in layers:
                for _ in range(count):
                    x.grad = w.grad = None          # written, as MXNet's grad_req="write"
                    fconv(x, w, None, stride, pad).backward(g)
        step()
        return step, None

    def w13_conv_resnet20(self):
        return self._conv_layers("w13_conv_resnet20")

    def w13_conv_resnet50(self):
        return self._conv_layers("w13_conv_resnet50")

    def w8_lstm_step(self):
        torch = self.torch
        s = C.LSTM_SIZES
        lstm = torch.nn.LSTM(s["inputs"], s["hidden"], num_layers=s["layers"]).to(self.dev)
        x0, h0 = C.lstm_inputs()
        x, head = self._t(x0), self._t(h0)

        def step():
            lstm.zero_grad(set_to_none=True)
            y, _ = lstm(x)
            y.backward(head)
            return y
        step()
        return step, None


# ---------------------------------------------------------------------------
class MXNet(Framework):
    name = "mxnet"

    def __init__(self, device="cpu"):
        import mxnet as mx
        if device == "gpu":
            raise Unavailable("MXNet has no GPU build here")
        self.mx = mx

    def sync(self):
        self.mx.nd.waitall()

    def _arr(self, x):
        return self.mx.nd.array(x, dtype=x.dtype)

    def _w1(self, case):
        nd = self.mx.nd
        a, b = (self._arr(v) for v in C.w1_inputs(case))
        if "exp" in case:
            return (lambda: nd.exp(a)), nd.exp(a).asnumpy()
        return (lambda: a + b), (a + b).asnumpy()

    w2_chain100 = Gpunda.w2_chain100
    _mlp = Gpunda._mlp
    w3_mlp_step = Gpunda.w3_mlp_step
    w3_mlp_step_hybrid = Gpunda.w3_mlp_step_hybrid
    w4_graph50 = Gpunda.w4_graph50
    _graph50_block = Gpunda._graph50_block
    w8_lstm_step = Gpunda.w8_lstm_step
    _conv_layers = Gpunda._conv_layers
    w13_conv_resnet20 = Gpunda.w13_conv_resnet20
    w13_conv_resnet50 = Gpunda.w13_conv_resnet50
    w9_imagerec = Gpunda.w9_imagerec
    w9_box_nms = Gpunda.w9_box_nms
    w9_roi_align = Gpunda.w9_roi_align
    _w12 = Gpunda._w12
    w12_opt_adam = Gpunda.w12_opt_adam
    w12_opt_sgd_mom = Gpunda.w12_opt_sgd_mom
    w12_opt_lamb = Gpunda.w12_opt_lamb

    def _fresh(self, params):
        for p in params:        # MXNet's Trainer reads the weight's fresh-gradient flag
            p.list_data()[0]._fresh_grad = True

    @property
    def ctx(self):
        return self.mx.cpu()

    def w4_graph50_cached(self):
        net = self._graph50_block()
        net.hybridize(static_alloc=True, static_shape=True)
        x = self._arr(C.graph50_input())
        step = lambda: net(x)  # noqa: E731
        return step, step().asnumpy()

    def _csr(self, transpose):
        nd = self.mx.nd
        a0, d0 = C.csr_inputs()
        a = nd.sparse.csr_matrix((a0.data, a0.indices, a0.indptr), shape=a0.shape)
        d = self._arr(d0)
        step = lambda: nd.dot(a, d, transpose_a=transpose)  # noqa: E731
        r = step()
        return step, r.tostype("default").asnumpy()

    def w5_csr_dot(self):
        return self._csr(False)

    def w5_csr_dot_t(self):
        return self._csr(True)

    def _cnn(self, hybrid):
        mx = self.mx
        from mxnet import gluon
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            for ch in (16, 32):
                net.add(gluon.nn.Conv2D(ch, 3, padding=1), gluon.nn.BatchNorm(),
                        gluon.nn.Activation("relu"), gluon.nn.MaxPool2D(2))
            net.add(gluon.nn.Dense(10))
        net.initialize(mx.init.Xavier())
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        x0, y0 = C.cnn_inputs()
        return _gluon_sgd_step(mx, gluon, net, self._arr(x0), self._arr(y0.astype(np.float32)),
                               0.05, 0.9)

    def w7_cnn_step(self):
        return self._cnn(False)

    def w7_cnn_step_hybrid(self):
        return self._cnn(True)

    def w11_resnet_step(self):
        from mxnet import gluon
        return _gluon_resnet_step(self.mx, gluon, self.ctx, False, self._arr)

    def w11_resnet_step_hybrid(self):
        from mxnet import gluon
        return _gluon_resnet_step(self.mx, gluon, self.ctx, True, self._arr)


# ---------------------------------------------------------------------------
def _gluon_resnet_step(mx, gluon, ctx, hybrid, to_array):
    """W11 for gpunda and MXNet alike: the model zoo's CIFAR-style ResNet-20."""
    from importlib import import_module
    vision = import_module(gluon.__name__ + ".model_zoo.vision")
    p = C.RESNET
    net = vision.ResNetV1(vision.BasicBlockV1, list(p["layers"]), list(p["channels"]),
                          classes=p["classes"], thumbnail=True)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    x0, y0 = C.resnet_inputs()
    return _gluon_sgd_step(mx, gluon, net, to_array(x0), to_array(y0.astype(np.float32)),
                           p["lr"], p["momentum"])


def _gluon_sgd_step(mx, gluon, net, x, y, lr, momentum):
    """(step, None): one softmax-cross-entropy SGD step of Gluon ``net`` on (x, y), as a
    user writes it (record, backward, Trainer.step), run once to warm up."""
    lossf = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": lr, "momentum": momentum})

    def step():
        with mx.autograd.record():
            loss = lossf(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        return loss
    step()
    mx.nd.waitall()
    return step, None


def _torch_sgd_step(torch, net, x, y, compiled, **sgd):
    """(step, first loss): one cross-entropy SGD step of ``net`` on (x, y) as a user
    writes it (zero_grad, forward, backward, step), run once; with ``compiled`` the net
    is torch.compile-d first, and a failure to compile or to run it is Unavailable."""
    if compiled:
        try:
            net = torch.compile(net)
        except Exception as e:   # noqa: BLE001
            raise Unavailable(f"torch.compile: {e}")
    opt = torch.optim.SGD(net.parameters(), **sgd)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = lossf(net(x), y)
        loss.backward()
        opt.step()
        return loss
    if not compiled:
        return step, step()
    try:
        return step, step()
    except Exception as e:   # noqa: BLE001 -- torch.compile needs a compiler toolchain
        raise Unavailable(f"{type(e).__name__}: {str(e)[:120]}")


def _torch_resnet20(nn):
    """ResNet-20 in PyTorch with the model zoo's ResNetV1(thumbnail=True) layout and shapes:
    a bare 3x3 stem convolution (no batch norm, no ReLU), BasicBlockV1 stages, a 1x1 strided
    projection with batch norm where the width changes, global pooling, Linear(64, 10)."""
    p = C.RESNET

    def conv3x3(cin, cout, stride):
        return nn.Conv2d(cin, cout, 3, stride, 1, bias=False)

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(conv3x3(cin, cout, stride), nn.BatchNorm2d(cout),
                                      nn.ReLU(), conv3x3(cout, cout, 1), nn.BatchNorm2d(cout))
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout)) if cin != cout else None)
            self.relu = nn.ReLU()

        def forward(self, x):
            res = x if self.down is None else self.down(x)
            return self.relu(res + self.body(x))

    ch = p["channels"]
    layers = [conv3x3(3, ch[0], 1)]
    for i, n in enumerate(p["layers"]):
        cin, cout = ch[i], ch[i + 1]
        layers.append(Basic(cin, cout, 1 if i == 0 else 2))
        layers += [Basic(cout, cout, 1) for _ in range(n - 1)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(ch[-1], p["classes"])]
    return nn.Sequential(*layers)


class Chainer(Framework):
    name = "chainer"

    def __init__(self, device="cpu"):
        import chainer
        if device == "gpu":
            raise Unavailable("chainer's GPU path needs cupy in its own venv; not set up")
        self.chainer = chainer

    def _w1(self, case):
        F = self.chainer.functions
        a, b = C.w1_inputs(case)
        va, vb = self.chainer.Variable(a), self.chainer.Variable(b)
        if "exp" in case:
            return (lambda: F.exp(va)), F.exp(va).array
        return (lambda: va + vb), (va + vb).array

    def w2_chain100(self):
        ch = self.chainer
        F = ch.functions
        x0, c0 = C.chain_inputs()
        c = ch.Variable(c0)

        def step():
            x = ch.Variable(x0.copy())
            h = x
            for i in range(100):
                k = i % 3
                h = h * c if k == 0 else (h + c if k == 1 else F.tanh(h))
            h.grad = np.ones_like(h.array)
            h.backward()
            return x.grad
        return step, step()

    def w3_mlp_step(self):
        ch = self.chainer
        L, F = ch.links, ch.functions
        x0, y0, ws, bs = C.mlp_inputs()
        model = ch.Sequential(L.Linear(784, 512), F.relu, L.Linear(512, 512), F.relu, L.Linear(512, 10))
        for lin, w, b in zip([model[0], model[2], model[4]], ws, bs):
            lin.W.array[...] = w
            lin.b.array[...] = b
        opt = ch.optimizers.SGD(lr=0.1)
        opt.setup(model)
        y = y0.astype(np.int32)

        def step():
            loss = F.softmax_cross_entropy(model(x0), y)
            model.cleargrads()
            loss.backward()
            opt.update()
            return loss
        return step, np.float32(step().array)

    def w4_graph50(self):
        F = self.chainer.functions
        x = self.chainer.Variable(C.graph50_input())

        def step():
            h = x
            for op, s in C.GRAPH50:
                h = h * s if op == "mul" else h + s if op == "add" else F.tanh(h) if op == "tanh" \
                    else F.sin(h)
            return h
        return step, step().array


FRAMEWORKS = {"numpy": NumpyFloor, "gpunda": Gpunda, "torch": Torch, "mxnet": MXNet,
              "chainer": Chainer}
