"""The example project's spiders: ``demo`` and ``sitemap_demo``."""
