"""structlog configuration, done once by the entry point."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, json: bool = False, level: str = "info") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    logging.basicConfig(level=lvl, stream=sys.stderr, format="%(message)s")
    renderer = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def configure_from_environment() -> None:
    """`configure_logging` as ZHIYI_LOG_JSON and ZHIYI_LOG_LEVEL say: for a spawned child process (it
    inherits the environment, not the parent's configuration)."""
    from gateway.process.settings import Environment

    env = Environment.read()
    configure_logging(json=env.log_json, level=env.log_level)
