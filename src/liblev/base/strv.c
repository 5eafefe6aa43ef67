#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

size_t lev_strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

char **lev_strv_push_take(char **v, char *s)
{
	size_t n = lev_strv_len(v);

	v = xreallocarray(v, n + 2, sizeof(*v));
	v[n] = s;
	v[n + 1] = NULL;
	return v;
}

char **lev_strv_push(char **v, const char *s)
{
	return lev_strv_push_take(v, xstrdup(s));
}

bool lev_strv_contains(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (!strcmp(*v, s))
			return true;
	return false;
}

char **lev_strv_copy(char *const *v)
{
	char **r = NULL;

	for (; v && *v; v++)
		r = lev_strv_push(r, *v);
	return r;
}

char **lev_strv_free(char **v)
{
	char **p;

	for (p = v; p && *p; p++)
		free(*p);
	free(v);
	return NULL;
}

char **lev_strv_from_json(const json_t *arr)
{
	char **v = NULL;
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e)
		if (json_is_string(e))
			v = lev_strv_push(v, json_string_value(e));
	return v;
}
