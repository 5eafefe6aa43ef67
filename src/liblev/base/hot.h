/*
 * hot.h - marks for the code every tool call runs (the gate chain and what
 * it calls), which must stay small in the instruction cache.
 *
 * LEV_COLD on a function that builds a refusal, an error or another rare
 * text: the compiler keeps it out of line, away from the per-call code, and
 * takes a branch that calls it as unlikely.  LEV_NOINLINE on a gate only
 * some calls meet, so it does not spread the common path over more cache
 * lines.  lev_likely() / lev_unlikely() on a branch whose side is known.
 * bench/cg-gates.sh measures the effect (instructions and I1 misses).
 */
#pragma once

#define LEV_COLD __attribute__((cold, noinline))
#define LEV_NOINLINE __attribute__((noinline))
#define lev_likely(x) __builtin_expect(!!(x), 1)
#define lev_unlikely(x) __builtin_expect(!!(x), 0)
