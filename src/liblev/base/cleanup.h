/*
 * cleanup.h - scope-bound cleanup (systemd, crun).
 *
 * Variables marked with a _cleanup_ attribute must be initialised at their
 * declaration.  Hand ownership away with TAKE_PTR()/TAKE_FD(), which return
 * the value and reset the variable in the same expression.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void lev_freep(void *p)
{
	free(*(void **)p);
}

static inline void lev_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void lev_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(lev_freep)
#define _cleanup_close_ _cleanup_(lev_closep)
#define _cleanup_fclose_ _cleanup_(lev_fclosep)

/* Define a cleanup function NAMEp for a `TYPE *` freed by FUNC(TYPE *). */
#define DEFINE_CLEANUP_FUNC(type, func)                                   \
	static inline void func##p(type **p)                              \
	{                                                                 \
		if (*p)                                                   \
			func(*p);                                         \
	}

#define TAKE_PTR(p)                                                       \
	({                                                                \
		__typeof__(p) _tp_ = (p);                                 \
		(p) = NULL;                                               \
		_tp_;                                                     \
	})

#define TAKE_FD(fd)                                                       \
	({                                                                \
		int _tf_ = (fd);                                          \
		(fd) = -1;                                                \
		_tf_;                                                     \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
