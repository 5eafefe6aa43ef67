/*
 * sbx-pool - drive a run's pool of warm containers the way the runtime
 * does, and print what happened, for t4500:
 *
 *	sbx-pool RUN_ID WORKDIR ENGINE IMAGE [--then-fail]
 *
 * Makes three container sandboxes in one pool: two with identical configs
 * (network off) and one with the network on, runs `lev-probe hostname` in
 * each, and prints
 *	pool=N			containers the pool holds
 *	same=yes|no		whether the two identical configs share a container
 *	distinct=yes|no		whether the third got its own
 *	running=N		containers with label lev.run=RUN_ID (engine ps)
 * With --then-fail a fourth sandbox asks for a refused mount, which fails,
 * and a command with an oversize argv fails to start; the pool is freed
 * on that error path, as the runtime does.  Exit 0 when everything ran.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "liblev/sandbox/sandbox.h"
#include "liblev/base/strv.h"
#include "liblev/base/xalloc.h"

extern char **environ;

static char *run_capture(struct lev_sandbox *sb, char *const *argv)
{
	struct lev_sandbox_proc *p = NULL;
	struct lev_sandbox_result res;
	struct lev_err err = LEV_ERR_INIT;
	char *out;

	if (lev_sandbox_spawn(sb, argv, environ, NULL, NULL, NULL, &p, &err) < 0 ||
	    lev_sandbox_wait(p, &res, &err) < 0) {
		fprintf(stderr, "sbx-pool: %s\n", err.msg);
		lev_sandbox_proc_free(p);
		return NULL;
	}
	lev_sandbox_proc_free(p);
	out = res.out ? xstrdup(res.out) : xstrdup("");
	lev_sandbox_result_release(&res);
	out[strcspn(out, "\n")] = '\0';
	return out;
}

static struct lev_sandbox *make(const char *engine, const char *image, bool network,
				const char *mount, struct lev_sandbox_opts *o, struct lev_err *err)
{
	struct lev_sandbox_spec s;
	struct lev_sandbox *sb = NULL;

	memset(&s, 0, sizeof(s));
	s.present = s.has_kind = s.has_network = s.has_on_unavailable = true;
	s.kind = LEV_SANDBOX_CONTAINER;
	s.network = network;
	s.on_unavailable = LEV_ON_UNAVAILABLE_ERROR;
	s.engine = xstrdup(engine);
	s.image = xstrdup(image);
	if (mount)
		s.mounts = lev_strv_push(NULL, mount);
	if (lev_sandbox_new(&s, o, &sb, err) < 0)
		sb = NULL;
	lev_sandbox_spec_release(&s);
	return sb;
}

int main(int argc, char **argv)
{
	struct lev_sandbox_opts o = LEV_SANDBOX_OPTS_INIT;
	struct lev_sandbox_pool *pool = NULL;
	struct lev_sandbox *a, *b, *c, *bad;
	struct lev_err err = LEV_ERR_INIT;
	char *hostname_argv[] = { (char *)"lev-probe", (char *)"hostname", NULL };
	char *ha, *hb, *hc;
	bool then_fail;
	int rc = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: sbx-pool RUN_ID WORKDIR ENGINE IMAGE [--then-fail]\n");
		return 2;
	}
	then_fail = argc > 5 && !strcmp(argv[5], "--then-fail");
	if (lev_sandbox_pool_new(argv[1], &pool, &err) < 0)
		return 1;
	o.workdir = argv[2];
	o.pool = pool;
	o.oci_helper = getenv("LEV_OCI_HELPER");

	a = make(argv[3], argv[4], false, NULL, &o, &err);
	b = a ? make(argv[3], argv[4], false, NULL, &o, &err) : NULL;
	c = b ? make(argv[3], argv[4], true, NULL, &o, &err) : NULL;
	if (!c) {
		fprintf(stderr, "sbx-pool: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	printf("pool=%zu\n", lev_sandbox_pool_size(pool));
	ha = run_capture(a, hostname_argv);
	hb = run_capture(b, hostname_argv);
	hc = run_capture(c, hostname_argv);
	if (!ha || !hb || !hc || !*ha) {
		rc = 1;
	} else {
		printf("same=%s\n", !strcmp(ha, hb) ? "yes" : "no");
		printf("distinct=%s\n", strcmp(ha, hc) ? "yes" : "no");
	}
	free(ha);
	free(hb);
	free(hc);

	{
		/* ask the engine, from the host (kind none) */
		struct lev_sandbox_spec none;
		struct lev_sandbox *host = NULL;
		struct lev_sandbox_opts ho = LEV_SANDBOX_OPTS_INIT;
		char *filter = xasprintf("label=lev.run=%s", argv[1]);
		char *ps[] = { argv[3], (char *)"ps", (char *)"-q", (char *)"--filter", filter, NULL };
		char *out;

		memset(&none, 0, sizeof(none));
		none.present = none.has_kind = true;
		none.kind = LEV_SANDBOX_NONE;
		ho.workdir = argv[2];
		ho.env.mode = LEV_SHELL_ENV_INHERIT;
		ho.limits.output_max = 1 << 20;
		if (lev_sandbox_new(&none, &ho, &host, &err) == 0) {
			struct lev_sandbox_proc *p = NULL;
			struct lev_sandbox_result res;

			if (lev_sandbox_spawn(host, ps, environ, NULL, NULL, NULL, &p, &err) == 0 &&
			    lev_sandbox_wait(p, &res, &err) == 0) {
				int n = 0;

				for (out = res.out; out && *out; out++)
					n += *out == '\n';
				printf("running=%d\n", n);
				lev_sandbox_result_release(&res);
			}
			lev_sandbox_proc_free(p);
			lev_sandbox_free(host);
		}
		free(filter);
	}

	if (then_fail) {
		char **huge = NULL;
		struct lev_sandbox_proc *p = NULL;
		int i;

		bad = make(argv[3], argv[4], false, "/etc", &o, &err);
		printf("bad-mount=%s\n", bad ? "accepted" : err.msg);
		lev_sandbox_free(bad);
		huge = lev_strv_push(huge, "lev-probe");
		for (i = 0; i < 3000; i++)
			huge = lev_strv_push_take(huge, xasprintf("%0500d", i));
		if (lev_sandbox_spawn(a, huge, environ, NULL, NULL, NULL, &p, &err) < 0)
			printf("huge-argv=%s\n", err.msg);
		else
			printf("huge-argv=accepted\n");
		lev_sandbox_proc_free(p);
		lev_strv_free(huge);
	}
	fflush(stdout);
out:
	lev_sandbox_free(a);
	lev_sandbox_free(b);
	lev_sandbox_free(c);
	if (lev_sandbox_pool_teardown(pool, &err) < 0) {
		fprintf(stderr, "sbx-pool: %s\n", err.msg);
		rc = 1;
	}
	lev_sandbox_pool_free(pool);
	printf("freed\n");
	return rc;
}
