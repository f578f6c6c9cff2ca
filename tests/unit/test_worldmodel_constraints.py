"""Hard and soft constraints of the world model (seed 6.6's examples)."""

from __future__ import annotations

from commands.learning.worldmodel import is_hard, model_of


def test_the_seeds_examples_are_told_apart():
    assert is_hard("Models must fit the RTX 3050's 4 GB of VRAM", [])
    assert is_hard("New services do not use ports 3000/6379/7821/8000/8188/8644", [])
    assert is_hard("模型不超 3050 显存", [])
    assert is_hard("不要用端口 8080", [])
    assert not is_hard("牧尘讨厌废话", [])
    assert not is_hard("Prefer opencode over writing code by hand", [])
    assert is_hard("Prefer opencode over writing code by hand", ["hard"])      # a tag decides
    assert not is_hard("Never deploy on Fridays", ["Soft"])


def test_a_model_lists_constraints_with_their_memory():
    model = model_of([], [], [{"id": "m1", "content": "禁止在生产库上跑迁移", "namespace": "shared", "tags": []}])
    assert model == {"entities": [], "interactions": [],
                     "constraints": [{"text": "禁止在生产库上跑迁移", "hard": True, "memory_id": "m1", "namespace": "shared"}]}
