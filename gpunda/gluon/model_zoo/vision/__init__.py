"""Vision architectures of MXNet 1.x's model zoo (``gluon.model_zoo.vision``).

Every network builds its blocks in MXNet's order, so parameter names and structural
names match MXNet's and ``.params`` files MXNet saved load as they are. Constructors
take ``pretrained``, ``ctx``, ``root`` and the network's own arguments (``classes``, ...);
``get_model(name, **kwargs)`` takes MXNet's model names.
"""
from __future__ import annotations

from gpunda.gluon.model_zoo.vision.alexnet import *  # noqa: F401,F403
from gpunda.gluon.model_zoo.vision.densenet import *  # noqa: F401,F403
from gpunda.gluon.model_zoo.vision.inception import *  # noqa: F401,F403
from gpunda.gluon.model_zoo.vision.resnet import *  # noqa: F401,F403
from gpunda.gluon.model_zoo.vision.squeezenet import *  # noqa: F401,F403
from gpunda.gluon.model_zoo.vision.vgg import *  # noqa: F401,F403
from gpunda.gluon.model_zoo.vision.mobilenet import *  # noqa: F401,F403

_MODELS = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1,  # noqa: F405
    "resnet50_v1": resnet50_v1, "resnet101_v1": resnet101_v1,  # noqa: F405
    "resnet152_v1": resnet152_v1,  # noqa: F405
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2,  # noqa: F405
    "resnet50_v2": resnet50_v2, "resnet101_v2": resnet101_v2,  # noqa: F405
    "resnet152_v2": resnet152_v2,  # noqa: F405
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,  # noqa: F405
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn,  # noqa: F405
    "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,  # noqa: F405
    "alexnet": alexnet,  # noqa: F405
    "densenet121": densenet121, "densenet161": densenet161,  # noqa: F405
    "densenet169": densenet169, "densenet201": densenet201,  # noqa: F405
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,  # noqa: F405
    "inceptionv3": inception_v3,  # noqa: F405
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,  # noqa: F405
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,  # noqa: F405
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,  # noqa: F405
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,  # noqa: F405
}


def get_model(name, **kwargs):
    """The model zoo network called ``name`` (MXNet's names, case-insensitive).

    Args:
        name: e.g. ``"resnet18_v1"``, ``"vgg16_bn"``, ``"squeezenet1.1"``, ``"inceptionv3"``,
            ``"mobilenet0.25"``, ``"mobilenetv2_1.0"``.
        **kwargs: passed to the constructor: ``pretrained``, ``ctx``, ``root``,
            ``classes`` and the network's own options.

    Returns:
        The network, a HybridBlock.

    Raises:
        ValueError: ``name`` is not one of MXNet's model names (the message lists them).
    """
    key = name.lower()
    if key not in _MODELS:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (key, "\n\t".join(sorted(_MODELS))))
    return _MODELS[key](**kwargs)
