"""The environment is read in one place (`Environment.read`) and reaches the settings unchanged."""

from __future__ import annotations

from gateway.cli.main import build_settings, parser
from gateway.process.settings import Environment


def test_environment_read_parses_every_kind_of_value():
    env = Environment.read({"REDIS_URL": "redis://h:1/0", "ZHIYI_DURABLE": "yes", "ZHIYI_LOCAL_RERANK": "0",
                            "ZHIYI_QUERY_EMBEDDING_PROCESS": "off", "ZHIYI_RECALL_CACHE_TTL": "0",
                            "ZHIYI_TICK_INTERVAL_S": "2.5", "LLM_MODEL": "", "ZHIYI_DATA_DIR": "/srv/zhiyi"})
    assert env.redis_url == "redis://h:1/0"
    assert env.durable is True and env.local_rerank is False and env.query_embedding_process is False
    assert env.recall_cache_ttl_s == 0 and env.tick_interval_s == 2.5
    assert env.llm_model == "default"            # empty means unset
    assert env.data_dir == "/srv/zhiyi"


def test_an_empty_environment_gives_the_documented_defaults():
    env = Environment.read({})
    assert env == Environment()
    assert env.redis_url is None and env.api_key is None and env.query_embedding_process is True
    assert env.default_instance_id()            # host-pid when ZHIYI_INSTANCE_ID is unset


def test_settings_are_built_from_the_environment_and_the_arguments():
    env = Environment.read({"ZHIYI_DATA_DIR": "/srv/zhiyi", "ZHIYI_INSTANCE_ID": "gw-7", "ZHIYI_NO_REACTIONS": "1",
                            "ZHIYI_FORGET_CAPACITY": "12", "ZHIYI_LLM_DAILY_LIMIT": "40",
                            "ZHIYI_LLM_DISTILL_DAILY_LIMIT": "7"})
    args = parser(env).parse_args(["tick"])
    args.env = env
    settings = build_settings(args, "redis://x:1/0")
    assert str(settings.data_dir) == "/srv/zhiyi"
    assert settings.instance_id == "gw-7" and settings.forget_capacity == 12
    assert settings.run_reactions is False and settings.redis_url == "redis://x:1/0"
    assert (settings.llm_daily_limit, settings.llm_distill_daily_limit) == (40, 7)   # two budgets
    assert Environment.read({}).llm_distill_daily_limit == 50                         # seed 3.1's default


def test_the_conflict_check_is_on_and_merging_off_unless_set():
    assert Environment.read({}).conflict_check is True and Environment.read({}).merge is False
    assert Environment.read({}).conflict_auto_resolve is True
    env = Environment.read({"ZHIYI_CONFLICT_CHECK": "0", "ZHIYI_MERGE": "1", "ZHIYI_CONFLICT_AUTO_RESOLVE": "0"})
    args = parser(env).parse_args(["tick"])
    args.env = env
    settings = build_settings(args, "redis://x:1/0")
    assert settings.conflict_check is False and settings.merge is True and settings.conflict_auto_resolve is False


def test_zhiyi_backup_dir_is_where_the_gateway_writes_backups(tmp_path):
    env = Environment.read({"ZHIYI_DATA_DIR": str(tmp_path / "data")})
    args = parser(env).parse_args(["serve"])
    args.env = env
    assert build_settings(args, "redis://x:1/0").backups_path == tmp_path / "data" / "backups"
    env = Environment.read({"ZHIYI_DATA_DIR": str(tmp_path / "data"), "ZHIYI_BACKUP_DIR": "rel/backups"})
    args = parser(env).parse_args(["serve"])
    args.env = env
    settings = build_settings(args, "redis://x:1/0")
    assert settings.backups_path == settings.backup_dir and settings.backup_dir.is_absolute()   # type: ignore[union-attr]
    assert str(settings.backup_dir).endswith("rel/backups")
