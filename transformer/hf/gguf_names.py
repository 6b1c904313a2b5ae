"""llama.cpp's tensor names in a GGUF file and the Hugging Face names the families map (blk.N.* inside
model.layers.N.*): the importer renames by them, the messages name tensors back by them."""

GGUF_NAMES = {  # llama.cpp's tensor names -> Hugging Face's (blk.N.* inside model.layers.N.*)
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
}
LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
