/*
 * landlock-rules.h - the Landlock layer of the namespace sandbox.
 *
 * The system headers (Debian 12) stop at Landlock ABI 2, so every right,
 * flag and attribute struct is defined here under LEV_ names.  The ABI is
 * probed at run time and the handled rights are masked to what that ABI
 * knows (a right the kernel does not know would make the ruleset invalid):
 *
 *	ABI 1  filesystem rights EXECUTE .. MAKE_SYM
 *	ABI 2  + REFER (renames and links across directories)
 *	ABI 3  + TRUNCATE
 *	ABI 4  + TCP bind/connect (network rights)
 *	ABI 5  + IOCTL_DEV
 *	ABI 6  + scopes: abstract UNIX sockets, signals
 *	ABI 7  + audit logging flags (nothing to handle)
 *
 * A spec is plain data built in the parent; lev_landlock_enforce() runs in
 * the child, allocates nothing and is async-signal-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEV_LL_FS_EXECUTE	(1ULL << 0)
#define LEV_LL_FS_WRITE_FILE	(1ULL << 1)
#define LEV_LL_FS_READ_FILE	(1ULL << 2)
#define LEV_LL_FS_READ_DIR	(1ULL << 3)
#define LEV_LL_FS_REMOVE_DIR	(1ULL << 4)
#define LEV_LL_FS_REMOVE_FILE	(1ULL << 5)
#define LEV_LL_FS_MAKE_CHAR	(1ULL << 6)
#define LEV_LL_FS_MAKE_DIR	(1ULL << 7)
#define LEV_LL_FS_MAKE_REG	(1ULL << 8)
#define LEV_LL_FS_MAKE_SOCK	(1ULL << 9)
#define LEV_LL_FS_MAKE_FIFO	(1ULL << 10)
#define LEV_LL_FS_MAKE_BLOCK	(1ULL << 11)
#define LEV_LL_FS_MAKE_SYM	(1ULL << 12)
#define LEV_LL_FS_REFER		(1ULL << 13)	/* ABI 2 */
#define LEV_LL_FS_TRUNCATE	(1ULL << 14)	/* ABI 3 */
#define LEV_LL_FS_IOCTL_DEV	(1ULL << 15)	/* ABI 5 */

#define LEV_LL_NET_BIND_TCP	(1ULL << 0)	/* ABI 4 */
#define LEV_LL_NET_CONNECT_TCP	(1ULL << 1)	/* ABI 4 */

#define LEV_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)	/* ABI 6 */
#define LEV_LL_SCOPE_SIGNAL	(1ULL << 1)		/* ABI 6 */

/* Rights that make sense on a file (not a directory). */
#define LEV_LL_FS_FILE_RIGHTS (LEV_LL_FS_EXECUTE | LEV_LL_FS_WRITE_FILE | LEV_LL_FS_READ_FILE | \
			       LEV_LL_FS_TRUNCATE | LEV_LL_FS_IOCTL_DEV)
/* Reading and running. */
#define LEV_LL_FS_READ (LEV_LL_FS_EXECUTE | LEV_LL_FS_READ_FILE | LEV_LL_FS_READ_DIR)
/* Everything (masked to the ABI when used). */
#define LEV_LL_FS_ALL ((1ULL << 16) - 1)

/* The highest ABI this code knows about. */
#define LEV_LL_ABI_KNOWN 7

/* The kernel's Landlock ABI version (>= 1), or -errno (ENOSYS, EOPNOTSUPP). */
int lev_landlock_abi(void);

/* What ABI knows: filesystem rights, network rights, scopes. */
uint64_t lev_landlock_fs_rights(int abi);
uint64_t lev_landlock_net_rights(int abi);
uint64_t lev_landlock_scopes(int abi);

struct lev_landlock_rule {
	const char *path;	/* absolute; a missing path is skipped */
	uint64_t access;	/* masked to the handled rights (and to file rights for a file) */
};

struct lev_landlock_spec {
	int abi;			/* from lev_landlock_abi() */
	uint64_t handled_fs;		/* already masked to the ABI */
	uint64_t handled_net;		/* 0: network not restricted by Landlock */
	uint64_t scoped;
	const struct lev_landlock_rule *rules;
	size_t n_rules;
};

/*
 * Build the ruleset, add every rule, and restrict the calling thread.
 * PR_SET_NO_NEW_PRIVS must be set first.  On failure returns -errno and
 * sets *failed_rule (optional) to the rule index, or -1 when the failure
 * was not about a rule.  Async-signal-safe.
 */
int lev_landlock_enforce(const struct lev_landlock_spec *s, int *failed_rule);

/*
 * The two halves of lev_landlock_enforce(): build the ruleset (returns its
 * fd, close-on-exec, or -errno with *failed_rule as above), then restrict
 * the calling thread with it (closes it; 0 or -errno).  The rules are bound
 * to the inodes the paths name when it is built.  Async-signal-safe.
 */
int lev_landlock_build(const struct lev_landlock_spec *s, int *failed_rule);
int lev_landlock_restrict(int ruleset);

/* Append the names of the rights in ACCESS ("read_file,write_file,...") to BUF of SIZE. */
void lev_landlock_fs_names(uint64_t access, char *buf, size_t size);
