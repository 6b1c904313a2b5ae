"""What was recognised in an uploaded checkpoint, in the reader's language.

``transformer.checkpoints`` says what it found as codes and values (:class:`Finding`); this module
names the catalogue entry of every code (literal keys, so the catalogue test sees them) and renders
a finding through it. A code the catalogue does not know yet is shown in English. Errors are
translated the same way: a :class:`~transformer.checkpoints.errors.CodedError` (opening a Hugging
Face folder, a refused pickle) by its code and values, any other error shown as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from transformer.checkpoints import Finding
from transformer.checkpoints.errors import CodedError
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


HF_ERROR_KEYS = {  # CodedError codes (opening a Hugging Face folder, a refused pickle) -> catalogue keys
    "hub_offline": "checkpoints.hub_offline",
    "hub_not_found": "checkpoints.hub_not_found",
    "no_config": "checkpoints.hf_error_no_config",
    "no_model_type": "checkpoints.hf_error_no_model_type",
    "no_weights": "checkpoints.hf_error_no_weights",
    "no_tokenizer": "checkpoints.hf_error_no_tokenizer",
    "missing_file": "checkpoints.hf_error_missing_file",
    "missing_shard": "checkpoints.hf_error_missing_shard",
    "bad_index": "checkpoints.hf_error_bad_index",
    "empty_file": "checkpoints.hf_error_empty_file",
    "unsupported": "checkpoints.hf_error_unsupported",
    "pickle_refused": "checkpoints.hf_error_pickle",
    "too_big": "checkpoints.hf_error_too_big",
    "json_too_big": "checkpoints.hf_error_json_too_big",
    "not_json": "checkpoints.hf_error_not_json",
    "tokenizer_mismatch": "checkpoints.hf_error_tokenizer_mismatch",
    "config_mismatch": "checkpoints.hf_error_config_mismatch",
    "missing_tensor": "checkpoints.hf_error_missing_tensor",
    "not_zip": "checkpoints.hf_error_not_zip",
    "zip_outside": "checkpoints.hf_error_zip_outside",
    "zip_link": "checkpoints.hf_error_zip_link",
    "zip_twice": "checkpoints.hf_error_zip_twice",
    "zip_too_big": "checkpoints.hf_error_zip_too_big",
    # a GGUF file's refusals (transformer.hf.gguf_file / gguf_import / gguf_tokenizer)
    "gguf_absurd_count": "checkpoints.gguf_error_absurd_count",
    "gguf_architecture": "checkpoints.gguf_error_architecture",
    "gguf_bad_shape": "checkpoints.gguf_error_bad_shape",
    "gguf_bad_value": "checkpoints.gguf_error_bad_value",
    "gguf_changed": "checkpoints.gguf_error_changed",
    "gguf_empty": "checkpoints.gguf_error_empty",
    "gguf_head_dim": "checkpoints.gguf_error_head_dim",
    "gguf_missing_key": "checkpoints.gguf_error_missing_key",
    "gguf_missing_tensor": "checkpoints.gguf_error_missing_tensor",
    "gguf_several": "checkpoints.gguf_error_several",
    "gguf_no_tokenizer": "checkpoints.gguf_error_no_tokenizer",
    "gguf_not_gguf": "checkpoints.gguf_error_not_gguf",
    "gguf_past_end": "checkpoints.gguf_error_past_end",
    "gguf_scaled_rotary": "checkpoints.gguf_error_scaled_rotary",
    "gguf_shape_mismatch": "checkpoints.gguf_error_shape_mismatch",
    "gguf_tokenizer_kind": "checkpoints.gguf_error_tokenizer_kind",
    "gguf_tokenizer_mismatch": "checkpoints.gguf_error_tokenizer_mismatch",
    "gguf_too_big": "checkpoints.gguf_error_too_big",
    "gguf_too_long": "checkpoints.gguf_error_too_long",
    "gguf_too_many_parameters": "checkpoints.gguf_error_too_many_parameters",
    "gguf_truncated": "checkpoints.gguf_error_truncated",
    "gguf_unknown_type": "checkpoints.gguf_error_unknown_type",
    "gguf_unsupported_type": "checkpoints.gguf_error_unsupported_type",
    "gguf_version": "checkpoints.gguf_error_version",
    "gguf_vocab_rows": "checkpoints.gguf_error_vocab_rows",
    "gguf_name_too_long": "checkpoints.gguf_error_name_too_long",
    "gguf_twice": "checkpoints.gguf_error_twice",
    "gguf_alignment": "checkpoints.gguf_error_alignment",
    "gguf_misaligned": "checkpoints.gguf_error_misaligned",
    "gguf_overlap": "checkpoints.gguf_error_overlap",
    "gguf_gap": "checkpoints.gguf_error_gap",
    "gguf_settings": "checkpoints.gguf_error_settings",
    "gguf_not_count": "checkpoints.gguf_error_not_count",
    "gguf_not_number": "checkpoints.gguf_error_not_number",
    "gguf_no_tokenizer_model": "checkpoints.gguf_error_no_tokenizer_model",
    "gguf_tokenizer_build": "checkpoints.gguf_error_tokenizer_build",
    "gguf_bad_merge": "checkpoints.gguf_error_bad_merge",
    "gguf_token_too_long": "checkpoints.gguf_error_token_too_long",
    "gguf_package_chunk": "checkpoints.gguf_error_package_chunk",
}


@dataclass(frozen=True)
class Problem:
    """Why an upload could not be read, kept (not the exception: its traceback holds the reader's
    frames) so that it is shown in the reader's language on every rerun: the English ``message``, and
    for a :class:`CodedError` its ``code`` and ``values``."""

    message: str
    code: str | None = None
    values: Mapping[str, object] = field(default_factory=dict)


def problem_of(err: Exception) -> Problem:
    """``err`` as a Problem (its code and values where it has them)."""
    if isinstance(err, CodedError):
        return Problem(str(err), err.code, dict(err.values))
    return Problem(str(err))


def problem_text(problem: Problem, lang: str) -> str:
    """``problem`` in ``lang``, translated by its code; the English message for a code the catalogue lacks
    (or an error without one)."""
    key = HF_ERROR_KEYS.get(problem.code or "")
    return translate(key, lang, **problem.values) if key is not None else problem.message
