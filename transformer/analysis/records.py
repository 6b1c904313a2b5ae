"""The pieces of an analysis' JSON records (``AnalysisResult.input_record``, the CLI's ``inspect`` and the
pages' downloads): a prediction entry, the warnings, numbers made ready for JSON, and a language model's
record as ``inspect`` writes it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LM_RECORD_TOP = 10  # next tokens a language model's record lists (``inspect``'s TOP_TOKENS)


def prediction_entry(
    names: Sequence[str], probs: np.ndarray, raw: np.ndarray | None = None, temperature: float = 1.0
) -> dict | None:
    """{'label', 'probabilities', 'raw_probabilities', 'temperature'} from (K,) calibrated ``probs``
    and (K,) ``raw`` softmax(logits); None when ``probs`` are not finite."""
    if not np.isfinite(probs).all():
        return None
    out = {"label": names[int(probs.argmax())], "probabilities": {n: float(p) for n, p in zip(names, probs)}}
    if raw is not None:
        out["raw_probabilities"] = {n: float(p) for n, p in zip(names, raw)}
        out["temperature"] = float(temperature)
    return out


def weights_warning(names: Sequence[str]) -> str:
    """The warning a record carries when the model's weights hold NaN or ±inf (first five named)."""
    return f"Weights with NaN or infinite values: {', '.join(names[:5])}."


def json_ready(value: object) -> object:
    """``value`` with every numpy array as nested lists (NaN and ±inf as None), for ``json.dumps``."""
    if isinstance(value, np.ndarray):
        finite = value.size == 0 or _all_finite(value)
        return value.tolist() if finite else np.where(np.isfinite(value), value, None).tolist()
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    return value


def _rounded(array: np.ndarray, digits: int = 6) -> np.ndarray:
    """float64 ``array`` rounded to ``digits`` (NaN and ±inf stay)."""
    return np.ascontiguousarray(np.round(array.astype(np.float64), digits))


def nonfinite_fields(**arrays: np.ndarray | None) -> list[str]:
    """The names of the given arrays that hold NaN or ±inf (None entries are skipped)."""
    return [name for name, a in arrays.items() if a is not None and a.size and not _all_finite(a)]


def _all_finite(a: np.ndarray) -> bool:
    """No NaN or ±inf in ``a``: its minimum and maximum are finite (both propagate NaN). Two passes
    that allocate nothing, where ``np.isfinite(a).all()`` builds a boolean copy as large as ``a``
    (134 MB for the weights of one 4,096-token input, a quarter of the analysis' peak)."""
    return bool(np.isfinite(a.min()) and np.isfinite(a.max()))


def lm_record_of(result, index: int, attention: bool = True, line: int | None = None) -> dict:
    """Input ``index`` of a language model's :class:`AnalysisResult` as ``inspect`` writes its record:
    the top next tokens as the prediction, the causal weights as ``attention.decoder_self``."""
    n = int(result.lengths[index])
    record = {"text": result.texts[index]} | ({} if line is None else {"line": line})
    probs = result.next_token_probabilities[index, :LM_RECORD_TOP]
    top = [{"token": tok, "id": int(i), "probability": float(p)}
           for tok, i, p in zip(result.next_tokens[index], result.next_token_ids[index], probs)]  # fmt: skip
    record |= {
        "tokens": result.tokens[index],
        "ids": [int(i) for i in result.ids[index, :n]],
        "truncated": bool(result.truncated[index]),
        "prediction": {"next_tokens": top} if np.isfinite(probs).all() else None,
    }
    if record["prediction"] is None:
        record["warnings"] = ["The model's probabilities are NaN or infinite (non-finite weights?): no prediction."]
    if attention:
        record["attention"] = {"decoder_self": _rounded(result.attention_for(index))}
    return record
