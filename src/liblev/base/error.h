/*
 * error.h - the one error convention of liblev.
 *
 * Every fallible function returns an int (0 on success, a negative errno or
 * LEV_E* code on failure) or a pointer (NULL on failure), and takes a
 * caller-owned `struct lev_err *err` as its last argument.  The message lives
 * in a fixed buffer inside the struct, so error paths never allocate and
 * never leak.  `err` may be NULL when the caller does not care.
 *
 * A policy verdict (allow / ask / deny) is never an error: functions that
 * decide return 0 and write the verdict to an out parameter.  The caller turns
 * any error into a deny, in one visible place (fail closed).
 */
#pragma once

#include <stdarg.h>

enum {
	LEV_EPARSE = -1001,	/* malformed config, blueprint, policy, request */
	LEV_EDENIED = -1002,	/* a policy said no (not an internal failure) */
	LEV_EUNSUPP = -1003,	/* a kernel feature is missing and is required */
	LEV_EUSAGE = -1004,	/* the caller's arguments are wrong */
};

#define LEV_ERR_MSG_MAX 512

struct lev_err {
	int code;
	char msg[LEV_ERR_MSG_MAX];
};

#define LEV_ERR_INIT { 0, { 0 } }

/*
 * Record CODE and the formatted message in ERR (when ERR is not NULL) and
 * return CODE, so callers can write
 *	return lev_err_set(err, -errno, "cannot open '%s'", path);
 * CODE must be negative.
 */
int lev_err_set(struct lev_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Like lev_err_set(), appending ": strerror(-CODE)" when CODE is an errno.
 */
int lev_err_errno(struct lev_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Prefix context to the message already in ERR ("loading 'x': <old>") and
 * return ERR's code.  Returns -EINVAL if ERR is NULL or holds no error.
 */
int lev_err_wrap(struct lev_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Forget any recorded error. */
void lev_err_clear(struct lev_err *err);
