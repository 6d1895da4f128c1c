"""Stellar: the experiment dashboard (snapshot, SVG charts, HTML and terminal views).

Pure except `source` (the store's read API). Imported only by `taugrid-portal` commands.
"""
