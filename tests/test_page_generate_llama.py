"""The Generate page, the Masks page's step-through, the head atlas and the CLI on an imported tiny Llama (rotary positions, RMSNorm, SwiGLU,
4 query heads over 2 key/value heads), in English and Korean: the page's greedy continuation equals
transformers' ``generate(do_sample=False)`` from the same prompt ids (which are AutoTokenizer's, ``<s>``
included), every query head has its row, each step's probabilities are transformers' softmax."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.app_helpers import array, figures, open_app
from tests.hf_models import reference_greedy
from tests.test_hf_llama import make_folder
from transformer.cli.main import main as cli_main
from transformer.hf.importer import load_hf_folder
from transformer.lm.steps import lm_head_steps
from ui.session import MEMO_KEY, upload_key

pytest.importorskip("transformers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

KEY = upload_key("tiny-llama")
PROMPTS = {"en": "this movie was great", "ko": "영화 정말 재미 있다"}
STEPS = 5


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """(folder, our imported model, transformers' LlamaForCausalLM eager, AutoTokenizer)."""
    torch.set_num_threads(1)
    folder, reference, auto = make_folder("llama", tmp_path_factory.mktemp("hf") / "tiny-llama")
    return folder, load_hf_folder(folder), reference, auto


def page_generation(at):
    memo = at.session_state[MEMO_KEY]
    found = [memo.get(k) for k in memo if k[0] == KEY and k[2] == "lm-generation"]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_generate_page_continues_as_transformers_greedy_does(llama, lang):
    _, ours, reference, auto = llama
    state = {"gen_steps": STEPS, "gen_prompt": PROMPTS[lang]}
    at = open_app("generate", uploads={KEY: ours}, chosen=KEY, state=state, lang=lang)
    view = page_generation(at)
    prompt = auto(PROMPTS[lang])["input_ids"]
    assert prompt[0] == auto.bos_token_id and view.ids[: view.prompt_length] == prompt
    expected, probs = reference_greedy(reference, prompt, STEPS)
    assert view.ids == expected
    for step, record in enumerate(view.steps):
        np.testing.assert_allclose(record.top_probs, probs[step][record.top_ids], atol=1e-5)
        assert record.attention.shape == (2, 4, len(prompt) + step)  # every query head, 2 layers x 4
    trace = figures(at)["generate-rows"]["data"][0]
    rows = array(trace["z"])
    assert rows.shape == (2 * 4, len(prompt))
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-4)
    assert list(trace["y"][:4]) == ["L1 H1 · KV1", "L1 H2 · KV1", "L1 H3 · KV2", "L1 H4 · KV2"]
    said = {"en": "4 query heads share 2 key/value heads", "ko": "쿼리 헤드 4개가 키/값 헤드 2개를"}[lang]
    assert any(said in c.value for c in at.caption)


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (1, 3)])
def test_masks_step_through_of_a_rotary_grouped_head_gives_transformers_weights(llama, layer, head):
    """The Masks page's stages (QKᵀ, ÷√d_k, look-ahead mask, softmax) on a head that shares its key/value
    head and rotates its queries and keys: the weights are that head's in transformers."""
    _, ours, reference, auto = llama
    ids = auto("the plot was good but long")["input_ids"]
    steps = lm_head_steps(ours, torch.tensor([ids]), layer, head)
    with torch.no_grad():
        theirs = reference(torch.tensor([ids]), output_attentions=True).attentions[layer][0, head].numpy()
    np.testing.assert_allclose(steps.weights, theirs, atol=1e-5)
    assert np.all(steps.masked[np.triu_indices(len(ids), 1)] == ours.config.mask_fill)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_head_atlas_scores_every_query_head_of_the_imported_llama(llama, lang):
    _, ours, _, _ = llama
    at = open_app("head_atlas", uploads={KEY: ours}, chosen=KEY, lang=lang)
    grid = array(figures(at)["atlas-grid"]["data"][0]["z"])
    assert grid.shape == (2, 4)  # layers x query heads (4 heads over 2 key/value heads)
    (table,) = [d.value for d in at.dataframe]
    assert table.shape[0] == 8 and list(table.iloc[:, 2]) == [1, 1, 2, 2] * 2  # the key/value head each reads
    said = {"en": "4 query heads share 2 key/value heads", "ko": "쿼리 헤드 4개가 키/값 헤드 2개를"}[lang]
    assert any(said in c.value for c in at.caption)


def test_cli_inspect_gives_causal_attention_of_every_head(llama, capsys):
    folder, _, reference, auto = llama
    text = "the movie was boring"
    assert cli_main(["inspect", "--checkpoint", str(folder), "--text", text, "--device", "cpu"]) == 0
    record = json.loads(capsys.readouterr().out)["inputs"][0]
    ids = auto(text)["input_ids"]
    assert record["ids"] == ids
    weights = np.asarray(record["attention"]["decoder_self"])
    assert weights.shape == (2, 4, len(ids), len(ids))
    with torch.no_grad():
        theirs = reference(torch.tensor([ids]), output_attentions=True).attentions
    np.testing.assert_allclose(weights, torch.stack(theirs)[:, 0].numpy(), atol=1e-4)
    assert np.allclose(np.triu(weights, 1), 0.0)
