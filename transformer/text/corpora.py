"""Two more review corpora beside IMDB: NSMC-style Korean movie reviews and SST-2's short English sentences.

- NSMC-style: gzip'd UTF-8 TSV with a header ``id<TAB>document<TAB>label`` (0 negative, 1 positive),
  ``nsmc_style_train.tsv.gz`` and ``nsmc_style_test.tsv.gz`` (the Naver sentiment movie corpus's layout).
- SST-2 (``stsa.binary.train``): one sentence per line, ``<label> <sentence>``, PTB-tokenised and lower-cased.
Both read into the same :class:`~transformer.datasets.imdb.Example` as IMDB.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from ..datasets.imdb import _REPO_ROOT, Example

NSMC_ENV_VAR = "ATTENTION_LAB_NSMC"
NSMC_FILES = {"train": "nsmc_style_train.tsv.gz", "test": "nsmc_style_test.tsv.gz"}
SST2_ENV_VAR = "ATTENTION_LAB_SST2"
SST2_FILE = "stsa.binary.train"
# SST-2's PTB escapes, turned back into what a person types
_PTB = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}", "``": '"', "''": '"'}


def default_nsmc_dir() -> Path:
    """``$ATTENTION_LAB_NSMC``, else ``../shared/data/nsmc`` beside the repository."""
    return Path(os.environ.get(NSMC_ENV_VAR) or _REPO_ROOT.parent / "shared" / "data" / "nsmc")


def default_sst2_path() -> Path:
    """``$ATTENTION_LAB_SST2``, else ``../shared/data/sst2/stsa.binary.train`` beside the repository."""
    return Path(os.environ.get(SST2_ENV_VAR) or _REPO_ROOT.parent / "shared" / "data" / "sst2" / SST2_FILE)


def load_nsmc(folder: str | Path, split: str) -> list[Example]:
    """The reviews of one split (``"train"`` or ``"test"``) in file order; ValueError on a malformed line,
    FileNotFoundError saying where the file was looked for."""
    if split not in NSMC_FILES:
        raise ValueError(f"split must be one of {sorted(NSMC_FILES)}, not {split!r}.")
    path = Path(folder) / NSMC_FILES[split]
    if not path.is_file():
        raise FileNotFoundError(
            f"{NSMC_FILES[split]} not found in {folder}: put the NSMC-style files there or set ${NSMC_ENV_VAR}."
        )
    out = []
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        header = f.readline().rstrip("\r\n").split("\t")
        if header != ["id", "document", "label"]:
            raise ValueError(f"{path.name}: expected the header 'id, document, label', found {header[:3]}.")
        for number, line in enumerate(f, start=2):
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3 or parts[2] not in ("0", "1"):
                raise ValueError(f"{path.name} line {number}: expected 'id<TAB>review<TAB>0|1'.")
            out.append(Example(parts[1], int(parts[2])))
    return out


def untokenize_ptb(sentence: str) -> str:
    """SST-2's PTB tokens as typed text: brackets back, "is n't" -> "isn't", "it 's" -> "it's", no space
    before punctuation — so that the sentence reaches the model's own tokenizer the way a user's would."""
    text, opened = "", False
    for raw in sentence.split():
        word = _PTB.get(raw, raw)
        glue = raw == "''" or word in {".", ",", "!", "?", ";", ":", ")", "]", "}", "%"} or word.startswith("'")
        glue = glue or raw == "n't" or opened or not text
        text += word if glue else " " + word
        opened = raw in ("``", "-lrb-", "-lsb-", "-lcb-")
    return text


def load_sst2(path: str | Path) -> list[Example]:
    """SST-2's labelled training sentences, PTB escapes undone (see :func:`untokenize_ptb`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path.name} not found at {path.parent}: put it there or set ${SST2_ENV_VAR}.")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        label, _, sentence = line.partition(" ")
        if label not in ("0", "1") or not sentence.strip():
            raise ValueError(f"{path.name} line {number}: expected '<0|1> <sentence>'.")
        out.append(Example(untokenize_ptb(sentence), int(label)))
    return out
