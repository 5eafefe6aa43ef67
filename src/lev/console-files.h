/*
 * console-files.h - the web console's files (share/console/), built into
 * lev by scripts/embed-files.py: nothing is read from disk at run time.
 */
#pragma once

#include <stddef.h>

struct lev_console_file {
	const char *path;	/* "/index.html" */
	const char *type;	/* its Content-Type */
	const unsigned char *data;
	size_t len;
};

/* The file served at PATH, or NULL. */
const struct lev_console_file *lev_console_find(const char *path);
