/*
 * cmd_respond.c - lev respond [REQUEST_ID] [VALUE]: answer what a run waits on.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lev/cmd.h"
#include "lev/respond.h"
#include "liblev/base/buf.h"
#include "liblev/base/cleanup.h"
#include "liblev/base/sha256.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/base/xalloc.h"
#include "liblev/daemon/proto.h"

const char lev_usage_respond[] =
	"usage: lev respond [REQUEST_ID [VALUE]] [--approve|--deny] [--stage|--session]\n"
	"                   [--choice N] [--text TEXT] [--digest HEX] [--json]\n"
	"   or: lev respond [--page N] [--json]\n"
	"\n"
	"Answer a question a run is waiting on.  With no REQUEST_ID, list the open\n"
	"ones, every one in full (with --json: an array, as Leviath lists them),\n"
	"asked for in pages.  A tool approval shows the whole call first, and an\n"
	"approval is bound to the call as shown; a deny is taken whatever the call is.\n"
	"\n"
	"  --approve        approve a tool call (once), or say yes to a confirm question\n"
	"  --deny           deny it, or say no\n"
	"  --stage          with --approve: allow what this call runs for the rest of\n"
	"                   the stage (tool approvals only)\n"
	"  --session, --run with --approve: allow it for the rest of the run\n"
	"  --choice N       pick option N (counted from 0) of a multiple-choice question\n"
	"  --text TEXT      a free-text answer (VALUE is the same)\n"
	"  --digest HEX     approve the call whose digest (from --json) is HEX: the\n"
	"                   run refuses the approval when it asks about another call\n"
	"                   (a deny needs no digest)\n"
	"  --page N         requests per page of the list (default 500; a page also\n"
	"                   stops at half a frame, since a call may be long)\n"
	"  --json           list the open requests as JSON\n";

static void show(const char *s)
{
	struct lev_buf b = LEV_BUF_INIT;

	lev_termtext_add(&b, s, strlen(s));
	fputs(b.buf, stdout);
	lev_buf_release(&b);
}

/*
 * Leviath's kind of the open request Q: tool_approval, free_text,
 * multiple_choice or confirm (lev's own word stays as lev_kind).
 */
static const char *leviath_kind(const json_t *q)
{
	const char *qk = lev_json_str(q, "question_kind");

	if (!lev_streq(lev_json_str(q, "kind"), "question"))
		return "tool_approval";
	return lev_streq(qk, "choice") ? "multiple_choice" : lev_streq(qk, "confirm") ? "confirm"
										      : "free_text";
}

/* Request Q as `lev respond --json` lists it: lev's fields and Leviath's names (new reference). */
static json_t *leviath_request(const json_t *q)
{
	json_t *o = json_copy((json_t *)q);

	json_object_set(o, "lev_kind", json_object_get(q, "kind"));
	json_object_set_new(o, "kind", json_string(leviath_kind(q)));
	json_object_set(o, "agent_id", json_object_get(q, "run"));
	json_object_set(o, "stage_name", json_object_get(q, "stage"));
	if (!json_object_get(o, "body"))
		json_object_set_new(o, "body", json_null());
	return o;
}

static void print_request(const json_t *q)
{
	struct lev_buf b = LEV_BUF_INIT;

	lev_respond_format(&b, q);
	fputs(b.buf, stdout);
	lev_buf_release(&b);
}

/* The number of request id "qN" (0: not one). */
static unsigned long request_num(const char *id)
{
	return id && id[0] == 'q' ? strtoul(id + 1, NULL, 10) : 0;
}

/* Request ids are "qN" in the order they were asked: a cursor moves on when its N grows. */
static bool request_later(const char *next, const char *after)
{
	return request_num(next) > request_num(after);
}

struct listing {
	bool json;
	json_t *all;		/* with json: every request so far */
	size_t shown;
};

/* One page of the list: printed as it comes, or kept for the one JSON answer. */
static void list_page(json_t *reply, void *ud)
{
	struct listing *l = ud;
	json_t *q;
	size_t i;

	json_array_foreach(json_object_get(reply, "requests"), i, q) {
		if (l->json)
			json_array_append_new(l->all, leviath_request(q));
		else
			print_request(q);
		l->shown++;
	}
	fflush(stdout);
}

/*
 * Every open request, asked for in pages of PAGE as lev ps --all asks for
 * its runs (lev_daemon_pages()): printed as each page comes, or with JSON
 * joined into one {"requests": [...]}.
 */
static int list(bool json, long page)
{
	struct listing l = { .json = json, .all = json_array() };
	json_t *req = lev_proto_request("requests");
	int r;

	r = lev_daemon_pages(req, page, "requests", request_later, list_page, &l);
	json_decref(req);
	if (r == LEV_EXIT_OK && json) {
		json_dumpf(l.all, stdout, JSON_COMPACT);
		fputc('\n', stdout);
	} else if (r == LEV_EXIT_OK && !l.shown) {
		printf("no open requests\n");
	}
	json_decref(l.all);
	return r;
}

/*
 * Show the open request ID as it is now and make *REQ, its respond
 * request bound to the digest of the call shown (DIGEST, when given,
 * instead: the caller showed it from --json).  A request no longer open is
 * an error.
 */
static int show_request(const char *id, const char *digest, json_t **req)
{
	json_t *reply = NULL, *q, *found = NULL;
	size_t i;

	json_t *ask = lev_proto_request("requests");

	json_object_set_new(ask, "id", json_string(id));
	if (lev_daemon_call(ask, &reply) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	json_array_foreach(json_object_get(reply, "requests"), i, q)
		if (lev_streq(lev_json_str(q, "id"), id))
			found = q;
	if (!found) {
		json_decref(reply);
		fprintf(stderr, "lev: error: no open request '%s'\n", id);
		return LEV_EXIT_FAIL;
	}
	if (!lev_streq(lev_json_str(found, "kind"), "question")) {
		struct lev_buf b = LEV_BUF_INIT;

		printf("%s: ", id);
		show(lev_json_str(found, "prompt") ? lev_json_str(found, "prompt") : "");
		putchar('\n');
		lev_respond_format_call(&b, found);
		fputs(b.buf, stdout);
		lev_buf_release(&b);
	}
	*req = lev_respond_request(found, digest);
	json_decref(reply);
	return LEV_EXIT_OK;
}

int cmd_respond(int argc, char **argv, struct lev_ctx *ctx)
{
	static const struct option longopts[] = {
		{ "approve", no_argument, NULL, 'a' },
		{ "deny", no_argument, NULL, 'd' },
		{ "stage", no_argument, NULL, 's' },
		{ "session", no_argument, NULL, 'S' },
		{ "run", no_argument, NULL, 'S' },
		{ "choice", required_argument, NULL, 'c' },
		{ "text", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "digest", required_argument, NULL, 'D' },
		{ "page", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *answer = NULL, *scope = NULL, *text = NULL, *digest = NULL;
	bool json = false, have_choice = false, have_page = false;
	uint64_t choice = 0, page = 500;
	json_t *req, *reply = NULL;
	int c;

	(void)ctx;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
		case 'd':
			if (answer)
				return lev_usage_error("respond", "--approve and --deny conflict");
			answer = c == 'a' ? "approve" : "deny";
			break;
		case 's':
		case 'S':
			if (scope)
				return lev_usage_error("respond", "--stage and --session conflict");
			scope = c == 's' ? "stage" : "run";
			break;
		case 'c':
			if (lev_parse_u64(optarg, &choice) < 0 || choice > 1000)
				return lev_usage_error("respond", "--choice takes a number, got '%s'",
						       optarg);
			have_choice = true;
			break;
		case 't':
			text = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'p':
			if (lev_parse_u64(optarg, &page) < 0 || !page || page > 5000)
				return lev_usage_error("respond", "--page takes a number from 1 to 5000");
			have_page = true;
			break;
		case 'D':
			if (strlen(optarg) != LEV_SHA256_HEX_LEN ||
			    strspn(optarg, "0123456789abcdef") != LEV_SHA256_HEX_LEN)
				return lev_usage_error("respond", "--digest takes the %d hex digits "
						  "'lev respond --json' shows, got '%s'",
						  LEV_SHA256_HEX_LEN, optarg);
			digest = optarg;
			break;
		default:
			if (optopt == 'c' || optopt == 't' || optopt == 'D' || optopt == 'p')
				return lev_usage_error("respond", "option '%s' needs a value",
						       argv[optind - 1]);
			return lev_usage_error("respond", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		if (answer || scope || text || have_choice || digest)
			return lev_usage_error("respond", "which request? give its REQUEST_ID");
		return list(json, (long)page);
	}
	if (have_page)
		return lev_usage_error("respond", "--page goes with the list (no REQUEST_ID)");
	if (optind + 2 < argc)
		return lev_usage_error("respond", "unexpected argument '%s'", argv[optind + 2]);
	if (optind + 1 < argc) {
		if (text)
			return lev_usage_error("respond", "give the answer as VALUE or --text, not both");
		text = argv[optind + 1];
	}
	if (text) {
		json_t *t = json_string(text);	/* jansson takes UTF-8 only */

		if (!t)
			return lev_usage_error("respond", "the answer must be UTF-8 text");
		json_decref(t);
	}
	if (scope && !lev_streq(answer, "approve"))
		return lev_usage_error("respond", "--%s goes with --approve",
				       lev_streq(scope, "stage") ? "stage" : "session");
	if (!answer && !text && !have_choice)
		return lev_usage_error("respond", "no answer: give --approve, --deny, --choice N or "
						  "--text TEXT");
	if (show_request(argv[optind], digest, &req) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	if (answer)
		json_object_set_new(req, "answer", json_string(answer));
	if (scope)
		json_object_set_new(req, "scope", json_string(scope));
	if (text)
		json_object_set_new(req, "text", json_string(text));
	if (have_choice)
		json_object_set_new(req, "choice", json_integer((json_int_t)choice));
	if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	json_decref(reply);
	printf("answered\n");
	return LEV_EXIT_OK;
}
