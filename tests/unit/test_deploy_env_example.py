"""deploy/.env.example stays in step with the environment zhiyi reads: it names exactly the variables
gateway/process/settings.py reads (`env.get("NAME"`), each once, and the value it shows for each is
that variable's real default (read back through `Environment.read`); its docker-compose-only section
names exactly the variables deploy/docker-compose.yml interpolates, none of them zhiyi's."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.process.settings import Environment

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "gateway" / "process" / "settings.py"
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
COMPOSE_ONLY = "# ============================================================================= docker compose only"
ASSIGNMENT = re.compile(r"^#? ?([A-Z][A-Z0-9_]*)=(.*)$")
DEPLOY_VALUES = {"REDIS_URL"}   # shown with the value a deployment needs, not the (unset) default


def settings_env_names() -> set[str]:
    """Every variable settings.py reads (`env.get("NAME"` in Environment.read)."""
    return set(re.findall(r'env\.get\("([A-Z][A-Z0-9_]*)"', SETTINGS.read_text()))


def example_assignments() -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, bool]]]:
    """(zhiyi's, docker compose's): (name, value, active) for each `NAME=value` line, commented or not."""
    text = ENV_EXAMPLE.read_text()
    assert text.count(COMPOSE_ONLY) == 1, "the docker-compose-only section marker"
    zhiyi_part, compose_part = text.split(COMPOSE_ONLY)

    def lines(part: str) -> list[tuple[str, str, bool]]:
        out = []
        for line in part.splitlines():
            found = ASSIGNMENT.match(line)
            if found:
                out.append((found.group(1), found.group(2), not line.startswith("#")))
        return out

    return lines(zhiyi_part), lines(compose_part)


def compose_interpolated_names() -> set[str]:
    """The `${NAME...}` variables docker compose substitutes in the compose file (`$$` is a literal $)."""
    return set(re.findall(r"(?<!\$)\$\{([A-Z][A-Z0-9_]*)", COMPOSE.read_text()))


def test_the_example_names_every_variable_zhiyi_reads_and_nothing_else() -> None:
    zhiyi, _ = example_assignments()
    names = [name for name, _, _ in zhiyi]
    assert len(names) == len(set(names)), f"named twice: {sorted({n for n in names if names.count(n) > 1})}"
    read = settings_env_names()
    assert len(read) > 30   # the pattern still finds settings.py's reads
    assert set(names) == read, (f"missing from deploy/.env.example: {sorted(read - set(names))}; "
                                f"not read by settings.py: {sorted(set(names) - read)}")


def test_the_values_shown_are_the_defaults() -> None:
    zhiyi, _ = example_assignments()
    shown = {name: value for name, value, _ in zhiyi}
    active = {name for name, _, is_active in zhiyi if is_active}
    assert active == DEPLOY_VALUES, "only what a deployment must set is uncommented"
    deploy = {name: shown[name] for name in DEPLOY_VALUES}
    # every line uncommented gives the same environment as none at all (but for the deployment's values)
    assert Environment.read(shown) == Environment.read(deploy)
    assert Environment.read(deploy).redis_url == "redis://zhiyi:ZHIYI_PASSWORD@127.0.0.1:6380/0"


def test_the_redis_url_is_the_acl_user_of_the_shipped_redis_conf() -> None:
    zhiyi, _ = example_assignments()
    url = dict((name, value) for name, value, _ in zhiyi)["REDIS_URL"]
    conf = (ROOT / "deploy" / "redis.conf").read_text()
    user, password, port = re.fullmatch(r"redis://([^:]+):([^@]+)@127\.0\.0\.1:(\d+)/0", url).groups()  # type: ignore[union-attr]
    assert re.search(rf"^user {user} on >{password} ", conf, re.M)
    assert re.search(rf"^port {port}$", conf, re.M)


def test_the_compose_only_section_is_what_compose_interpolates() -> None:
    _, compose = example_assignments()
    names = {name for name, _, _ in compose}
    assert names == compose_interpolated_names()
    assert not names & settings_env_names(), "a variable zhiyi reads belongs to zhiyi's sections"
    assert all(is_active and value == "" for _, value, is_active in compose), "to be filled in: empty, uncommented"
