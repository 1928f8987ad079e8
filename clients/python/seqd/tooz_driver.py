"""The tooz driver is a package of its own now: seqd-tooz (contrib/tooz)."""

raise ImportError(
    "seqd.tooz_driver moved to its own package, seqd-tooz (contrib/tooz): install it beside seqd "
    "(pip install ./contrib/tooz) and get_coordinator(\"seqd://HOST:PORT\", member) finds the driver; "
    "its module is seqd_tooz"
)
