"""RFC9309_STORAGE (and JOBDIR) -> which store, and the related settings."""

from __future__ import annotations

import os

import pytest

from scrapy_rfc9309.settings import Rfc9309Settings
from scrapy_rfc9309.storage import MemoryStorage, build_storage, display_url
from scrapy_rfc9309.storage.sqlite import SqliteStorage


def store_for(**settings):
    return build_storage(Rfc9309Settings.from_settings(settings))


def test_memory_is_the_default():
    config = Rfc9309Settings.from_settings({})
    assert config.storage == "memory"
    assert config.stale_if_unreachable is True and config.redis_prefix == "rfc9309:"
    store = store_for(RFC9309_CACHE_MAX_ORIGINS=7)
    assert isinstance(store, MemoryStorage) and not store.shared


def test_sqlite_urls_name_a_file(tmp_path, monkeypatch):
    absolute = store_for(RFC9309_STORAGE=f"sqlite://{tmp_path}/robots.sqlite")
    assert isinstance(absolute, SqliteStorage) and absolute.path == f"{tmp_path}/robots.sqlite"
    assert absolute.url == f"sqlite://{tmp_path}/robots.sqlite"
    monkeypatch.chdir(tmp_path)
    relative = store_for(RFC9309_STORAGE="sqlite://cache/robots.sqlite")
    assert relative.path == os.path.join(str(tmp_path), "cache", "robots.sqlite")
    with pytest.raises(ValueError, match="RFC9309_STORAGE"):
        store_for(RFC9309_STORAGE="sqlite://")


def test_jobdir_chooses_a_sqlite_file_unless_the_storage_is_set(tmp_path):
    config = Rfc9309Settings.from_settings({"JOBDIR": str(tmp_path / "job")})
    assert config.storage == f"sqlite://{tmp_path}/job/rfc9309-robots.sqlite"
    assert build_storage(config).path == f"{tmp_path}/job/rfc9309-robots.sqlite"
    explicit = Rfc9309Settings.from_settings({"JOBDIR": str(tmp_path), "RFC9309_STORAGE": "memory"})
    assert explicit.storage == "memory"


def test_redis_urls_build_a_shared_store_without_connecting():
    pytest.importorskip("redis", reason="the optional redis extra is not installed")
    store = store_for(RFC9309_STORAGE="redis://:pw@127.0.0.1:1/3")
    assert store.shared and store.prefix == "rfc9309:"
    store = store_for(RFC9309_STORAGE="redis://:pw@127.0.0.1:1/3?prefix=crawl42:")
    assert store.shared and store.prefix == "crawl42:"
    assert store.url == "redis://:***@127.0.0.1:1/3"  # no password in messages


def test_the_key_prefix_is_a_parameter_of_the_url_that_redis_py_never_sees():
    redis = pytest.importorskip("redis.asyncio", reason="the optional redis extra is not installed")
    url = "redis://127.0.0.1:1/3?socket_timeout=2&prefix=my%20job%3A&password=secret"
    config = Rfc9309Settings.from_settings({"RFC9309_STORAGE": url})
    assert config.redis_prefix == "my job:"
    assert config.storage == "redis://127.0.0.1:1/3?socket_timeout=2&password=secret"
    store = build_storage(config)
    assert store.prefix == "my job:" and "prefix" not in store.url and "secret" not in store.url
    # redis-py builds its connections from what is left (an unknown parameter would be
    # passed to them, and refused: "unexpected keyword argument 'prefix'")
    pool = redis.BlockingConnectionPool.from_url(config.storage)
    connection = pool.make_connection()
    assert (connection.db, connection.socket_timeout, connection.password) == (3, 2.0, "secret")
    # the store strips it too when handed the URL as written
    from scrapy_rfc9309.storage.redis import RedisStorage

    assert RedisStorage(url).prefix == "my job:"
    assert Rfc9309Settings.from_settings({"RFC9309_STORAGE": "redis://h:1/0?prefix=a:"}).storage == "redis://h:1/0"


def test_a_bad_prefix_is_one_line_naming_the_storage_setting_with_its_password_masked():
    pytest.importorskip("redis", reason="the optional redis extra is not installed")
    for url, says in (
        ("redis://:pw@h:1/0?prefix=", "RFC9309_STORAGE='redis://:***@h:1/0?prefix=': give one non-empty prefix"),
        ("redis://:pw@h:1/0?prefix=a&prefix=b", "RFC9309_STORAGE='redis://:***@h:1/0?prefix=a&prefix=b': give one"),
        (
            "redis+cluster://:pw@h:1?prefix=a{b}:",
            "RFC9309_STORAGE='redis+cluster://:***@h:1': the key prefix 'a{b}:' has braces",
        ),
    ):
        with pytest.raises(ValueError) as raised:
            Rfc9309Settings.from_settings({"RFC9309_STORAGE": url})
        assert str(raised.value).startswith(says), raised.value
        assert "pw" not in str(raised.value) and "\n" not in str(raised.value)


def test_scrapy_redis_url_keeps_the_default_prefix():
    pytest.importorskip("scrapy_redis", reason="the optional cluster extra is not installed")
    from scrapy.settings import Settings

    url = "redis://:pw@10.0.0.5:6380/2?socket_timeout=3"
    settings = Settings({"SCHEDULER": "scrapy_redis.scheduler.Scheduler", "REDIS_URL": url})
    config = Rfc9309Settings.from_settings(settings)
    assert (config.storage, config.redis_prefix) == (url, "rfc9309:")
    assert build_storage(config).prefix == "rfc9309:"
    settings.set("RFC9309_STORAGE", url + "&prefix=sr:")
    config = Rfc9309Settings.from_settings(settings)
    assert (config.storage, config.redis_prefix) == (url, "sr:")


def test_a_class_path_still_works_and_nonsense_is_refused():
    store = store_for(RFC9309_STORAGE="scrapy_rfc9309.storage.memory.MemoryStorage", RFC9309_CACHE_MAX_ORIGINS=3)
    assert isinstance(store, MemoryStorage)
    for bad in ("mysql://db/robots", "memcached", "scrapy_rfc9309.storage.nowhere.Store"):
        with pytest.raises(ValueError, match="RFC9309_STORAGE"):
            store_for(RFC9309_STORAGE=bad)


def test_display_url_masks_passwords():
    assert display_url("redis://user:secret@host:6379/0") == "redis://user:***@host:6379/0"
    assert display_url("rediss://:secret@host/0") == "rediss://:***@host/0"
    assert display_url("redis://host:6379/0") == "redis://host:6379/0"
    assert display_url("sqlite:///var/cache/robots.sqlite") == "sqlite:///var/cache/robots.sqlite"
