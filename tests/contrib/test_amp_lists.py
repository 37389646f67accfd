"""mx.contrib.amp.lists: MXNet 1.9.1's AMP op lists, and every op they name is a known op."""

import gpunda as mx


def test_fp16_lists_match_mxnet():
    fp16 = mx.contrib.amp.lists.symbol_fp16
    # recorded from MXNet 1.9.1 (CPU build)
    assert fp16.FP16_FUNCS == ['Convolution', 'Deconvolution', 'FullyConnected', 'RNN']
    assert fp16.CONDITIONAL_FP32_FUNCS == [('Activation', 'act_type', ['softrelu']),
                                           ('LeakyReLU', 'act_type', ['elu', 'selu'])]
    assert (len(fp16.FP16_FP32_FUNCS), len(fp16.FP32_FUNCS), len(fp16.WIDEST_TYPE_CASTS)) == \
        (318, 136, 113)
    assert fp16.LOSS_OUTPUT_FUNCTIONS == ['SoftmaxOutput', 'LinearRegressionOutput',
                                          'LogisticRegressionOutput', 'MAERegressionOutput']


def test_bf16_lists_match_mxnet():
    bf16 = mx.contrib.amp.lists.symbol_bf16
    assert bf16.BF16_FUNCS == ['Convolution', 'FullyConnected']
    assert bf16.BF16_USE_FP32_PARAMS['BatchNorm'] == ['', 'gamma', 'beta', 'moving_mean',
                                                      'moving_var']
    assert (len(bf16.BF16_FP32_FUNCS), len(bf16.FP32_FUNCS), len(bf16.WIDEST_TYPE_CASTS)) == \
        (15, 438, 109)
