"""Translation task on top of the core encoder-decoder: generated parallel data with gold word
alignments (English -> Korean word order; written dates -> ISO), vocabularies, training,
step-by-step decoding and alignment scores. No Streamlit import."""

from .pairs import Pair
from .tasks import TASKS, Task, get_task

__all__ = ["TASKS", "Pair", "Task", "get_task"]
