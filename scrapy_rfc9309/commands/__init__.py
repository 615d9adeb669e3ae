"""Scrapy commands added by scrapy-rfc9309 (registered through the
``scrapy.commands`` entry point in ``setup.cfg``).

Scrapy imports every registered command on each ``scrapy`` invocation, so the
command modules keep their top-level imports light.
"""
