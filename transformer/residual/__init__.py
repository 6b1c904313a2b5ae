"""Inside the residual stream: the logit lens, each part's share of a token's logit, switching heads
off, and the queries and keys of a layer's heads over many sentences (no Streamlit here)."""

from .contributions import Contributions, HeadEffects, contributions, head_effects
from .lens import Lens, logit_lens
from .readout import has_vocabulary
from .stream import BIAS, CROSS_HEAD, EMBEDDING, FFN, HEAD, StreamTrace, trace

__all__ = [
    "BIAS",
    "CROSS_HEAD",
    "EMBEDDING",
    "FFN",
    "HEAD",
    "Contributions",
    "HeadEffects",
    "Lens",
    "StreamTrace",
    "contributions",
    "has_vocabulary",
    "head_effects",
    "logit_lens",
    "trace",
]
