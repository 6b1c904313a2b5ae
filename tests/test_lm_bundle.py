"""The language model as a bundle: save and load (kind "language-model", tokenizer.json beside the
weights), the prompt's tokens, and ``inspect``'s records (tokens, causal attention, top next tokens)."""

import json

import numpy as np
import pytest
import torch

from transformer.bundle import load_bundle, save_bundle
from transformer.cli.main import main
from transformer.core.bpe import EOT, TOKENIZER_FILE, train_tokenizer, vocab_of
from transformer.core.bpe_text import encode_prompt, show_token, token_bytes
from transformer.core.decoder import DecoderLM, init_weights, lm_config

TEXTS = [
    "the movie was great and the acting was great.",
    "a boring film, the plot was not good at all!",
    "이 영화 정말 재밌다 배우도 좋고 음악도 좋다",
    "정말 지루한 영화였다 ㅋㅋ 다시는 안 본다",
] * 5


def make_lm_bundle(folder, max_len: int = 24):
    """A random-weight language model with a tokenizer learned on a few sentences, saved as a bundle."""
    tok = train_tokenizer(TEXTS, vocab_size=300, min_frequency=1)
    config = lm_config(tok.get_vocab_size(), d_model=16, num_heads=4, num_layers=2, d_ff=32, max_len=max_len,
                       bos_id=tok.token_to_id(EOT), eos_id=tok.token_to_id(EOT))  # fmt: skip
    torch.manual_seed(0)
    model = DecoderLM(config)
    init_weights(model, std=0.3)
    folder = save_bundle(folder, model.eval(), config, vocab_of(tok), metrics={"note": "random weights"})
    tok.save(str(folder / TOKENIZER_FILE))
    return folder


@pytest.fixture
def lm_bundle(tmp_path):
    return make_lm_bundle(tmp_path / "tiny-lm")


def run_cli(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_save_and_load_give_the_same_model_and_its_tokenizer(lm_bundle):
    loaded = load_bundle(lm_bundle)
    assert isinstance(loaded.model, DecoderLM) and loaded.config.kind == "language-model"
    assert loaded.lm_tokenizer is not None and loaded.splitter is None
    assert loaded.model.output.weight is loaded.model.embedding.tokens.weight  # tied again after loading
    assert loaded.vocab.itos == vocab_of(loaded.lm_tokenizer).itos
    again = load_bundle(lm_bundle)
    ids = torch.tensor([encode_prompt(loaded.lm_tokenizer, "the movie was").ids])
    torch.testing.assert_close(loaded.model(ids).logits, again.model(ids).logits)


def test_a_bundle_without_its_tokenizer_is_refused(lm_bundle):
    (lm_bundle / TOKENIZER_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_bundle(lm_bundle)


def test_prompt_tokens_start_with_the_start_token_and_show_bytes(lm_bundle):
    tok = load_bundle(lm_bundle).lm_tokenizer
    prompt = encode_prompt(tok, "the movie 정말")
    assert prompt.tokens[0] == EOT and prompt.ids[0] == tok.token_to_id(EOT)
    for index, shown in zip(prompt.ids[1:], prompt.tokens[1:]):
        raw = token_bytes(tok.id_to_token(index))
        try:
            assert shown.replace("␣", " ") == raw.decode("utf-8")
        except UnicodeDecodeError:  # part of a character: its bytes are written out
            assert shown.replace("␣", " ") == raw.decode("utf-8", errors="backslashreplace") and "\\x" in shown
    assert tok.decode(prompt.ids[1:]) == "the movie 정말"
    assert token_bytes("Ġthe") == b" the" and token_bytes(EOT) is None
    assert show_token(tok, tok.token_to_id("Ġ")) == "␣"
    cut = encode_prompt(tok, "the movie was great " * 10, max_len=5)
    assert cut.truncated and len(cut.ids) == 5


def test_inspect_gives_tokens_causal_attention_and_top_next_tokens(lm_bundle, capsys):
    code, out, _ = run_cli(capsys, "inspect", "--checkpoint", str(lm_bundle), "--text", "the movie was", "정말")
    assert code == 0
    data = json.loads(out)
    assert data["model"]["kind"] == "language-model"
    first = data["inputs"][0]
    assert first["tokens"][0] == EOT and len(first["ids"]) == len(first["tokens"])
    attention = np.array(first["attention"]["decoder_self"])
    n = len(first["tokens"])
    assert attention.shape == (2, 4, n, n)
    assert np.all(attention[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0)
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
    top = first["prediction"]["next_tokens"]
    probs = [entry["probability"] for entry in top]
    assert len(top) == 10 and probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-9
    model = load_bundle(lm_bundle).model
    with torch.no_grad():
        expected = torch.softmax(model(torch.tensor([first["ids"]])).logits[0, -1].double(), -1)
    assert top[0]["id"] == int(expected.argmax())
    assert top[0]["probability"] == pytest.approx(float(expected.max()), abs=1e-6)


def test_inspect_file_max_len_and_no_attention(lm_bundle, tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_text("the movie was great and the acting\n\n정말 지루한 영화\n", encoding="utf-8")
    args = ("inspect", "--checkpoint", str(lm_bundle), "--text-file", str(f), "--max-len", "4")
    code, out, _ = run_cli(capsys, *args, "--attention", "none", "--format", "jsonl")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["line"] for r in records] == [1, 3]
    assert all(len(r["ids"]) == 4 and r["truncated"] for r in records)
    assert all("attention" not in r and len(r["prediction"]["next_tokens"]) == 10 for r in records)
