/*
 * respond.c - an open request shown and answered (respond.h).
 */
#include <string.h>

#include "lev/respond.h"
#include "liblev/base/termtext.h"
#include "liblev/base/util.h"
#include "liblev/daemon/proto.h"
#include "liblev/run/callshow.h"

/* S (NULL: DEF) through termtext. */
static void safe(struct lev_buf *b, const char *s, const char *def)
{
	if (!s)
		s = def;
	lev_termtext_add(b, s, strlen(s));
}

void lev_respond_format_call(struct lev_buf *b, const json_t *q)
{
	const char *kind = lev_json_str(q, "kind");
	struct lev_buf call = LEV_BUF_INIT;

	if (lev_streq(kind, "question"))
		return;
	(void)lev_buf_adds(b, "  the call, in full:\n");
	lev_callshow_indent(&call, lev_json_str(q, "call") ? lev_json_str(q, "call")
							 : "(not shown: nothing to approve)\n",
			    "    ");
	/* printable as it is (callshow.h); termtext all the same, as it came over a socket */
	lev_termtext_add(b, call.buf, call.len);
	lev_buf_release(&call);
	if (lev_streq(kind, "permission") && lev_json_str(q, "stage_label")) {
		(void)lev_buf_adds(b, "  --stage: ");
		safe(b, lev_json_str(q, "stage_label"), "");
		(void)lev_buf_addch(b, '\n');
	}
	if (lev_json_str(q, "run_label")) {
		(void)lev_buf_adds(b, "  --session: ");
		safe(b, lev_json_str(q, "run_label"), "");
		(void)lev_buf_addch(b, '\n');
	}
}

void lev_respond_describe(struct lev_buf *b, const json_t *q)
{
	safe(b, lev_json_str(q, "prompt"), "");
	(void)lev_buf_addch(b, '\n');
	if (lev_json_str(q, "detail")) {
		(void)lev_buf_adds(b, "  ");
		safe(b, lev_json_str(q, "detail"), "");
		(void)lev_buf_addch(b, '\n');
	}
	lev_respond_format_call(b, q);
}

/* The answer line: which flags answer Q. */
static void answer_line(struct lev_buf *b, const json_t *q)
{
	const char *kind = lev_json_str(q, "kind"), *qk = lev_json_str(q, "question_kind");
	const char *how = lev_streq(kind, "permission") ? "--approve [--stage|--session] | --deny"
			  : lev_streq(kind, "taint")	  ? "--approve [--session] | --deny"
			  : lev_streq(qk, "choice")	  ? "--choice N"
			  : lev_streq(qk, "confirm")	  ? "--approve | --deny"
							  : "--text TEXT";

	(void)lev_buf_adds(b, "  answer: lev respond ");
	safe(b, lev_json_str(q, "id"), "?");
	(void)lev_buf_addf(b, " %s\n", how);
}

void lev_respond_format(struct lev_buf *b, const json_t *q)
{
	const char *kind = lev_json_str(q, "kind");
	const json_t *choices = json_object_get(q, "choices");

	safe(b, lev_json_str(q, "id"), "?");
	(void)lev_buf_adds(b, "  run ");
	safe(b, lev_json_str(q, "run"), "?");
	(void)lev_buf_adds(b, " (agent '");
	safe(b, lev_json_str(q, "agent"), "?");
	(void)lev_buf_adds(b, "'), stage '");
	safe(b, lev_json_str(q, "stage"), "");
	(void)lev_buf_addf(b, "'\n  %s: ", lev_streq(kind, "taint")	 ? "taint gate"
					   : lev_streq(kind, "question") ? "the agent asks"
									 : "tool approval");
	safe(b, lev_json_str(q, "prompt"), "");
	(void)lev_buf_addch(b, '\n');
	if (lev_json_str(q, "detail")) {
		(void)lev_buf_adds(b, "  ");
		safe(b, lev_json_str(q, "detail"), "");
		(void)lev_buf_addch(b, '\n');
	}
	lev_respond_format_call(b, q);
	for (size_t k = 0; k < json_array_size(choices); k++) {
		(void)lev_buf_addf(b, "    %zu) ", k);
		safe(b, json_string_value(json_array_get(choices, k)), "");
		(void)lev_buf_addch(b, '\n');
	}
	answer_line(b, q);
}

json_t *lev_respond_request(const json_t *q, const char *digest)
{
	json_t *req = lev_proto_request("respond");
	char d[LEV_SHA256_HEX_LEN + 1];

	json_object_set_new(req, "id", json_string(lev_json_str(q, "id")));
	if (!lev_streq(lev_json_str(q, "kind"), "question")) {
		/* the answer approves what was shown, and says so */
		lev_callshow_digest(lev_json_str(q, "call"), d);
		json_object_set_new(req, "digest", json_string(digest ? digest : d));
	}
	return req;
}
