"""The models of one process (`gateway.process.wiring.Services` inherits them): the embedding model
(an HTTP provider, else the local one, with the data dir's embedding cache), the gateway's
query-embedding child, multilingual-e5-small, the learned distillation judge and the reranker, each
built on first use and closed with the process."""

from __future__ import annotations

import asyncio
from functools import cached_property
from typing import Any, Awaitable, Callable

from commands.distill.learned import StatementJudge, StatementModel
from gateway.process.gateway_steps import warm_up
from gateway.process.settings import Settings
from projections.models.cached_embedder import CachedEmbedder
from projections.models.e5 import E5Encoder
from projections.models.embedding import make_embedder
from projections.models.embedding_process import ProcessEmbedder
from projections.models.rerank import Reranker, make_reranker


class ModelServices:
    """What `Services` provides to the models (declared here for the type checker)."""

    settings: Settings
    gateway: bool
    background: set[asyncio.Task]
    _injected_embedder: CachedEmbedder | None

    _closes: Callable[[Callable[[], Awaitable[Any]], str], None]
    _closes_sync: Callable[[Callable[[], Any], str], None]

    @cached_property
    def embedder(self) -> CachedEmbedder:
        if self._injected_embedder is not None:
            return self._injected_embedder  # its owner closes it
        embedder = make_embedding_model(self.settings)
        self._closes_sync(embedder.close, "embedder")
        return embedder

    @cached_property
    def query_embedder(self) -> ProcessEmbedder | None:
        """The gateway's queries are embedded in a child process (the same local model), unless
        settings say otherwise or an HTTP provider embeds."""
        s = self.settings
        if not (self.gateway and s.query_embedding_process and not s.bge_endpoint):
            return None
        child = ProcessEmbedder(s.embedding_threads)
        self._closes(lambda: asyncio.to_thread(child.close), "query_embedder")
        return child

    @cached_property
    def e5(self) -> E5Encoder:
        """multilingual-e5-small (bundled), loaded on first use: the local reranker's and the learned
        distillation judge's model, one copy per process."""
        return E5Encoder()

    @cached_property
    def distill_judge(self) -> StatementJudge | None:
        """The learned judge of distillation (`ZHIYI_DISTILL_EXTRACTOR=learned`, the default); None: rules."""
        if self.settings.distill_extractor != "learned":
            return None
        return StatementJudge(self.e5, StatementModel.load())

    @cached_property
    def reranker(self) -> Reranker | None:
        s = self.settings
        if not (s.rerank_endpoint or s.local_rerank):
            return None
        reranker = make_reranker(s.rerank_endpoint, s.rerank_api_key, s.rerank_model, encoder=self.e5)
        self._closes(reranker.close, "reranker")
        return reranker

    def warm_up_models(self) -> None:
        """Load the models the gateway uses off the loop, in the background: the query model, and the
        memories' model unless a child embeds the queries and no projector runs here."""
        models: list[Any] = [self.query_embedder] if self.query_embedder is not None else []
        if self._injected_embedder is None and (self.query_embedder is None or self.settings.run_projectors):
            models.append(self.embedder)
        for model in models:
            warm = asyncio.create_task(warm_up(model), name="embedder:warm_up")
            self.background.add(warm)
            warm.add_done_callback(self.background.discard)


def make_embedding_model(settings: Settings) -> CachedEmbedder:
    """The embedding model the settings choose (an HTTP provider, else the local one), with the data
    dir's embedding cache; the caller closes it. `Services.embedder` is this one, opened and closed."""
    s = settings
    return make_embedder(bge_endpoint=s.bge_endpoint, bge_api_key=s.bge_api_key, bge_model=s.bge_model,
                         cache_path=str(s.embedding_cache_path), threads=s.embedding_threads)
