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
    store = store_for(RFC9309_STORAGE="redis://:pw@127.0.0.1:1/3", RFC9309_REDIS_PREFIX="crawl42:")
    assert store.shared and store.prefix == "crawl42:"
    assert store.url == "redis://:***@127.0.0.1:1/3"  # no password in messages


def test_a_class_path_still_works_and_nonsense_is_refused():
    store = store_for(RFC9309_STORAGE="scrapy_rfc9309.storage.memory.MemoryStorage", RFC9309_CACHE_MAX_ORIGINS=3)
    assert isinstance(store, MemoryStorage)
    for bad in ("mysql://db/robots", "memcached", "scrapy_rfc9309.storage.nowhere.Store"):
        with pytest.raises(ValueError, match="RFC9309_STORAGE"):
            store_for(RFC9309_STORAGE=bad)
    with pytest.raises(ValueError, match="RFC9309_STALE_IF_UNREACHABLE"):
        Rfc9309Settings.from_settings({"RFC9309_STALE_IF_UNREACHABLE": "sometimes"})
    assert Rfc9309Settings.from_settings({"RFC9309_STALE_IF_UNREACHABLE": "false"}).stale_if_unreachable is False


def test_display_url_masks_passwords():
    assert display_url("redis://user:secret@host:6379/0") == "redis://user:***@host:6379/0"
    assert display_url("rediss://:secret@host/0") == "rediss://:***@host/0"
    assert display_url("redis://host:6379/0") == "redis://host:6379/0"
    assert display_url("sqlite:///var/cache/robots.sqlite") == "sqlite:///var/cache/robots.sqlite"
