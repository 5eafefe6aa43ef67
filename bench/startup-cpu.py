#!/usr/bin/env python3
"""bench/startup-cpu.py LEV ARGS... - what a library linked into lev costs each
lev process: exec `LEV ARGS` BENCH_REPS (60) times, alternately as it is and
with LD_PRELOAD=BENCH_PRELOAD (default libmicrohttpd.so.12, which lev linked
before lev serve opened it itself), and print the median wall time and CPU
time (RUSAGE_CHILDREN, user + system) of each.  With BENCH_BASE=LEV2 the
second column is LEV2 ARGS instead (an in-run baseline: another build of lev,
alternated with the first; BENCH_BASE_ARGS overrides its ARGS, split on
spaces).  Nothing is asserted."""
import os
import resource
import statistics
import subprocess
import sys
import time

lev, args = sys.argv[1], sys.argv[2:]
reps = int(os.environ.get("BENCH_REPS", "60"))
lib = os.environ.get("BENCH_PRELOAD", "libmicrohttpd.so.12")
base = os.environ.get("BENCH_BASE")
base_args = os.environ["BENCH_BASE_ARGS"].split() if "BENCH_BASE_ARGS" in os.environ else args


def one(env, argv=None):
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv or [lev] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - t0,
            (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime))


plain, pre = [], []
for _ in range(reps):
    plain.append(one(dict(os.environ)))
    if base:
        pre.append(one(dict(os.environ), [base] + base_args))
    else:
        pre.append(one(dict(os.environ, LD_PRELOAD=lib)))
print("# %s" % os.getloadavg()[0])
other = ("%s %s" % (base, " ".join(base_args)) if base
         else "the same with %s preloaded" % lib)
for name, v in (("lev " + " ".join(args), plain), (other, pre)):
    print("%s: wall %.2f ms, CPU %.2f ms (median of %d)"
          % (name, 1000 * statistics.median(x[0] for x in v),
             1000 * statistics.median(x[1] for x in v), len(v)))
