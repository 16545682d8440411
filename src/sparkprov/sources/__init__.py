"""Sources: which rows a capture read and how each keeps one id (``identity``), and text
read in place, numbered by input split (``text``). Below capture, above the store.
"""
