/*
 * fuzz-apibody.c - lev_apibody_parse(), the one reader of lev serve's
 * request bodies, on arbitrary bytes.
 *
 * Besides "no crash, no leak, no UB": a body is accepted only when it is a
 * JSON object whose every key is a declared field of its declared type and
 * that holds every required field; a refusal is one line naming why; and
 * lev_apibody_token_eq() agrees with strcmp() on the input's two halves.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "liblev/serve/apibody.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                  \
	do {                                                                      \
		if (!(x))                                                         \
			abort();                                                  \
	} while (0)

static const struct lev_apibody_field fields[] = {
	{ "request", LEV_APIBODY_STRING, true },
	{ "answer", LEV_APIBODY_STRING, false },
	{ "yolo", LEV_APIBODY_BOOL, false },
	{ "choice", LEV_APIBODY_UINT, false },
	{ "allow", LEV_APIBODY_STRINGS, false },
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

static void check_accepted(const json_t *j)
{
	const char *key;
	json_t *v;

	CHECK(json_is_object(j));
	CHECK(json_is_string(json_object_get(j, "request")));
	json_object_foreach((json_t *)j, key, v) {
		size_t i;

		for (i = 0; i < N_FIELDS && strcmp(fields[i].name, key); i++)
			;
		CHECK(i < N_FIELDS);
		switch (fields[i].type) {
		case LEV_APIBODY_STRING:
			CHECK(json_is_string(v));
			break;
		case LEV_APIBODY_BOOL:
			CHECK(json_is_boolean(v));
			break;
		case LEV_APIBODY_UINT:
			CHECK(json_is_integer(v) && json_integer_value(v) >= 0);
			break;
		case LEV_APIBODY_STRINGS:
			CHECK(json_is_array(v));
			for (size_t k = 0; k < json_array_size(v); k++)
				CHECK(json_is_string(json_array_get(v, k)));
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lev_err err = LEV_ERR_INIT;
	json_t *j = NULL;
	int r = lev_apibody_parse((const char *)data, size, fields, N_FIELDS, &j, &err);

	if (r == 0) {
		check_accepted(j);
		json_decref(j);
	} else {
		CHECK(r == LEV_EPARSE || r == -EMSGSIZE);
		CHECK(j == NULL && err.msg[0] && !strchr(err.msg, '\n'));
	}
	if (size >= 2 && !memchr(data, '\0', size)) {
		/* not strndup(): the sanitizer's strndup reads one byte past an unterminated input */
		char *s = malloc(size + 1);
		size_t half = size / 2;
		char keep;

		if (!s)
			return 0;
		memcpy(s, data, size);
		s[size] = '\0';
		keep = s[half];
		s[half] = '\0';
		CHECK(lev_apibody_token_eq(s, s + half + 1) == !strcmp(s, s + half + 1));
		CHECK(lev_apibody_token_eq(s, s));
		s[half] = keep;
		free(s);
	}
	return 0;
}
