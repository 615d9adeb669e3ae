"""Internal addresses and private origins (scrapy_rfc9309.addresses): what a
public origin's robots.txt may not lead the crawler to."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.addresses import AddressPolicy, parse_networks

DEFAULT = AddressPolicy()


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
     "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:c0a8:101::1", "224.0.0.1"],
)  # fmt: skip
def test_internal_by_default(address):
    assert DEFAULT.internal(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_by_default(address):
    assert not DEFAULT.internal(address)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1:6379/", "127.0.0.1"),
        ("http://127.1/", "127.1"),  # legacy forms a resolver accepts
        ("http://0x7f.0.0.1/", "0x7f.0.0.1"),
        ("http://2130706433/", "2130706433"),
        ("http://[::1]:8080/", "::1"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://example.com/", None),  # a name: decided on the address it resolves to
        ("http://8.8.8.8/", None),
    ],
)
def test_internal_literals_are_known_before_connecting(url, host):
    assert DEFAULT.internal_literal(url) == host


@pytest.mark.parametrize(
    ("origin", "private"),
    [
        ("https://example.com:443", False),
        ("http://8.8.8.8:80", False),
        ("http://10.0.0.5:80", True),
        ("http://[fd00::1]:80", True),
        ("http://localhost:8080", True),
        ("http://intranet:80", True),
        ("https://wiki.corp:443", True),
        ("https://build.internal:443", True),
        ("http://printer.local:80", True),
        ("http://router.home.arpa:80", True),
    ],
)
def test_private_origins(origin, private):
    assert DEFAULT.private_origin(origin) is private


def test_a_list_of_networks_replaces_the_default():
    policy = AddressPolicy(parse_networks("127.0.0.2/32, fd00::/8", "RFC9309_INTERNAL_NETWORKS"))
    assert policy.internal("127.0.0.2") and policy.internal("fd00::5")
    assert not policy.internal("127.0.0.1") and not policy.private_origin("http://127.0.0.1:80")
    assert parse_networks('["10.0.0.0/8"]', "X") == parse_networks(["10.0.0.0/8"], "X")
    with pytest.raises(ValueError, match="RFC9309_INTERNAL_NETWORKS"):
        parse_networks(["10.0.0.0/33"], "RFC9309_INTERNAL_NETWORKS")
