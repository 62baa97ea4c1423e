# fabric/: the UCX layer (filled in by the fabric work)
