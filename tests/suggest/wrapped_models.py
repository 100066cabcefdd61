"""The same small GPT laid out two ways, dumped by graphboard's probe: Megatron's (embedding,
a decoder holding the layers and final_layernorm, output_layer) and Hugging Face's (a model
wrapper holding embed_tokens, the layers and norm; lm_head). Same seed, same weights."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from graphboard import probe
from graphboard.demo import BATCH, TOKENS, VOCAB, WIDTH, Block
from renamed_dumps import Renaming

# What a Megatron name is on the Hugging Face side; the embedding moves a level down
# (Module.embedding -> Module.model.embed_tokens), which no renaming of names can say.
MEGATRON_TO_HF = Renaming(
    segments={"decoder": "model", "final_layernorm": "norm", "output_layer": "lm_head"},
    classes={"Decoder": "Inner"},
)


def _blocks(count: int) -> nn.ModuleList:
    return nn.ModuleList(Block(gelu_tanh=False, bf16_softmax=False) for _ in range(count))


class Decoder(nn.Module):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.layers = _blocks(count)
        self.final_layernorm = nn.LayerNorm(WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.layers:
            x = block(x)
        return self.final_layernorm(x)


class MegatronGpt(nn.Module):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, WIDTH)
        self.decoder = Decoder(count)
        self.output_layer = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.output_layer(self.decoder(self.embedding(tokens)))


class Inner(nn.Module):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, WIDTH)
        self.layers = _blocks(count)
        self.norm = nn.LayerNorm(WIDTH)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(tokens)
        for block in self.layers:
            x = block(x)
        return self.norm(x)


class HfGpt(nn.Module):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.model = Inner(count)
        self.lm_head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(tokens))


def dump(root: Path, layout: type[nn.Module], count: int = 2) -> Path:
    torch.manual_seed(1234)
    model = layout(count)
    tokens = torch.randint(0, VOCAB, (BATCH, TOKENS))
    labels = torch.randint(0, VOCAB, (BATCH, TOKENS))
    with probe.dump(model, root, step=0, level="mix", task="statistics"):
        logits = model(tokens)
        nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1)).backward()
    return root
