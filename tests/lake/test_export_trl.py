"""A fresh export loads with `datasets`, every config it declares (an empty kind is not
declared: datasets cannot load a 0-row split), and every
config is in one of TRL's dataset formats, checked with TRL's own `trl.data_utils` and a
chat template on a byte-level tokenizer built here (CPU only, nothing downloaded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from lake.export import KINDS, SCHEMAS, ExportResult
from tests.lake.export_fixtures import build, run_export

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

# datasets, transformers and TRL are imported by the tests that use them (5 s of imports):
# a pytest-xdist worker that only collects this module does not pay for them

MESSAGE_KINDS = ("sft_direct", "sft_repair", "sft_optimize")
# ChatML, with the generation markers `assistant_only_loss` needs
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }}<|im_end|>"
    "{% endgeneration %}{% else %}{{ m['content'] }}<|im_end|>{% endif %}{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    """One token per byte plus ChatML's specials: lossless, so decoded spans are exact."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    for special in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


@pytest.fixture(scope="module")
def trl_data():
    """TRL's own dataset-format checks (`trl.data_utils`)."""
    from trl import data_utils

    return data_utils


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("export_trl")
    s = build(root / "lake")
    # every kind has rows; with level 1's share 0, sft_optimize (only level-1 pairs) is empty
    full = run_export(s, root / "out", name="full")
    partial = run_export(s, root / "out", name="partial", mix={"level": {"1": 0, "*": 1}})
    return {"scenario": s, "full": full, "partial": partial, "cache": root / "hf-cache"}


def load(result: ExportResult, kind: str, cache: Path, **kw: Any):
    import datasets

    return datasets.load_dataset(
        str(result.path), name=kind, split="train", cache_dir=str(cache), **kw
    )


def jsonl(result: ExportResult, kind: str) -> list[dict[str, Any]]:
    text = (result.path / "jsonl" / f"{kind}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_every_config_loads_with_datasets(exports: dict[str, Any]):
    full, cache = exports["full"], exports["cache"]
    assert set(full.counts) == set(KINDS)
    for kind in KINDS:
        assert full.counts[kind] > 0, kind
        ds = load(full, kind, cache)
        assert list(ds.features) == SCHEMAS[kind].names
        assert ds.num_rows == full.counts[kind]
        assert ds.to_list() == jsonl(full, kind)


def test_every_declared_config_loads_and_an_empty_kind_keeps_its_schema(exports: dict[str, Any]):
    import datasets

    partial, cache = exports["partial"], exports["cache"]
    assert partial.counts["sft_optimize"] == 0
    assert all(n > 0 for k, n in partial.counts.items() if k != "sft_optimize")
    # every config the card declares loads, as a user iterating over them would load it
    names = datasets.get_dataset_config_names(str(partial.path))
    assert sorted(names) == sorted(k for k in KINDS if k != "sft_optimize")
    for kind in names:
        assert load(partial, kind, cache).num_rows == partial.counts[kind]
    # the empty kind is not declared (datasets cannot load a 0-row split,
    # huggingface/datasets#8401), and the card and the manifest say so
    with pytest.raises(ValueError, match="sft_optimize"):
        load(partial, "sft_optimize", cache)
    card = (partial.path / "README.md").read_text()
    assert "No rows this time: `sft_optimize`" in card
    assert any(w.startswith("sft_optimize: no eligible rows") for w in partial.manifest["warnings"])
    # its file is still there with the schema and no row group at all: a 0-row group made
    # datasets fail ("BatchSize must be greater than 0"), as any parquet reader reads it
    (shard,) = (partial.path / "data" / "sft_optimize").iterdir()
    assert pq.read_metadata(shard).num_row_groups == 0
    assert pq.read_table(shard).schema == SCHEMAS["sft_optimize"]
    streamed = datasets.load_dataset(
        "parquet", data_files=str(shard), split="train", streaming=True, cache_dir=str(cache)
    )
    assert list(streamed) == []


def test_message_configs_are_trl_conversational_language_modeling(
    exports: dict[str, Any], tokenizer: PreTrainedTokenizerFast, trl_data
):
    full, cache = exports["full"], exports["cache"]
    for kind in MESSAGE_KINDS:
        for row in load(full, kind, cache):
            assert trl_data.is_conversational(row), kind
            assert not trl_data.is_conversational_from_value(row)
            assert trl_data.maybe_convert_to_chatml(dict(row)) == row
            text = trl_data.apply_chat_template(row, tokenizer)["text"]
            assert text == tokenizer.apply_chat_template(row["messages"], tokenize=False)
            assert text.endswith(row["messages"][-1]["content"] + "<|im_end|>\n")
            # what `assistant_only_loss=True` trains on: every assistant turn
            enc = tokenizer.apply_chat_template(
                row["messages"], return_dict=True, return_assistant_tokens_mask=True
            )
            trained = tokenizer.decode(
                [t for t, m in zip(enc["input_ids"], enc["assistant_masks"], strict=True) if m]
            )
            answers = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
            assert trained == "".join(a + "<|im_end|>" for a in answers)
            if kind == "sft_repair":
                assert len(answers) == row["rounds"]  # the failed attempts are trained on


def test_repair_completion_is_the_repair_conversation_trained_on_the_fix_only(
    exports: dict[str, Any], tokenizer: PreTrainedTokenizerFast, trl_data
):
    full, cache = exports["full"], exports["cache"]
    repair = {r["trajectory_id"]: r for r in load(full, "sft_repair", cache)}
    completion = list(load(full, "sft_repair_completion", cache))
    assert {r["trajectory_id"] for r in completion} == set(repair)
    for row in completion:
        whole = repair[row["trajectory_id"]]
        assert row["prompt"] + row["completion"] == whole["messages"]
        assert row["prompt"][-1]["role"] == "user"  # the last tool feedback
        assert row["prompt"][-1]["content"].startswith("The verifier rejected this attempt")
        assert [m["role"] for m in row["completion"]] == ["assistant"]
        assert trl_data.is_conversational(row)
        out = trl_data.apply_chat_template(row, tokenizer)
        full_text = tokenizer.apply_chat_template(whole["messages"], tokenize=False)
        assert out["prompt"] + out["completion"] == full_text
        # SFTTrainer's prompt-completion tokenization: the prompt's ids must be a prefix
        # of the prompt+completion ids, and only the rest is trained on (completion mask)
        prompt_ids = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True)[
            "input_ids"
        ]
        ids = tokenizer.apply_chat_template(row["prompt"] + row["completion"])["input_ids"]
        assert trl_data.common_prefix_length(prompt_ids, ids) == len(prompt_ids)
        trained = tokenizer.decode(ids[len(prompt_ids) :])
        assert row["completion"][0]["content"] in trained
        failed = [m["content"] for m in row["prompt"] if m["role"] == "assistant"]
        assert len(failed) == row["rounds"] - 1 >= 1
        assert not [f for f in failed if f in trained]


def test_dpo_config_is_a_trl_preference_dataset(
    exports: dict[str, Any], tokenizer: PreTrainedTokenizerFast, trl_data
):
    full, cache = exports["full"], exports["cache"]
    ds = load(full, "dpo", cache)
    for row in ds:
        assert trl_data.is_conversational(row)
        assert trl_data.maybe_extract_prompt(row) == row  # explicit conversational prompt
        out = trl_data.apply_chat_template(row, tokenizer)
        assert out["prompt"].endswith("<|im_start|>assistant\n")
        assert out["chosen"] == row["chosen"][0]["content"] + "<|im_end|>\n"
        assert out["rejected"] == row["rejected"][0]["content"] + "<|im_end|>\n"
    unpaired = trl_data.maybe_unpair_preference_dataset(ds)  # KTO's unpaired form
    assert unpaired.num_rows == 2 * ds.num_rows
    assert sorted(unpaired["label"]) == [False] * ds.num_rows + [True] * ds.num_rows
    for row in unpaired:
        out = trl_data.apply_chat_template(row, tokenizer)
        assert set(out) == {"prompt", "completion", "label"}


def test_a_sized_export_holds_the_same_repairs_in_both_forms(exports: dict[str, Any], tmp_path):
    s = exports["scenario"]
    for seed in range(3):
        result = run_export(
            s,
            tmp_path,
            name=f"sized{seed}",
            seed=seed,
            size=2,
            kinds=("sft_repair", "sft_repair_completion"),
        )
        ids = [[r["trajectory_id"] for r in jsonl(result, k)] for k in result.counts]
        assert len(ids[0]) == 2 and ids[0] == ids[1]
