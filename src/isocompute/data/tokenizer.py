"""A character-level tokenizer for the synthetic task.

The embedded default trains its own tiny model, so it needs a tokenizer that exists without a hub: one
token per character of the task's alphabet, saved in the standard Hugging Face format so that
`AutoTokenizer.from_pretrained(path)` loads it exactly like a real model's tokenizer.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD_TOKEN = "<pad>"
EOS_TOKEN = "<eos>"
UNK_TOKEN = "<unk>"


def build_char_tokenizer(alphabet: str) -> PreTrainedTokenizerFast:
    """Return a fast tokenizer with one id per character of `alphabet`, plus pad, eos and unk.

    Left padding is the default because every consumer (TRL, batched `generate`) pads prompts on the left.
    """
    chars = sorted(set(alphabet))
    vocab = {PAD_TOKEN: 0, EOS_TOKEN: 1, UNK_TOKEN: 2}
    for char in chars:
        vocab[char] = len(vocab)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK_TOKEN))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        padding_side="left",
    )
