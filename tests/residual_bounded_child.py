"""Run in a child process by tests/test_residual_bounded.py: every residual path on a language model with
a 2,000,000-token vocabulary and 64 positions (one positions x vocabulary float tensor: 512 MB), its heap
each path's added peak resident memory measured by the kernel (its high-water mark reset before each),
then the control: one reading's full distribution (T x V), which the measure must see; prints one JSON
line {path: MB}."""

import json

import torch

from transformer.core.decoder import DecoderLM, lm_config
from transformer.residual import contributions, head_effects, logit_lens, trace
from transformer.residual.readout import chain, readout
from transformer.residual.records import lens_entries

torch.set_num_threads(1)
VOCAB, T = 2_000_000, 64
torch.manual_seed(0)
model = DecoderLM(lm_config(VOCAB, d_model=8, num_heads=2, num_layers=2, d_ff=16, max_len=T)).eval()
ids = torch.randint(0, VOCAB, (1, T))


class Loaded:  # what the CLI's lens entries read from a loaded model
    lm_tokenizer, vocab, target_vocab = None, type("V", (), {"id_to_token": staticmethod(str)}), None


Loaded.model = model


def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024


def added_peak(run):
    """Peak resident bytes ``run()`` adds: the kernel's high-water mark reset first (clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    before = status("VmRSS")
    run()
    return status("VmHWM") - before


logit_lens(model, ids[:, :4]), contributions(model, ids[:, :4]), head_effects(model, ids[:, :4], 3, 5)
out = {}
for name, run in {
    "lens": lambda: logit_lens(model, ids),
    "cli-lens": lambda: lens_entries(Loaded, model, ids, None, T - 1),
    "contributions": lambda: contributions(model, ids, T - 1),
    "head-effects": lambda: head_effects(model, ids, T - 1, 17),
    "attention-row": lambda: trace(model, ids, weights=False, row=T - 1),
}.items():
    out[name] = added_peak(run) / 1e6
out["control"] = added_peak(lambda: torch.softmax(readout(chain(model), trace(model, ids).streams[-1]), -1)) / 1e6
print(json.dumps(out))
