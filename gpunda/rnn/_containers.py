"""Cells made of cells: stacks, bidirectional pairs and modifiers (dropout, zoneout,
residual) for the legacy symbolic RNN API."""
from gpunda import symbol
from gpunda.base import GpundaError
from gpunda.rnn._cells import BaseRNNCell, _normalize_sequence


def _cells_state_info(cells):
    """The ``state_info`` of ``cells``, one list in order."""
    return [info for cell in cells for info in cell.state_info]


def _cells_state_shape(cells):
    """The ``state_shape`` of ``cells``, one list in order."""
    return [shape for cell in cells for shape in cell.state_shape]


def _cells_begin_state(cells, **kwargs):
    """Each cell's ``begin_state(**kwargs)``, one list in order."""
    return [state for cell in cells for state in cell.begin_state(**kwargs)]


def _cells_unpack_weights(cells, args):
    """``args`` passed through every cell's ``unpack_weights`` in turn."""
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args):
    """``args`` passed through every cell's ``pack_weights`` in turn."""
    for cell in cells:
        args = cell.pack_weights(args)
    return args


def _require_unmodified(cell):
    if cell._modified:
        raise GpundaError("After applying modifier cells (e.g. DropoutCell) the base cell "
                          "cannot be called directly. Call the modifier cell instead.")


class _CellGroup(BaseRNNCell):
    """Shared parts of cells that hold a list ``_cells``."""

    def _share_params(self, cell):
        if self._override_cell_params:
            if not cell._own_params:
                raise GpundaError("Either specify params for the container cell or for "
                                  "its children, not both.")
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):
        _require_unmodified(self)
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args):
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        return _cells_pack_weights(self._cells, args)


class SequentialRNNCell(_CellGroup):
    """Cells applied one after another, each one's output the next one's input."""

    def __init__(self, params=None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Append ``cell`` to the stack."""
        self._cells.append(cell)
        self._share_params(cell)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, pos = [], 0
        for cell in self._cells:
            n = len(cell.state_info)
            inputs, state = cell(inputs, states[pos:pos + n])
            pos += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        next_states, pos, last = [], 0, len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, states = cell.unroll(length, inputs=inputs,
                                         begin_state=begin_state[pos:pos + n], layout=layout,
                                         merge_outputs=None if i < last else merge_outputs)
            pos += n
            next_states.extend(states)
        return inputs, next_states


class BidirectionalCell(_CellGroup):
    """Runs ``l_cell`` forward and ``r_cell`` backward in time and concatenates their
    outputs along the feature axis; only ``unroll`` works."""

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        super().__init__(prefix="", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        self._cells = [l_cell, r_cell]
        for cell in self._cells:
            self._share_params(cell)

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        begin_state = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n_left = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs,
                                            begin_state=begin_state[:n_left], layout=layout,
                                            merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=begin_state[n_left:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = (isinstance(l_outputs, symbol.Symbol)
                             and isinstance(r_outputs, symbol.Symbol))
            l_outputs, _ = _normalize_sequence(length, l_outputs, layout, merge_outputs)
            r_outputs, _ = _normalize_sequence(length, r_outputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.Concat(l_outputs, symbol.reverse(r_outputs, axis=axis), dim=2,
                                    name=f"{self._output_prefix}out")
        else:
            outputs = [symbol.Concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed(r_outputs)))]
        # MXNet nests the two directions' states: [l_states, r_states]
        return outputs, [l_states, r_states]


class ModifierCell(BaseRNNCell):
    """Wraps ``base_cell`` to change its behaviour; the base cell then may only be used
    through the modifier."""

    def __init__(self, base_cell):
        base_cell._modified = True
        super().__init__()
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, func=symbol.zeros, **kwargs):
        _require_unmodified(self)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def reset(self):
        super().reset()
        if hasattr(self, "base_cell"):
            self.base_cell.reset()


class DropoutCell(BaseRNNCell):
    """Dropout with probability ``dropout`` on the inputs; no state."""

    def __init__(self, dropout, prefix="dropout_", params=None):
        super().__init__(prefix, params)
        if not isinstance(dropout, (int, float)):
            raise GpundaError(f"DropoutCell: dropout must be a number, got {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ZoneoutCell(ModifierCell):
    """Zoneout: each output and state unit keeps its previous value with probability
    ``zoneout_outputs`` / ``zoneout_states`` during training."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        from gpunda.rnn._fused import FusedRNNCell
        if isinstance(base_cell, FusedRNNCell):
            raise GpundaError("FusedRNNCell doesn't support zoneout. Please unfuse first.")
        if isinstance(base_cell, BidirectionalCell):
            raise GpundaError("BidirectionalCell doesn't support zoneout since it doesn't "
                              "support step. Please add ZoneoutCell to the cells underneath "
                              "instead.")
        if isinstance(base_cell, SequentialRNNCell) and any(
                isinstance(c, BidirectionalCell) for c in base_cell._cells):
            raise GpundaError("Bidirectional SequentialRNNCell doesn't support zoneout. "
                              "Please add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # 1 where the new value is kept, scaled by Dropout's 1/(1-p)
            return symbol.Dropout(symbol.ones_like(like), p=p)

        # MXNet starts from zeros((0, 0)) left to shape inference; zeros_like needs none
        prev_output = self.prev_output if self.prev_output is not None \
            else symbol.zeros_like(next_output)
        output = (symbol.where(keep_new(self.zoneout_outputs, next_output), next_output,
                               prev_output)
                  if self.zoneout_outputs != 0. else next_output)
        if self.zoneout_states != 0.:
            next_states = [symbol.where(keep_new(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the cell's input to its output (a residual connection)."""

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return symbol.elemwise_add(outputs, inputs,
                                       name=f"{outputs.name}_plus_residual"), states
        return [symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                for o, i in zip(outputs, inputs)], states
