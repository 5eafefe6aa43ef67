/*
 * test-credstore.c - the file store's text edits (comments kept, a layout
 * lev cannot edit refused with nothing written), and the keychain's
 * failures when libsecret cannot be loaded (keychain.h, credstore.h).
 * The keychain against a real Secret Service: tests/integration/t1300-auth.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "liblev/base/strv.h"
#include "liblev/base/util.h"
#include "liblev/conf/credentials.h"
#include "liblev/conf/credstore.h"
#include "liblev/conf/keychain.h"

static char dir[] = "/tmp/lev-test-credstore.XXXXXX";
static char path[256];

static void put(const char *text)
{
	struct lev_err err = LEV_ERR_INIT;

	assert_int_equal(lev_write_file_atomic(path, text, strlen(text), 0600, &err), 0);
}

static char *get(void)
{
	struct lev_err err = LEV_ERR_INIT;
	char *text = NULL;

	assert_int_equal(lev_read_file(path, 1 << 16, &text, NULL, &err), 0);
	return text;
}

static void test_set_and_remove_keep_the_rest(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore s = { LEV_CRED_FILE, path, NULL };
	char **names = NULL, *text, *key = NULL;
	bool removed;

	(void)state;
	put("# mine\n[providers.openai]  # the work account\napi_key = \"sk-old-111\"\n"
	    "model = \"x\"\n\n[providers.anthropic]\n");
	/* replace a key, add one under an existing table, add a new table */
	assert_int_equal(lev_credstore_set(&s, "openai", "sk-new-222", &err), 0);
	assert_int_equal(lev_credstore_set(&s, "anthropic", "sk-ant-333", &err), 0);
	assert_int_equal(lev_credstore_set(&s, "google", "sk-goo-444", &err), 0);
	text = get();
	assert_string_equal(text, "# mine\n[providers.openai]  # the work account\n"
				  "api_key = \"sk-new-222\"\nmodel = \"x\"\n\n[providers.anthropic]\n"
				  "api_key = \"sk-ant-333\"\n\n[providers.google]\n"
				  "api_key = \"sk-goo-444\"\n");
	free(text);
	assert_int_equal(lev_credentials_lookup(path, "anthropic", &key, &err), 0);
	assert_string_equal(key, "sk-ant-333");
	lev_secret_free(key);
	assert_int_equal(lev_credstore_list(&s, &names, &err), 0);
	assert_int_equal(lev_strv_len(names), 3);
	assert_string_equal(names[0], "anthropic");
	lev_strv_free(names);

	assert_int_equal(lev_credstore_remove(&s, "openai", &removed, &err), 0);
	assert_true(removed);
	assert_int_equal(lev_credstore_remove(&s, "openai", &removed, &err), 0);
	assert_false(removed);
	text = get();
	assert_null(strstr(text, "sk-new-222"));
	assert_non_null(strstr(text, "# the work account\nmodel = \"x\"\n"));
	free(text);
}

static void test_layout_it_cannot_edit_writes_nothing(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore s = { LEV_CRED_FILE, path, NULL };
	static const char shared[] =
		"providers = { openai = { api_key = \"sk-a-1\" }, anthropic = { api_key = \"sk-b-2\" } }\n";
	char *text;

	(void)state;
	put(shared);
	assert_int_equal(lev_credstore_set(&s, "openai", "sk-new-3", &err), -EPROTO);
	assert_non_null(strstr(err.msg, "nothing was written"));
	assert_null(strstr(err.msg, "sk-"));
	text = get();
	assert_string_equal(text, shared);
	free(text);
	/* benign twin: the same keys one per table edit fine */
	put("[providers.openai]\napi_key = \"sk-a-1\"\n[providers.anthropic]\napi_key = \"sk-b-2\"\n");
	assert_int_equal(lev_credstore_set(&s, "openai", "sk-new-3", &err), 0);
}

static void test_bad_input_refused(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	struct lev_credstore s = { LEV_CRED_FILE, path, NULL };

	(void)state;
	put("[providers.openai]\napi_key = \"sk-a-1\"\n");
	assert_int_equal(lev_credstore_set(&s, "Open AI", "sk-x-1", &err), -EINVAL);
	assert_int_equal(lev_credstore_set(&s, "openai", "two words", &err), -EINVAL);
	assert_int_equal(lev_credstore_set(&s, "openai", "sk\"q", &err), -EINVAL);
	chmod(path, 0644);
	assert_int_equal(lev_credstore_set(&s, "openai", "sk-x-1", &err), -EPERM);
	assert_non_null(strstr(err.msg, "chmod 600"));
	chmod(path, 0600);
	assert_false(lev_keychain_name_valid(""));
	assert_false(lev_keychain_name_valid("a/b"));
	assert_true(lev_keychain_name_valid("my-local_2"));
}

static void test_no_libsecret(void **state)
{
	struct lev_err err = LEV_ERR_INIT;
	char *key = NULL;

	(void)state;
	setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus", 1);
	lev_keychain_set_soname("libnot-a-secret-lev-test.so.0");
	assert_int_equal(lev_keychain_lookup("openai", &key, &err), LEV_EUNSUPP);
	assert_null(key);
	assert_non_null(strstr(err.msg, "install libsecret-1-0"));
	assert_non_null(strstr(err.msg, "credential_store = \"file\""));
	/* a run's lookup fails the same way, never falling back to the file */
	put("[providers.openai]\napi_key = \"sk-file-1\"\n");
	{
		enum lev_key_source src;

		unsetenv("LEV_TEST_NO_KEY");
		assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_NO_KEY", NULL, path, true,
						     &key, &src, &err),
				 LEV_EUNSUPP);
		assert_null(key);
		/* benign twin: the file store reads it */
		assert_int_equal(lev_api_key_resolve("openai", "LEV_TEST_NO_KEY", NULL, path, false,
						     &key, &src, &err),
				 0);
		assert_string_equal(key, "sk-file-1");
		assert_int_equal(src, LEV_KEY_FILE);
		lev_secret_free(key);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_and_remove_keep_the_rest),
		cmocka_unit_test(test_layout_it_cannot_edit_writes_nothing),
		cmocka_unit_test(test_bad_input_refused),
		cmocka_unit_test(test_no_libsecret),
	};
	int r;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/credentials.toml", dir);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	rmdir(dir);
	return r;
}
