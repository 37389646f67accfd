"""``mx.contrib.onnx.onnx2mx._op_translations``: the names of MXNet's per-op ONNX translation
functions (``fn(attrs, inputs, proto_obj)``). gpunda's importer converts whole models with its
own converters (``gpunda.contrib.onnx._import_ops``, keyed by ONNX op type in
``_import_helper._convert_map``); each name here exists and raises saying so when called.
"""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions="""
    _cos _elu _log _prelu _selu _sin _slice _tan absolute add add_n arccos arcsin arctan
    argmax argmin avg_pooling batch_norm cast ceil clip concat conv deconv depthtospace
    divide dropout equal exponent flatten floor fully_connected gather global_avgpooling
    global_lppooling global_maxpooling greater hardmax hardsigmoid identity instance_norm
    leaky_relu lesser linalg_gemm local_response_norm log_softmax logical_and logical_not
    logical_or logical_xor lp_pooling lpnormalization matrix_multiplication max_pooling
    max_roi_pooling maximum mean minimum multiply negative pad power random_normal
    random_uniform reciprocal reduce_l1 reduce_l2 reduce_log_sum reduce_log_sum_exp
    reduce_max reduce_mean reduce_min reduce_prod reduce_sum reduce_sum_square relu reshape
    sample_multinomial shape sigmoid size softmax softplus softsign spacetodepth split
    squareroot squeeze subtract tanh topk transpose unsqueeze
""".split(), reason="gpunda's ONNX importer converts whole models (mx.contrib.onnx.import_model), "
                   "not through MXNet's per-op translation functions")
