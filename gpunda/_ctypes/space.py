"""MXNet's ctypes view of TVM operator config spaces; stubs."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_set_tvm_op_config', 'c_config_space', 'c_config_spaces', 'c_other_option_entity', 'c_other_option_space'),
             classes=('CConfigSpace', 'CConfigSpaces', 'COtherOptionEntity', 'COtherOptionSpace'),
             reason='it needs MXNet built with TVM operators (USE_TVM_OP), which gpunda is not')
