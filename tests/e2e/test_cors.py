"""CORS through the real app (ZHIYI_CORS_ORIGINS): preflights answered before authentication for the
allowed origins and refused for others; every answer to an allowed origin, errors too, says so and
exposes the rate-limit headers; without the setting no CORS header is sent."""

from __future__ import annotations


import pytest

from gateway.http.appkeys import SETTINGS
from gateway.process.settings import Environment, parse_origins
from tests.e2e.conftest import assert_error

APP = "https://app.example"


@pytest.fixture
def settings_overrides() -> dict:
    return {"cors_origins": (APP, "http://localhost:5173")}


def _preflight(origin: str) -> dict:
    return {"Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-api-key"}


async def test_preflight_and_answers_for_an_allowed_origin(api):
    resp = await api.client.options("/api/v1/recall", headers=_preflight(APP))
    assert resp.status == 204
    assert resp.headers["Access-Control-Allow-Origin"] == APP and "X-API-Key" in resp.headers[
        "Access-Control-Allow-Headers"] and "POST" in resp.headers["Access-Control-Allow-Methods"]
    key = await api.register("alice")
    resp = await api.client.get("/api/v1/stats", headers={"Origin": APP, "X-API-Key": key})
    assert resp.status == 200 and resp.headers["Access-Control-Allow-Origin"] == APP
    assert "X-RateLimit-Remaining" in resp.headers["Access-Control-Expose-Headers"]
    resp = await api.client.get("/api/v1/stats", headers={"Origin": APP})          # an error: still readable
    assert resp.status == 401 and resp.headers["Access-Control-Allow-Origin"] == APP
    assert_error(await resp.json(), "unauthorized")


async def test_another_origin_is_refused(api):
    resp = await api.client.options("/api/v1/recall", headers=_preflight("https://evil.example"))
    assert resp.status == 403
    assert_error(await resp.json(), "forbidden")
    key = await api.register("bob")
    resp = await api.client.get("/api/v1/stats", headers={"Origin": "https://evil.example", "X-API-Key": key})
    assert resp.status == 200 and "Access-Control-Allow-Origin" not in resp.headers   # the browser blocks it
    resp = await api.client.get("/api/v1/stats", headers={"X-API-Key": key})        # no Origin: not a browser
    assert "Access-Control-Allow-Origin" not in resp.headers


async def test_any_origin_and_none(api):
    settings = api.client.app[SETTINGS]
    object.__setattr__(settings, "cors_origins", ("*",))
    resp = await api.client.options("/api/v1/stats", headers=_preflight("https://anywhere.example"))
    assert resp.status == 204 and resp.headers["Access-Control-Allow-Origin"] == "*"
    object.__setattr__(settings, "cors_origins", ())
    resp = await api.client.options("/api/v1/stats", headers=_preflight(APP))
    assert "Access-Control-Allow-Origin" not in resp.headers


def test_the_setting_is_parsed_and_checked():
    assert parse_origins(None) == () and parse_origins(" * ") == ("*",)
    assert parse_origins("https://a.example/, http://localhost:5173") == ("https://a.example", "http://localhost:5173")
    assert Environment.read({"ZHIYI_CORS_ORIGINS": "https://a.example"}).cors_origins == ("https://a.example",)
    with pytest.raises(ValueError, match="ZHIYI_CORS_ORIGINS"):
        parse_origins("a.example")
