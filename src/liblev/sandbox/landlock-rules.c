/*
 * landlock-rules.c - Landlock ABI probing and enforcement.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "liblev/base/cleanup.h"
#include "liblev/sandbox/landlock-rules.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;	/* ABI 4 */
	uint64_t scoped;		/* ABI 6 */
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

int lev_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);

	if (v < 0)
		return -errno;
	if (v == 0)
		return -EOPNOTSUPP;
	return (int)v;
}

uint64_t lev_landlock_fs_rights(int abi)
{
	uint64_t r = 0;

	if (abi >= 1)
		r = (1ULL << 13) - 1;	/* EXECUTE .. MAKE_SYM */
	if (abi >= 2)
		r |= LEV_LL_FS_REFER;
	if (abi >= 3)
		r |= LEV_LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= LEV_LL_FS_IOCTL_DEV;
	return r;
}

uint64_t lev_landlock_net_rights(int abi)
{
	return abi >= 4 ? (LEV_LL_NET_BIND_TCP | LEV_LL_NET_CONNECT_TCP) : 0;
}

uint64_t lev_landlock_scopes(int abi)
{
	return abi >= 6 ? (LEV_LL_SCOPE_ABSTRACT_UNIX_SOCKET | LEV_LL_SCOPE_SIGNAL) : 0;
}

static size_t attr_size(int abi)
{
	if (abi >= 6)
		return sizeof(struct ll_ruleset_attr);
	if (abi >= 4)
		return offsetof(struct ll_ruleset_attr, scoped);
	return offsetof(struct ll_ruleset_attr, handled_access_net);
}

int lev_landlock_build(const struct lev_landlock_spec *s, int *failed_rule)
{
	struct ll_ruleset_attr attr = {
		.handled_access_fs = s->handled_fs & lev_landlock_fs_rights(s->abi),
		.handled_access_net = s->handled_net & lev_landlock_net_rights(s->abi),
		.scoped = s->scoped & lev_landlock_scopes(s->abi),
	};
	int ruleset, r = 0;
	size_t i;

	if (failed_rule)
		*failed_rule = -1;
	if (s->abi < 1)
		return -EOPNOTSUPP;
	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size(s->abi), 0);
	if (ruleset < 0)
		return -errno;

	for (i = 0; i < s->n_rules; i++) {
		struct ll_path_beneath_attr pb;
		struct stat st;
		int fd;

		fd = open(s->rules[i].path, O_PATH | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;	/* nothing there, nothing to allow */
			r = -errno;
			goto fail;
		}
		if (fstat(fd, &st) < 0) {
			r = -errno;
			close(fd);
			goto fail;
		}
		pb.allowed_access = s->rules[i].access & attr.handled_access_fs;
		if (!S_ISDIR(st.st_mode))
			pb.allowed_access &= LEV_LL_FS_FILE_RIGHTS;
		pb.parent_fd = fd;
		if (pb.allowed_access &&
		    syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0) {
			r = -errno;
			close(fd);
			goto fail;
		}
		close(fd);
	}
	return ruleset;
fail:
	if (failed_rule)
		*failed_rule = (int)i;
	close(ruleset);
	return r;
}

int lev_landlock_restrict(int ruleset)
{
	int r = 0;

	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		r = -errno;
	close(ruleset);
	return r;
}

int lev_landlock_enforce(const struct lev_landlock_spec *s, int *failed_rule)
{
	int ruleset = lev_landlock_build(s, failed_rule);

	return ruleset < 0 ? ruleset : lev_landlock_restrict(ruleset);
}

void lev_landlock_fs_names(uint64_t access, char *buf, size_t size)
{
	static const char *const names[] = {
		"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
		"make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block",
		"make_sym", "refer", "truncate", "ioctl_dev",
	};
	size_t i, used = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		int n;

		if (!(access & (1ULL << i)))
			continue;
		n = snprintf(buf + used, size - used, "%s%s", used ? "," : "", names[i]);
		if (n < 0 || (size_t)n >= size - used)
			return;
		used += (size_t)n;
	}
}
