"""One table of read and write routes (gateway.http.route_kinds): every route the app serves is in it,
nothing else is, and README's "on a replica" table says the same."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.http.app import create_app
from gateway.http.route_kinds import BUFFERED, READ, ROUTES, WRITE
from gateway.process.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `([A-Z]+) ([^`]+)` \| (read|write): ")


def _app_routes() -> set[tuple[str, str]]:
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0", data_dir=Path("/tmp/zhiyi-route-kinds"),
                              api_key="k"))
    return {(r.method, r.resource.canonical) for r in app.router.routes()
            if r.method != "HEAD" and r.resource is not None}


def test_every_route_is_classified_once() -> None:
    assert _app_routes() == set(ROUTES)
    assert set(ROUTES.values()) == {READ, WRITE}
    assert all(ROUTES[r] == WRITE for r in BUFFERED)
    # what changes state is a write; a GET never is
    assert all(kind == READ for (method, _), kind in ROUTES.items() if method == "GET")


def test_the_readme_table_is_the_same() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- route-kinds:begin -->", 1)[1].split("<!-- route-kinds:end -->", 1)[0]
    rows = {(m.group(1), m.group(2)): m.group(3) for line in block.splitlines() if (m := ROW.match(line.strip()))}
    assert rows == ROUTES
    for route in BUFFERED:
        line = next(x for x in block.splitlines() if f"`{route[0]} {route[1]}`" in x)
        assert "buffered" in line
