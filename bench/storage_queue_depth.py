#!/usr/bin/env python3
"""How much several requests in flight gain over one at a time on this machine's storage.

poet's FilePager runs up to two O_DIRECT requests at a time, one per I/O thread, and the
simulator models one transfer queue (docs/SIMULATOR.md). This times N requests of one size written,
then read, through O_DIRECT with 1, 2 and 4 threads, each with its own aligned buffer and its
own part of the file, and prints the time per request: what a deeper queue would buy
(docs/BENCHMARKS.md, "where the steps wait").

    python3 bench/storage_queue_depth.py [KiB per request, default 128] [directory, default .]
"""
import mmap
import os
import sys
import threading
import time

size = int(sys.argv[1]) * 1024 if len(sys.argv) > 1 else 128 * 1024
directory = sys.argv[2] if len(sys.argv) > 2 else "."
requests = 400
path = os.path.join(directory, f"poet-queue-depth-{os.getpid()}.bin")
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
try:
    os.ftruncate(fd, size * requests)

    def transfer(part, count, write):
        buffer = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs
        buffer.write(b"x" * size)
        for i in range(count):
            offset = (part * count + i) * size
            if write:
                os.pwritev(fd, [buffer], offset)
            else:
                os.preadv(fd, [buffer], offset)

    for write in (True, False):
        for threads in (1, 2, 4):
            best = float("inf")
            for _ in range(3):  # the best of 3: the machine's own noise only slows a run
                workers = [threading.Thread(target=transfer, args=(t, requests // threads, write)) for t in range(threads)]
                began = time.perf_counter()
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
                best = min(best, time.perf_counter() - began)
            kind = "write" if write else "read "
            print(f"{kind} {size // 1024} KiB, {threads} in flight: {1e6 * best / requests:.1f} us a request")
finally:
    os.close(fd)
    os.remove(path)
