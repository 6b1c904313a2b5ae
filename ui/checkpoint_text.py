"""What was recognised in an uploaded checkpoint, in the reader's language.

``transformer.checkpoints`` says what it found as codes and values (:class:`Finding`); this module
names the catalogue entry of every code (literal keys, so the catalogue test sees them) and renders
a finding through it. A code the catalogue does not know yet is shown in English.
"""

from __future__ import annotations

from transformer.checkpoints import Finding
from transformer.checkpoints.findings import render

from .i18n import translate

ROW_KEYS = {  # findings() rows -> catalogue keys
    "architecture": "checkpoints.row_architecture",
    "kind": "checkpoints.row_kind",
    "vocab": "checkpoints.row_vocab",
    "target_vocab": "checkpoints.row_target_vocab",
    "d_model": "checkpoints.row_d_model",
    "encoder_layers": "checkpoints.row_encoder_layers",
    "decoder_layers": "checkpoints.row_decoder_layers",
    "d_ff": "checkpoints.row_d_ff",
    "max_len": "checkpoints.row_max_len",
    "positional": "checkpoints.row_positional",
    "norm": "checkpoints.row_norm",
    "head": "checkpoints.row_head",
    "parameters": "checkpoints.row_parameters",
}
FINDING_KEYS = {  # Finding codes -> catalogue keys
    "count": "checkpoints.value_count",
    "number": "checkpoints.value_number",
    "kind_encoder_decoder": "checkpoints.value_kind_encoder_decoder",
    "kind_classifier": "checkpoints.value_kind_classifier",
    "kind_encoder_only": "checkpoints.value_kind_encoder_only",
    "max_len_not_stored": "checkpoints.value_not_stored",
    "positional_formula": "checkpoints.value_formula",
    "positional_table": "checkpoints.value_table",
    "norm_layer_norm": "checkpoints.value_norm_layer_norm",
    "norm_layer_norm_final": "checkpoints.value_norm_layer_norm_final",
    "norm_std_eps": "checkpoints.value_norm_std_eps",
    "norm_std_eps_final": "checkpoints.value_norm_std_eps_final",
    "head_linear_sigmoid": "checkpoints.value_head_linear_sigmoid",
    "head_linear_softmax": "checkpoints.value_head_linear_softmax",
    "head_mlp_sigmoid": "checkpoints.value_head_mlp_sigmoid",
    "head_mlp_softmax": "checkpoints.value_head_mlp_softmax",
    "head_none": "checkpoints.value_head_none",
    "head_output_layer": "checkpoints.value_head_output_layer",
    "head_missing": "checkpoints.head_missing",
    "head_first_width": "checkpoints.head_first_width",
    "head_chain": "checkpoints.head_chain",
    "head_not_linear": "checkpoints.head_not_linear",
    "note_head_unmapped": "checkpoints.note_head_unmapped",
    "note_positional_assumed": "checkpoints.note_positional_assumed",
    "note_positional_formula": "checkpoints.note_positional_formula",
    "note_positional_rounding": "checkpoints.note_positional_rounding",
    "note_positional_table": "checkpoints.note_positional_table",
}
FAMILY_KEYS = {  # Family.name -> catalogue key of its title (the 'family' finding)
    "attention-lab": "checkpoints.family_attention_lab",
    "pytorch-nn-transformer": "checkpoints.family_pytorch_nn_transformer",
    "course-encoder": "checkpoints.family_course_encoder",
    "vanilla-encoder-decoder": "checkpoints.family_vanilla_encoder_decoder",
    "wq-wconcat": "checkpoints.family_wq_wconcat",
    "fused-qkv-per-head": "checkpoints.family_fused_qkv_per_head",
}


def finding_text(finding: Finding, lang: str) -> str:
    """``finding`` in ``lang`` (nested findings too); English for a code the catalogue lacks."""

    def text(code: str, fields: dict) -> str:
        if code == "family":
            key = FAMILY_KEYS.get(str(fields["name"]))
            return translate(key, lang) if key is not None else str(fields["title"])
        if code not in FINDING_KEYS:
            return Finding(code, fields).english()
        return translate(FINDING_KEYS[code], lang, **fields)

    return render(finding, text)


def row_text(row: str, lang: str) -> str:
    """The title of a findings() row in ``lang`` (the code itself for a row the catalogue lacks)."""
    return translate(ROW_KEYS[row], lang) if row in ROW_KEYS else row


# Messages from opening a Hugging Face folder (transformer/hf, transformer/checkpoints) -> catalogue keys.
# Those modules say what is wrong in English sentences; each pattern below names the values the
# translation needs. A message no pattern matches is shown as it is (in English).
HF_ERRORS = (
    (r"^No internet connection .*?, and (?P<name>\S+) is not in the Hugging Face cache", "checkpoints.hub_offline"),
    (r"^(?P<name>\S+) was not found on the Hugging Face Hub", "checkpoints.hub_not_found"),
    (r"^(?P<name>.+?) has no config\.json", "checkpoints.hf_error_no_config"),
    (r"^(?P<name>.+?) has no weights: expected", "checkpoints.hf_error_no_weights"),
    (r"^(?P<name>.+?) has no tokenizer: expected", "checkpoints.hf_error_no_tokenizer"),
    (r"^(?P<file>\S+) lists \d+ shards but (?P<missing>.+?) (?:is|are) missing", "checkpoints.hf_error_missing_shard"),
    (r"^(?P<name>.+?) has no (?P<file>[\w.-]+): ", "checkpoints.hf_error_missing_file"),
    (
        r"model_type (?P<model_type>.+?), which this app cannot import\. Supported: (?P<supported>.+)\.$",
        "checkpoints.hf_error_unsupported",
    ),
    (r"^Refused (?P<file>\S+): it is a pickle", "checkpoints.hf_error_pickle"),
    (
        r"(?P<file>\S+) is (?P<mb>[\d,]+) MB; this app opens models up to (?P<limit>[\d,]+) MB",
        "checkpoints.hf_error_too_big",
    ),
    (r"the tokenizer belongs to another model", "checkpoints.hf_error_tokenizer_mismatch"),
    (r"the config does not belong to these weights", "checkpoints.hf_error_config_mismatch"),
    (r"^(?P<file>\S+) is not valid JSON", "checkpoints.hf_error_not_json"),
    (
        r"^(?P<name>\S+?):? (?P<reason>(?:holds .*(?:a path outside|a link)|would unpack|.* unpacks to more).*)$",
        "checkpoints.hf_error_zip_refused",
    ),
)


def hf_error_text(message: str, lang: str) -> str:
    """An English message from opening a Hugging Face folder, in ``lang`` (the message itself when it
    is none of the known ones)."""
    import re

    for pattern, key in HF_ERRORS:
        found = re.search(pattern, message, flags=re.DOTALL)
        if found is not None:
            return translate(key, lang, **found.groupdict())
    return message
