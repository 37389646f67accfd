"""The contrib detection ops against values real MXNet 1.9.1 returned for the fixed
inputs below (printed by MXNet, stored as literals); the NumPy references are in
test_detection.py."""
import numpy as np

import gpunda as mx
from gpunda import autograd as ag

nd = mx.nd

# fmt: off
NMS_DATA = np.array([[[1.  , 0.3 , 0.32, 0.25, 0.98, 0.59],
      [1.  , 0.15, 0.41, 0.12, 0.82, 0.93],
      [0.  , 0.09, 0.53, 0.02, 0.94, 0.45],
      [0.  , 0.19, 0.4 , 0.25, 0.42, 0.5 ],
      [1.  , 0.35, 0.34, 0.08, 0.93, 0.46],
      [1.  , 0.4 , 0.12, 0.48, 0.65, 0.97]]], dtype=np.float32)
NMS_OUT = np.array([[[ 1.        ,  0.4       ,  0.385     ,  0.725     ,  0.53      ,  0.49000004],
      [ 1.        ,  0.35      ,  0.635     ,  0.27      ,  0.59000003,  0.38      ],
      [ 0.        ,  0.19      ,  0.41      ,  0.375     ,  0.01999998,  0.25      ],
      [-1.        , -1.        , -1.        , -1.        , -1.        , -1.        ],
      [-1.        , -1.        , -1.        , -1.        , -1.        , -1.        ],
      [-1.        , -1.        , -1.        , -1.        , -1.        , -1.        ]]], dtype=np.float32)
NMS_GRAD = np.array([[[0. , 0. , 0. , 0. , 0. , 0. ],
      [0. , 0. , 0. , 0. , 0. , 0. ],
      [0. , 0. , 0. , 0. , 0. , 0. ],
      [1.2, 1.3, 1.4, 1.5, 1.6, 1.7],
      [0.6, 0.7, 0.8, 0.9, 1. , 1.1],
      [0. , 0.1, 0.2, 0.3, 0.4, 0.5]]], dtype=np.float32)
BM_SCORES = np.array([[0.44, 0.03, 0.55, 0.44, 0.42],
     [0.33, 0.2 , 0.62, 0.3 , 0.27],
     [0.62, 0.53, 0.13, 0.51, 0.18],
     [0.79, 0.85, 0.49, 0.85, 0.08]], dtype=np.float32)
BM_ROWS = np.array([-1.,  2.,  0.,  1.], dtype=np.float32)
BM_COLS = np.array([ 2.,  3.,  1., -1., -1.], dtype=np.float32)
MBT_ANCHORS = np.array([[[0.28, 0.35, 0.39, 0.73],
      [0.15, 0.26, 0.38, 0.57],
      [0.45, 0.45, 0.69, 0.9 ],
      [0.06, 0.1 , 0.38, 0.28],
      [0.03, 0.22, 0.4 , 0.71],
      [0.01, 0.23, 0.26, 0.44],
      [0.32, 0.14, 0.61, 0.71],
      [0.34, 0.3 , 0.93, 0.74]]], dtype=np.float32)
MBT_CLS_PRED = np.array([[[-0.77, -0.23,  0.75,  1.98, -1.24, -0.63, -0.8 , -2.42],
      [-0.92, -1.02,  1.12, -0.13, -1.62,  0.65, -0.36, -1.74],
      [-0.6 , -0.59, -0.87,  0.03, -2.25, -0.27,  1.01,  0.85]]], dtype=np.float32)
MBT_LOC = np.array([[ 0.        ,  0.        ,  0.        ,  0.        ,  0.        ,  0.        ,  0.        ,
       0.        ,  0.        ,  0.        ,  0.        ,  0.        ,  0.        ,  0.        ,
       0.        ,  0.        ,  2.2972975 , -2.3469377 ,  0.3898075 ,  0.10101349,  0.        ,
       0.        ,  0.        ,  0.        ,  0.        ,  0.        ,  0.        ,  0.        ,
       0.25423703,  0.68181884, -0.82757276,  0.63916683]], dtype=np.float32)
MBT_MASK = np.array([[0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 1., 1., 1., 1., 0., 0., 0., 0.,
      0., 0., 0., 0., 1., 1., 1., 1.]], dtype=np.float32)
MBT_CLS = np.array([[-1., -1., -1., -1.,  2.,  0.,  0.,  1.]], dtype=np.float32)
MBD_PROB = np.array([[[0.787, 0.4  , 0.542, 0.382, 0.349, 0.101, 0.507, 0.004],
      [0.206, 0.318, 0.434, 0.106, 0.432, 0.458, 0.085, 0.406],
      [0.007, 0.282, 0.025, 0.512, 0.218, 0.442, 0.408, 0.589]]], dtype=np.float32)
MBD_LOC = np.array([[-0.35,  0.11, -0.18,  0.46,  0.22,  0.01, -0.29,  0.02,  0.05, -0.36,  0.67,  0.12,  0.51, -0.33,
       0.49, -0.41, -0.2 ,  0.16,  0.01, -0.71, -0.33,  0.25,  0.63,  0.27, -0.08,  0.24, -0.34,  0.15,
      -0.4 , -0.  , -0.04,  0.24]], dtype=np.float32)
MBD_OUT = np.array([[[ 1.        ,  0.589     ,  0.31875056,  0.28918245,  0.90404946,  0.75081754],
      [ 1.        ,  0.512     ,  0.05984597,  0.10114551,  0.41279405,  0.26697448],
      [ 0.        ,  0.458     ,  0.        ,  0.22942413,  0.26853526,  0.4510759 ],
      [ 0.        ,  0.434     ,  0.43399286,  0.42833462,  0.70840716,  0.8892653 ],
      [-1.        ,  0.458     ,  0.        ,  0.22942413,  0.26853526,  0.4510759 ],
      [-1.        ,  0.408     ,  0.3272122 ,  0.14500046,  0.5981478 ,  0.7323595 ],
      [-1.        ,  0.589     ,  0.31875056,  0.28918245,  0.90404946,  0.75081754],
      [-1.        , -1.        , -1.        , -1.        , -1.        , -1.        ]]], dtype=np.float32)
PROP_CLS = np.array([[[[0.22, 0.87, 0.21, 0.92],
       [0.49, 0.61, 0.77, 0.52],
       [0.3 , 0.19, 0.08, 0.74]],
      [[0.44, 0.16, 0.88, 0.27],
       [0.41, 0.3 , 0.63, 0.58],
       [0.6 , 0.27, 0.28, 0.25]],
      [[0.33, 0.14, 0.17, 0.96],
       [0.96, 0.19, 0.02, 0.2 ],
       [0.7 , 0.78, 0.02, 0.58]],
      [[0.  , 0.52, 0.64, 0.99],
       [0.26, 0.8 , 0.87, 0.92],
       [0.  , 0.47, 0.98, 0.4 ]]]], dtype=np.float32)
PROP_BBOX = np.array([[[[ 0.04,  0.27, -0.02,  0.31],
       [-0.06, -0.1 ,  0.02,  0.07],
       [ 0.05,  0.26,  0.23,  0.1 ]],
      [[-0.07, -0.02,  0.28,  0.04],
       [-0.26, -0.14, -0.12,  0.23],
       [-0.02,  0.45,  0.13,  0.02]],
      [[-0.09,  0.19, -0.05, -0.16],
       [ 0.11,  0.  ,  0.24, -0.01],
       [-0.57,  0.16, -0.38,  0.31]],
      [[ 0.36, -0.09, -0.23, -0.28],
       [ 0.17, -0.04, -0.12, -0.05],
       [ 0.42,  0.07,  0.15,  0.16]],
      [[ 0.2 ,  0.21, -0.14, -0.04],
       [-0.15, -0.14,  0.23, -0.1 ],
       [-0.02, -0.14, -0.12,  0.16]],
      [[-0.09, -0.1 ,  0.1 ,  0.1 ],
       [ 0.16,  0.03, -0.35,  0.13],
       [ 0.1 ,  0.2 , -0.17,  0.5 ]],
      [[-0.25,  0.15,  0.01, -0.1 ],
       [ 0.16, -0.06, -0.47, -0.23],
       [ 0.09,  0.45, -0.3 , -0.  ]],
      [[ 0.29,  0.12, -0.08, -0.28],
       [-0.36, -0.15, -0.07, -0.45],
       [-0.34,  0.06, -0.08, -0.15]]]], dtype=np.float32)
PROP_ROIS = np.array([[ 0.       ,  0.       ,  0.       , 22.940449 , 33.64488  ],
     [ 0.       , 34.71993  ,  0.       , 59.       , 30.436604 ],
     [ 0.       ,  0.       ,  0.       , 44.176464 , 44.       ],
     [ 0.       ,  4.799999 ,  4.1473694, 35.8      , 33.89263  ],
     [ 0.       ,  0.       ,  0.       , 22.940449 , 33.64488  ],
     [ 0.       , 34.71993  ,  0.       , 59.       , 30.436604 ]], dtype=np.float32)
PROP_SCORES = np.array([[0.96],
     [0.87],
     [0.8 ],
     [0.19],
     [0.96],
     [0.87]], dtype=np.float32)
RROI_OUT = np.array([[[[ 13.964424  ,  10.763462  ],
       [ 18.236538  ,  15.035576  ]],
      [[ 43.964424  ,  40.763462  ],
       [ 48.23654   ,  45.035576  ]]],
     [[[ 78.160736  ,  41.897747  ],
       [ 82.73483   ,  87.56889   ]],
      [[108.160736  ,  56.897747  ],
       [112.73483   , 117.56889   ]]],
     [[[ 10.496529  ,   0.29513893],
       [ 17.453123  ,   1.2968749 ]],
      [[ 30.496529  ,  10.295138  ],
       [ 47.453125  ,  16.296875  ]]]], dtype=np.float32)
RROI_OUT2 = np.array([[[[13.446475 , 26.834936 ,  5.1507215]],
      [[28.446476 , 56.834938 , 12.650722 ]]],
     [[[ 0.       ,  0.       ,  0.       ]],
      [[ 0.       ,  0.       ,  0.       ]]],
     [[[ 0.       ,  6.25     ,  0.       ]],
      [[ 0.       , 21.25     ,  0.       ]]]], dtype=np.float32)
PRIOR_OUT = np.array([[[0.        , 0.        , 0.24166667, 0.45      ],
      [0.        , 0.075     , 0.15833333, 0.325     ],
      [0.        , 0.02322331, 0.31070226, 0.3767767 ],
      [0.20833333, 0.        , 0.5416667 , 0.45      ],
      [0.29166666, 0.075     , 0.45833334, 0.325     ],
      [0.13929774, 0.02322331, 0.6107023 , 0.3767767 ],
      [0.5083333 , 0.        , 0.8416667 , 0.45      ],
      [0.5916667 , 0.075     , 0.7583333 , 0.325     ],
      [0.43929774, 0.02322331, 0.9107023 , 0.3767767 ],
      [0.        , 0.35000002, 0.24166667, 0.85      ],
      [0.        , 0.47500002, 0.15833333, 0.725     ],
      [0.        , 0.42322332, 0.31070226, 0.77677673],
      [0.20833333, 0.35000002, 0.5416667 , 0.85      ],
      [0.29166666, 0.47500002, 0.45833334, 0.725     ],
      [0.13929774, 0.42322332, 0.6107023 , 0.77677673],
      [0.5083333 , 0.35000002, 0.8416667 , 0.85      ],
      [0.5916667 , 0.47500002, 0.7583333 , 0.725     ],
      [0.43929774, 0.42322332, 0.9107023 , 0.77677673]]], dtype=np.float32)
# fmt: on


def test_box_nms_center_output_and_gradient():
    x = nd.array(NMS_DATA)
    x.attach_grad()
    with ag.record():
        y = nd.contrib.box_nms(x, overlap_thresh=0.3, topk=4, id_index=0, out_format="center",
                               valid_thresh=0.1)
    y.backward(nd.array(np.arange(36, dtype=np.float32).reshape(1, 6, 6) / 10))
    np.testing.assert_allclose(y.asnumpy(), NMS_OUT, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x.grad.asnumpy(), NMS_GRAD, rtol=1e-6)


def test_bipartite_matching_topk_makes_topk_plus_one_matches():
    rows, cols = nd.contrib.bipartite_matching(nd.array(BM_SCORES), threshold=0.05, topk=2)
    np.testing.assert_array_equal(rows.asnumpy(), BM_ROWS)
    np.testing.assert_array_equal(cols.asnumpy(), BM_COLS)


def test_multibox_target_with_negative_mining():
    label = np.array([[[1, 0.1, 0.1, 0.5, 0.6], [0, 0.4, 0.3, 0.9, 0.8], [-1, -1, -1, -1, -1]]],
                     np.float32)
    loc, mask, cls = nd.contrib.MultiBoxTarget(
        nd.array(MBT_ANCHORS), nd.array(label), nd.array(MBT_CLS_PRED), overlap_threshold=0.4,
        negative_mining_ratio=1, negative_mining_thresh=0.3)
    np.testing.assert_allclose(loc.asnumpy(), MBT_LOC, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mask.asnumpy(), MBT_MASK)
    np.testing.assert_array_equal(cls.asnumpy(), MBT_CLS)


def test_multibox_detection_nms_topk():
    # rows past nms_topk keep their unsorted detection with class -1, as MXNet's do
    out = nd.contrib.MultiBoxDetection(nd.array(MBD_PROB), nd.array(MBD_LOC),
                                       nd.array(MBT_ANCHORS), threshold=0.3, nms_threshold=0.3,
                                       nms_topk=4)
    np.testing.assert_allclose(out.asnumpy(), MBD_OUT, rtol=1e-5, atol=1e-6)


def test_proposal_rois_and_scores():
    rois, scores = nd.contrib.Proposal(
        nd.array(PROP_CLS), nd.array(PROP_BBOX), nd.array([[45, 60, 1.0]]), scales=(2, 4),
        ratios=(1,), feature_stride=16, rpn_pre_nms_top_n=8, rpn_post_nms_top_n=6,
        threshold=0.5, rpn_min_size=8, output_score=True)
    np.testing.assert_allclose(rois.asnumpy(), PROP_ROIS, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(scores.asnumpy(), PROP_SCORES, rtol=1e-6)


def test_rroi_align_values():
    data = nd.array(np.arange(2 * 2 * 5 * 6, dtype=np.float32).reshape(2, 2, 5, 6))
    rois = nd.array([[0, 10, 8, 12, 6, 30], [1, 20, 12, 8, 10, -45], [0, 2, 3, 30, 20, 90]])
    out = nd.contrib.RROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=0.25)
    np.testing.assert_allclose(out.asnumpy(), RROI_OUT, rtol=1e-5, atol=1e-4)
    out = nd.contrib.RROIAlign(data, rois, pooled_size=(1, 3), spatial_scale=0.5,
                               sampling_ratio=2)
    np.testing.assert_allclose(out.asnumpy(), RROI_OUT2, rtol=1e-5, atol=1e-4)


def test_multibox_prior_steps_offsets_clip():
    out = nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 3)), sizes=(0.5, 0.25), ratios=(1, 2),
                                   steps=(0.4, 0.3), offsets=(0.5, 0.25), clip=True)
    np.testing.assert_allclose(out.asnumpy(), PRIOR_OUT, rtol=1e-6, atol=1e-7)
