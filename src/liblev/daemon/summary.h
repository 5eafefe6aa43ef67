/*
 * summary.h - what `lev ps` shows of a run: its doc without its output
 * ("result", which `lev result` reads), with its error cut to
 * LEV_SUMMARY_ERROR_MAX bytes (so no run's size reaches ps and one run
 * cannot crowd out the others) and with Leviath's names beside lev's.
 * It is redacted with the process's secret set (base/secrets.h) before
 * the error is cut, as lev.db's doc is: what ps, lev serve's list and
 * lev.db's summary column show never holds a secret the doc would not.
 *
 * One function decides it: the daemon's runs in memory and lev.db's
 * stored summaries (store.c, written with each doc) both call it.
 */
#pragma once

#include <jansson.h>

#define LEV_SUMMARY_ERROR_MAX 1024

/* DOC's summary as compact JSON text, malloc'ed (NULL only when it cannot be encoded). */
char *lev_run_summary(const json_t *doc);
