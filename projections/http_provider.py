"""Shared plumbing of the HTTP model providers (embeddings, rerank, and later the LLM client)."""

from __future__ import annotations

import orjson


def endpoint_url(endpoint: str, route: str) -> str:
    """Accept a base URL (``http://h:8000``, ``http://h:8000/v1``) or the full ``/v1/<route>`` URL."""
    url = endpoint.strip().rstrip("/")
    if url.endswith(f"/v1/{route}"):
        return url
    if url.endswith("/v1"):
        return f"{url}/{route}"
    return f"{url}/v1/{route}"


def error_message(body: bytes) -> str:
    """Extract a human message from an error body (OpenAI-style, ``detail`` or plain text)."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace")[:500]
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])
        if isinstance(err, str):
            return err
        if "detail" in doc:
            return str(doc["detail"])
    return body.decode("utf-8", "replace")[:500]


class Retryable(Exception):
    """A failure worth retrying (connection error, timeout, 5xx, 429)."""
