"""Vision Transformer: images cut into patches, a class token, learned positions, the core encoder layers.

Classification (a head on the class token) and segmentation (a per-patch head that predicts the
patch's pixels). No Streamlit import.
"""

from .analysis import VisionAnalysis, analyze_images
from .bundle import VisionModel, load_vision_bundle, save_vision_bundle
from .config import VisionConfig
from .model import VisionTransformer

__all__ = [
    "VisionAnalysis",
    "VisionConfig",
    "VisionModel",
    "VisionTransformer",
    "analyze_images",
    "load_vision_bundle",
    "save_vision_bundle",
]
