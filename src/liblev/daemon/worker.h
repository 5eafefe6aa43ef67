/*
 * worker.h - one run in its own process, reporting to the daemon.
 *
 * The daemon starts a worker per run (daemon.c: fork, then exec of the lev
 * binary's hidden `__worker` command with the socketpair on fd 3 and the
 * environment the client sent, nothing of the daemon's own).  The worker
 * reads one {"op":"start","run":ID,"request":{...}} frame, builds the run
 * exactly as `lev run` does (the blueprint, the config, lev_agent_new()),
 * its record named <data root>/runs/ID, and runs it, speaking over the
 * socketpair:
 *
 *	-> {"op":"info","record":DIR,"agent":NAME,"read_paths":{granted,declared,grants}}
 *	-> {"op":"event","event":{...},"ack":B}	every event; with "ack" (a
 *		tool_call about to be dispatched) it waits for {"op":"ack"}, so
 *		the journal row is written before the call runs
 *	-> {"op":"ask",...}			a question; waits for
 *		{"op":"answer","answer":"once|stage|run|deny|none"} or
 *		{"op":"answer","text":T} ([limits] interaction_timeout_secs,
 *		then nobody answered: deny)
 *	-> {"op":"turn","seq":N,"turn":T}	each model turn taken from the
 *		provider (run/replay.h), before its calls, whatever its size:
 *		one too large for a frame is sent in parts
 *	-> {"op":"part","text":T} ...		a large turn's JSON text, or a
 *		large output, in pieces of at most 128 KiB; the frame after
 *		them says "parts": true instead of "turn" or "output"
 *	<- {"op":"reload"}			config.toml changed and is good:
 *		at the next step (before a model request or a call is decided)
 *		the run takes the tighter of its config and the new one
 *		(policy/tighter.h) and answers
 *	-> {"op":"reloaded"} or {"op":"reloaded","error":E}
 *	-> {"op":"done","status":S,"output":O,"error":E}	(or "parts": true)
 *	-> {"op":"infer"}			before each model request, when
 *		the start frame says "infer_pool": true ([limits]
 *		max_concurrent_inferences, pool.h); waits for {"op":"infer_go"},
 *		given in the order asked
 *	-> {"op":"infer_done"}			the request's answer came
 *
 * A start frame with "recover": true is a run the daemon resumes after a
 * restart: the worker reads the run's replay log from <data root>/lev.db
 * and goes on with the run's record (docs/daemon.md "Crash recovery").
 * "config_path" and "policy_path" in it name the last good copies to use
 * while the files on disk are broken (daemon/reload.h).
 *
 * At any time the daemon may send {"op":"pause"}, {"op":"resume"} and
 * {"op":"msg","text":T}; the worker takes them at its step boundaries
 * (before each model turn, and before an allowed call runs): paused, it
 * says {"op":"paused"} and waits for "resume"; a message joins the
 * conversation as a user turn before the next model turn.
 *
 * The worker's end of the socketpair is close-on-exec: no command inherits it.
 * The daemon judges how a run ended from its frames once every one the
 * worker sent is read (to the end of the stream), then from its record.
 *
 * SIGTERM, SIGINT and SIGHUP cancel the run (lev cancel); the worker sets
 * PR_SET_PDEATHSIG before exec, so it is cancelled when the daemon dies.
 * This is the worker process's front end: it installs its own signal
 * handlers.
 */
#pragma once

#include "liblev/base/error.h"

/* The fd the daemon hands the worker its socketpair on. */
#define LEV_WORKER_FD 3

/* Serve one run on FD; 0 when it was run (whatever its outcome). */
int lev_worker_main(int fd, struct lev_err *err);
