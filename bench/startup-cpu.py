#!/usr/bin/env python3
"""bench/startup-cpu.py LEV ARGS... - what a library linked into lev costs each
lev process: exec `LEV ARGS` BENCH_REPS (60) times, alternately as it is and
with LD_PRELOAD=BENCH_PRELOAD (default libmicrohttpd.so.12, which lev linked
before lev serve opened it itself), and print the median wall time and CPU
time (RUSAGE_CHILDREN, user + system) of each.  Nothing is asserted."""
import os
import resource
import statistics
import subprocess
import sys
import time

lev, args = sys.argv[1], sys.argv[2:]
reps = int(os.environ.get("BENCH_REPS", "60"))
lib = os.environ.get("BENCH_PRELOAD", "libmicrohttpd.so.12")


def one(env):
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([lev] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - t0,
            (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime))


plain, pre = [], []
for _ in range(reps):
    plain.append(one(dict(os.environ)))
    pre.append(one(dict(os.environ, LD_PRELOAD=lib)))
print("# %s" % os.getloadavg()[0])
for name, v in (("lev " + " ".join(args), plain), ("the same with %s preloaded" % lib, pre)):
    print("%s: wall %.2f ms, CPU %.2f ms (median of %d)"
          % (name, 1000 * statistics.median(x[0] for x in v),
             1000 * statistics.median(x[1] for x in v), len(v)))
