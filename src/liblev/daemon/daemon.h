/*
 * daemon.h - the lev daemon: the control socket, the runs, their state.
 *
 * One process, one thread, one poll(2) loop.  It holds the lock
 * (<data root>/daemon.lock), the control socket (sock.h), the database
 * (store.h), and one worker process per run (worker.h), to which it is
 * joined by a socketpair.  A worker's crash, hang or memory blow-up ends
 * that run only: the daemon sees the worker exit (SIGCHLD) and marks its
 * run failed.
 *
 * Requests on the control socket (proto.h framing; each gets one reply):
 *
 *	ping				{pid, runs, waiting, version}
 *	submit {request}		start a run; {run: ID}
 *	ps {all}			{runs, finished, health}
 *	get {run}			{run: {...}}
 *	requests			{requests: [...]}: the open questions
 *	respond {id, answer|choice|text, scope}
 *	cancel {run}
 *	webhook {run, url, secret}	deliver RUN's completion webhook when it
 *					ends (webhook.h): kept until delivered
 *	pause {run}			hold at the next step boundary (status
 *					"paused" once the worker holds)
 *	resume {run}
 *	msg {run, text}			for the run's stage, if it accepts messages
 *	attach {run}			{run: {...}}; then the connection follows
 *					the run (below)
 *	watch				{runs: [{id, status}]}: the live ones; then
 *					the connection follows every run, each
 *					frame as {"op":"run_frame", run, frame},
 *					a new run's first as "spawned" {run, agent}
 *	stop				stop the daemon (runs are cancelled)
 *
 * A follower (attach, or submit with "follow": true) gets, after the
 * reply: the run's backlog (its latest events, bounded), then every
 * {"op":"event"}, "ask" {question}, "answered" {id, answer}, "paused",
 * "resumed" as it happens, and last "end" {status, result, error, record};
 * then the daemon closes the connection.  Frames to followers are queued
 * and written without blocking; a follower too far behind is disconnected.
 *
 * A submit's request: {blueprint: PATH, workdir: DIR, task, yolo, allow,
 * model, no_seed_commands, oci_helper, interactive, env: ["NAME=VALUE",
 * ...]}.  The worker gets exactly `env` as its environment; with
 * "interactive": false nothing is asked (as lev run without a terminal).
 *
 * Every connection's peer is checked with SO_PEERCRED before anything is
 * read from it: another uid is refused and logged.  A frame over
 * LEV_PROTO_MAX, malformed JSON, or a request of another protocol version
 * closes that connection, and only that one.
 *
 * Nothing here prints: the daemon's log lines go to opts->log.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "liblev/base/error.h"

struct lev_daemon_opts {
	const char *worker_exe;		/* the lev binary; runs `WORKER_EXE __worker` */
	unsigned idle_exit_secs;	/* exit this long after the last run ends; 0: stay */
	unsigned retention_secs;	/* a finished run stays in `lev ps` and in memory
					 * this long; 0: 300 s */
	unsigned old_worker_grace_secs;	/* the previous daemon's workers get SIGKILL
					 * this long after a restart; 0: 10 s */
	uint64_t run_data_limit;	/* RLIMIT_DATA of each worker (bytes); 0: none */
	bool no_zygote;			/* exec every worker (zygote.h: forked from one) */
	volatile sig_atomic_t *stop;	/* set to stop (from a signal handler) */
	int stop_fd;			/* readable once stop is set; -1: none */
	/* One log line (no newline); NULL: none. */
	void (*log)(void *data, const char *line);
	void *log_data;
	/* Called once the socket listens (for `lev daemon start`); may be NULL. */
	void (*ready)(void *data);
};

/* Serve until stopped.  -EBUSY when another daemon holds the lock. */
int lev_daemon_serve(const struct lev_daemon_opts *opts, struct lev_err *err);

/* The hidden command the worker binary serves runs with. */
#define LEV_DAEMON_WORKER_CMD "__worker"

/* The running daemon's pid, beneath the data root (Leviath's file). */
#define LEV_DAEMON_PIDFILE "daemon.pid"
