"""A policy for running RL trainers' own code paths with no pretrained model (none can be
downloaded in CI): a byte-level BPE tokenizer trained on two strings (any text
round-trips; its merges come from prose only, so random tokens are never code) and a tiny
random Llama. Used by the adapter tests and `bench/demo_rewards.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(["Write the module adder8.", "Here is the module."], trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>")
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    return tok


def tiny_grpo_trainer(tokenizer, reward_funcs: list, data: Any, out_dir: Path):
    """TRL's GRPOTrainer for one CPU step over `data`: a random 2-layer Llama (hidden 32),
    two generations of 8 tokens per prompt."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=256,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=None,
        )
    )
    args = GRPOConfig(
        output_dir=str(out_dir),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=8,
        report_to=[],
        use_cpu=True,
        bf16=False,
        logging_steps=1,
        save_strategy="no",
        seed=0,
    )
    return GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )
