/*
 * cmd_msg.c - lev msg RUN TEXT.
 */
#include <stdio.h>
#include <string.h>

#include "lev/cmd.h"
#include "liblev/daemon/proto.h"

const char lev_usage_msg[] =
	"usage: lev msg RUN TEXT\n"
	"\n"
	"Send TEXT to a run the daemon holds.  The stage it is in must accept messages\n"
	"(accepts_messages = true in the blueprint): the text joins the conversation\n"
	"as a user message before the model's next turn.  Another stage is an error\n"
	"that names it.\n";

int cmd_msg(int argc, char **argv, struct lev_ctx *ctx)
{
	json_t *req, *reply = NULL, *text;

	(void)ctx;
	if (argc < 3)
		return lev_usage_error("msg", argc < 2 ? "which run? give its RUN id"
						       : "what message? give its TEXT");
	if (argc > 3)
		return lev_usage_error("msg", "unexpected argument '%s' (quote the TEXT)", argv[3]);
	if (argv[1][0] == '-')
		return lev_usage_error("msg", "unknown option '%s'", argv[1]);
	text = json_string(argv[2]);
	if (!text || !*argv[2]) {
		json_decref(text);
		return lev_usage_error("msg", "the message must be non-empty UTF-8 text");
	}
	req = lev_proto_request("msg");
	json_object_set_new(req, "run", json_string(argv[1]));
	json_object_set_new(req, "text", text);
	if (lev_daemon_call(req, &reply) != LEV_EXIT_OK)
		return LEV_EXIT_FAIL;
	json_decref(reply);
	printf("lev: message sent to run %s\n", argv[1]);
	return LEV_EXIT_OK;
}
