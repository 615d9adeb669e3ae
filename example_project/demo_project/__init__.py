"""Example project for scrapy-rfc9309: a demo spider crawling an embedded loopback site."""
