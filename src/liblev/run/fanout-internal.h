/*
 * fanout-internal.h - what fanout.c (the sub-agent tools) shares with
 * fanout-proc.c (running the sub-agents: each in a process of its own,
 * several at once).  Internal to src/liblev/run/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "liblev/base/buf.h"
#include "liblev/run/agent-internal.h"

/* What one child handed back. */
struct child_result {
	bool ok;
	char *answer;		/* its output (ok) */
	char *error;		/* why it failed (!ok) */
	enum lev_level label;
	bool untrusted;
	char *record;		/* its sub-record, or NULL */
};

void child_result_release(struct child_result *r);

/* One sub-agent to run: what it is (set by the caller), and its process. */
struct child_job {
	const char *id;			/* "w1", "c2" (borrowed) */
	const struct lev_blueprint *bp;	/* borrowed */
	const char *entry;		/* its first stage, or NULL: the blueprint's entry */
	const char *task;		/* borrowed */
	unsigned depth_limit;
	enum lev_level task_label;
	bool task_untrusted;
	bool worker;			/* a fan_out worker (else a spawn_agent child) */
	const char *no_start;		/* set: it fails with this reason without running */
	/* filled by the runner */
	bool started, ended;
	bool stop_cause;		/* its failure stopped the others (on_worker_failure = "fail") */
	struct child_result res;
	pid_t pid;
	int up, down;			/* frames from it, answers to it */
	struct lev_buf in;		/* a frame being read */
};

/*
 * Whether A's sub-agents run in processes of their own, several at once.
 * Not when A's model is the script provider: its turns are one list in
 * order, shared by the run and its sub-agents, so they run one after
 * another in A's process.
 */
bool agent_kids_forked(const struct lev_agent *a);

/*
 * Send running job J a message (send_to_agent): TEXT into REGION (NULL: its
 * conversation) with LABEL and integrity, taken before its next model turn.
 * 0, or an error saying why it cannot be reached (not running, its pipe
 * full or closed).
 */
int agent_kid_send(struct child_job *j, const char *text, const char *region,
		   enum lev_level label, bool untrusted, struct lev_err *err);

/*
 * Run JOBS[0..N) to their ends, at most MAX (0: all) at once, each in a
 * process of its own when agent_kids_forked(A), else one after another
 * here.  Each job that started has its result; with FAIL_STOP, no job
 * starts after one failed, and those running are cancelled.  A's cancel
 * cancels every one.  Emits child_started / child_finished on A.
 */
void agent_kids_run(struct lev_agent *a, struct child_job *jobs, size_t n, unsigned max,
		    bool fail_stop);

/* Start JOB now (in a process when agent_kids_forked(A)); false: it ended already. */
bool agent_kid_start(struct lev_agent *a, struct child_job *job);
/* Wait for a started JOB to end, relaying its asks; its result is then set. */
void agent_kid_wait(struct lev_agent *a, struct child_job *job);
/* Take what a started JOB has sent without waiting; its result is set once it ended. */
void agent_kid_poll(struct lev_agent *a, struct child_job *job);
/* Cancel a started JOB and wait for it to end. */
void agent_kid_cancel(struct lev_agent *a, struct child_job *job);
