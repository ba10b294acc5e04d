"""SQL both stores run alike, written once with `?` placeholders (dialect.py says how).

Shared: the document reads and the document row's writes (documents.py), chat
(chat.py), the context and extraction caches (caches.py), the graph's reads
(graph_read.py) and its write path (graph_write.py). Each is a mixin of the store's
role methods, on the store's own `_read()`/`_write()` transactions (base.py).
"""
