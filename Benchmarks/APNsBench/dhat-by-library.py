"""Allocations per notification by library, from two DHAT files (see count-allocations.sh).

    python3 dhat-by-library.py SMALL.json LARGE.json NOTIFICATION_DIFFERENCE MODE
"""
import json
import sys

# Frames that only pass an allocation on; the first frame that is none of these is the
# one that asked for the memory.
ALLOCATOR = (
    "malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "operator new",
    "swift_slowAlloc", "swift_allocObject", "swift_allocBox", "swift_allocEmptyBox", "_swift_allocObject_",
    "nghttp2_mem_malloc", "nghttp2_mem_calloc", "nghttp2_mem_realloc", "default_malloc", "default_calloc",
    "default_realloc", "CRYPTO_malloc", "CRYPTO_zalloc", "CRYPTO_realloc",
)


def library(frame):
    """nghttp2, OpenSSL or SDK for a frame text such as `0x1: f (in /usr/lib/libnghttp2.so.14)`."""
    if "libnghttp2" in frame:
        return "nghttp2"
    if "libssl" in frame or "libcrypto" in frame:
        return "OpenSSL"
    return "SDK"


def counts(path):
    with open(path) as file:
        data = json.load(file)
    table = data["ftbl"]
    totals = {"SDK": 0, "nghttp2": 0, "OpenSSL": 0}
    for point in data["pps"]:
        owner = "SDK"
        for index in point["fs"]:
            frame = table[index]
            name = frame.split(": ", 1)[-1]
            if any(name.startswith(word) or (" " + word) in name for word in ALLOCATOR):
                continue
            owner = library(frame)
            break
        totals[owner] += point["tb"]
    return totals


small, large = counts(sys.argv[1]), counts(sys.argv[2])
difference = int(sys.argv[3])
per = {key: (large[key] - small[key]) / difference for key in small}
total = sum(per.values())
print(f"{sys.argv[4]:<7} {total:12.2f} {per['SDK']:10.2f} {per['nghttp2']:10.2f} {per['OpenSSL']:10.2f}")
