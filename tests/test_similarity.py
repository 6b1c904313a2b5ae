"""Sentence similarity (transformer/similarity.py): the folder's recipe, pooling, token matches, and
all-MiniLM-L6-v2's embeddings equal to the reference recipe (transformers' BertModel, eager attention,
mean pooling with the attention mask, L2 normalisation) within 1e-5."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer import SentenceRecipe, read_recipe, sentence_similarity
from transformer.analysis.similarity import cosine_matrix, pool_states
from transformer.loader import load_model

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "assets" / "models" / "all-minilm-l6-v2"
SHARED = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2"
FOLDERS = [f for f in (BUNDLED, SHARED) if (f / "model.safetensors").is_file()]
needs_minilm = pytest.mark.skipif(
    not FOLDERS, reason="all-MiniLM-L6-v2 is not here (assets/models or ../shared/models)"
)
TEXTS = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar.",
    "The stock market fell sharply today.",
    "배우들 연기가 정말 좋았고 마지막까지 눈을 뗄 수 없었어요.",  # Korean: an English-only model, but it runs
    "The film was 정말 good, 진짜로!",  # mixed
    "Loved it 😍🔥 would watch again 👍",  # emoji
]


@pytest.fixture(scope="module")
def minilm():
    torch.set_num_threads(1)
    return load_model(FOLDERS[0], "cpu")


def test_the_folder_recipe_is_read(tmp_path):
    if FOLDERS:
        recipe = read_recipe(FOLDERS[0])
        assert (recipe.pooling, recipe.normalize, recipe.max_tokens) == ("mean", True, 256)
        assert recipe.source == ("modules.json", "1_Pooling/config.json", "sentence_bert_config.json")
    assert read_recipe(tmp_path) == SentenceRecipe()  # no modules.json: mean, normalised
    (tmp_path / "modules.json").write_text(
        json.dumps([{"path": "", "type": "x.Transformer"}, {"path": "1_Pooling", "type": "x.Pooling"}])
    )
    (tmp_path / "1_Pooling").mkdir()
    flags = {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(flags))
    assert read_recipe(tmp_path) == SentenceRecipe("cls", False, 0, ("modules.json", "1_Pooling/config.json"))
    flags["pooling_mode_mean_tokens"] = True
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(flags))
    with pytest.raises(ValueError, match="2 ways at once"):
        read_recipe(tmp_path)
    with pytest.raises(ValueError, match="Unknown pooling"):
        SentenceRecipe("median")


def test_pooling_and_cosine_numbers():
    states = torch.tensor([[1.0, 0.0], [3.0, 4.0], [-1.0, 2.0], [1.0, 2.0]])
    assert pool_states(states, "mean").tolist() == [1.0, 2.0]
    assert pool_states(states, "cls").tolist() == [1.0, 0.0]
    assert pool_states(states, "max").tolist() == [3.0, 4.0]
    assert pool_states(states, "mean_sqrt_len").tolist() == [2.0, 4.0]  # sum / sqrt(4)
    c = cosine_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]), np.array([[3.0, 4.0]]))
    np.testing.assert_allclose(c, [[0.6], [0.8], [0.0]])


def reference_embeddings(folder: Path, texts: list[str], max_tokens: int):
    """sentence-transformers' recipe computed with transformers: BertModel (eager), mean over the
    attention mask, L2 normalised; also each text's tokens and last-layer states."""
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state  # (N, T, D)
    mask = batch["attention_mask"].unsqueeze(-1).float()
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    embeddings = torch.nn.functional.normalize(mean, p=2, dim=1).numpy()
    lengths = batch["attention_mask"].sum(1).tolist()
    tokens = [tokenizer.convert_ids_to_tokens(batch["input_ids"][i, :n]) for i, n in enumerate(lengths)]
    states = [hidden[i, :n].numpy() for i, n in enumerate(lengths)]
    return embeddings, tokens, states


@needs_minilm
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.parent.parent.name)
def test_all_minilm_embeddings_equal_the_reference_recipe(folder):
    torch.set_num_threads(1)
    loaded = load_model(folder, "cpu")
    long_text = "The plot moves slowly but the ending is worth the wait. " * 60  # 5,000+ characters
    texts = TEXTS + [long_text]
    ours = sentence_similarity(loaded, texts, read_recipe(folder))
    embeddings, tokens, states = reference_embeddings(folder, texts, 256)
    assert ours.tokens == tokens
    assert ours.truncated == [False] * len(TEXTS) + [True] and len(ours.tokens[-1]) == 256 == ours.limit
    assert np.abs(ours.embeddings - embeddings).max() < 1e-5
    np.testing.assert_allclose(np.linalg.norm(ours.embeddings, axis=1), 1.0, atol=1e-6)
    assert np.abs(ours.similarity - embeddings @ embeddings.T).max() < 1e-5
    for mine, theirs in zip(ours.states, states, strict=True):
        assert np.abs(mine - theirs).max() < 1e-5  # last-layer token states (2.9e-6 measured)
    cos_ours = ours.token_match(0, 1, words_only=False).cosine
    cos_ref = cosine_matrix(states[0], states[1])
    assert np.abs(cos_ours - cos_ref).max() < 1e-5


@needs_minilm
def test_paraphrases_are_closest_and_tokens_find_their_match(minilm):
    result = sentence_similarity(minilm, TEXTS[:3], read_recipe(FOLDERS[0]))
    s = result.similarity
    np.testing.assert_allclose(np.diag(s), 1.0, atol=1e-6)
    np.testing.assert_allclose(s, s.T, atol=1e-12)
    assert s[0, 1] > 0.6 and s[0, 2] < 0.1 and s[1, 2] < 0.1  # the paraphrase, then an unrelated sentence
    match = result.token_match(0, 1)
    assert "[CLS]" not in match.tokens_a and "[SEP]" not in match.tokens_b
    assert match.cosine.shape == (len(match.tokens_a), len(match.tokens_b))
    best = dict(zip(match.tokens_a, (match.tokens_b[j] for j in match.best_for_a), strict=True))
    assert best["guitar"] == "guitar"
    np.testing.assert_allclose(match.best_for_a_score, match.cosine.max(1))
    np.testing.assert_allclose(match.best_for_b_score, match.cosine.max(0))
    assert match.positions_a[0] == 1 and match.positions_a[-1] == len(result.tokens[0]) - 2


@needs_minilm
def test_bad_input_gets_a_clear_message(minilm):
    with pytest.raises(ValueError, match="No input"):
        sentence_similarity(minilm, [])
    one = sentence_similarity(minilm, ["only one sentence"])
    assert one.similarity.shape == (1, 1) and one.similarity[0, 0] == pytest.approx(1.0)
    assert one.token_match(0, 0).best_for_a.tolist() == list(range(len(one.tokens[0]) - 2))
    long = sentence_similarity(minilm, ["x" * 5000, "word " * 1000], max_len=16)
    assert long.tokens[0] == ["[CLS]", "[UNK]", "[SEP]"]  # one 5,000-letter word: WordPiece gives up on it
    assert long.truncated == [False, True] and long.tokens[1] == ["[CLS]"] + ["word"] * 14 + ["[SEP]"]
    assert long.original_lengths[1] == 1002


def test_a_model_that_is_not_an_encoder_is_refused():
    from types import SimpleNamespace

    lm = SimpleNamespace(config=SimpleNamespace(kind="language-model"), model=torch.nn.Linear(1, 1))
    with pytest.raises(ValueError, match="needs a text encoder"):
        sentence_similarity(lm, ["a"])


@pytest.mark.skipif(not (ROOT / "assets" / "models" / "imdb-sentiment").is_dir(), reason="imdb-sentiment not bundled")
def test_any_text_encoder_works_and_mean_pooling_is_the_models_own():
    """A course-sized classifier (mean pooling over real tokens) gives, unnormalised, the very vector its
    head reads: the model's own ``pooled`` for each sentence, batched with padding."""
    torch.set_num_threads(1)
    loaded = load_model(ROOT / "assets" / "models" / "imdb-sentiment", "cpu")
    texts = ["the movie was great", "a dull , slow and far too long film that i did not enjoy"]
    ours = sentence_similarity(loaded, texts, SentenceRecipe("mean", normalize=False))
    from transformer.core.inputs import encode_inputs, pad_ids

    ids = pad_ids([e.ids for e in encode_inputs(loaded, texts).encoded], loaded.config.pad_id)
    with torch.no_grad():
        pooled = loaded.model(ids).pooled.numpy()
    assert np.abs(ours.embeddings - pooled).max() < 1e-5
    unit = sentence_similarity(loaded, texts)
    np.testing.assert_allclose(unit.embeddings, pooled / np.linalg.norm(pooled, axis=1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(unit.similarity, ours.similarity, atol=1e-6)  # the cosine ignores the scale
