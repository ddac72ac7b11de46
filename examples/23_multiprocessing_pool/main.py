"""The Mandelbrot set's escape counts, split over a multiprocessing.Pool.

    python main.py                      # Pool(2), started by fork
    python main.py --context spawn      # or spawn, or forkserver
    python main.py --time               # a 4x larger image at max_iter 1000, timed:
                                        # 1 process against the pool
    PPY_IMPORT=python python main.py

Each worker imports `mandel` (spawn, forkserver) or inherits it (fork) and
finds the parent's build in the cache, so the module is built once in all.
"""

import multiprocessing
import sys
import time

import ppy  # noqa: F401  (first: .ppy modules import natively)

import mandel

WIDTH, HEIGHT, MAX_ITER, CHUNK = 240, 160, 200, 10
if "--time" in sys.argv:
    WIDTH, HEIGHT, MAX_ITER = 480, 320, 1000


def work(first):
    return first, mandel.rows(first, CHUNK, WIDTH, HEIGHT, MAX_ITER)


def main():
    context = sys.argv[sys.argv.index("--context") + 1] if "--context" in sys.argv else "fork"
    starts = list(range(0, HEIGHT, CHUNK))
    begin = time.perf_counter()
    serial = sum(mandel.rows(first, CHUNK, WIDTH, HEIGHT, MAX_ITER) for first in starts)
    middle = time.perf_counter()
    with multiprocessing.get_context(context).Pool(2) as pool:
        parts = dict(pool.map(work, starts))
    end = time.perf_counter()
    print(f"{len(parts)} chunks of {CHUNK} rows, {WIDTH}x{HEIGHT}, max_iter {MAX_ITER}")
    print(f"rows 0-9: {parts[0]}, rows 80-89: {parts[80]}, rows 150-159: {parts[150]}")
    print(f"total escape count: pool {sum(parts.values())}, one process {serial}")
    if "--time" in sys.argv:
        print(f"one process {(middle - begin) * 1e3:.1f} ms, Pool(2) ({context}) {(end - middle) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
