#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "liblev/base/error.h"

static void vset(struct lev_err *err, int code, const char *fmt, va_list ap)
{
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int lev_err_set(struct lev_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int lev_err_errno(struct lev_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	if (!err)
		return code;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	if (code < 0 && code > -4096 && len < sizeof(err->msg))
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(-code));
	return code;
}

int lev_err_wrap(struct lev_err *err, const char *fmt, ...)
{
	char old[LEV_ERR_MSG_MAX];
	size_t len;
	va_list ap;

	if (!err || err->code == 0)
		return -EINVAL;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	/* append ": OLD", truncating; by hand so gcc sees no truncated format */
	len = strlen(err->msg);
	for (size_t i = 0; i < 2 && len + 1 < sizeof(err->msg); i++)
		err->msg[len++] = ": "[i];
	for (size_t i = 0; old[i] && len + 1 < sizeof(err->msg); i++)
		err->msg[len++] = old[i];
	err->msg[len] = '\0';
	return err->code;
}

void lev_err_clear(struct lev_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}
