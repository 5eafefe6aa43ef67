/*
 * no-feature - run a command on a kernel that seems to lack features
 * (crun's check-no-openat2 approach): a seccomp filter, inherited by the
 * whole process tree, makes the chosen system calls fail as they do on a
 * kernel without them.
 *
 *	no-feature [--no-landlock] [--no-seccomp] [--no-userns] [--no-openat2] -- CMD [ARG...]
 *
 *   --no-landlock  landlock_create_ruleset/add_rule/restrict_self: ENOSYS
 *   --no-seccomp   seccomp(): ENOSYS, prctl(PR_SET_SECCOMP): EINVAL
 *   --no-userns    clone/unshare with CLONE_NEWUSER: EPERM, clone3: ENOSYS
 *                  (as with user.max_user_namespaces = 0 or an AppArmor block)
 *   --no-openat2   openat2: ENOSYS
 */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int deny(scmp_filter_ctx ctx, const char *name, int e)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR) {
		fprintf(stderr, "no-feature: unknown syscall '%s'\n", name);
		return -1;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(e), nr, 0);
}

int main(int argc, char **argv)
{
	bool landlock = false, sec = false, userns = false, openat2 = false;
	scmp_filter_ctx ctx;
	int i, r = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-landlock"))
			landlock = true;
		else if (!strcmp(argv[i], "--no-seccomp"))
			sec = true;
		else if (!strcmp(argv[i], "--no-userns"))
			userns = true;
		else if (!strcmp(argv[i], "--no-openat2"))
			openat2 = true;
		else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: no-feature [--no-landlock] [--no-seccomp] [--no-userns] "
				"[--no-openat2] -- CMD [ARG...]\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return 125;
	if (landlock) {
		r |= deny(ctx, "landlock_create_ruleset", ENOSYS);
		r |= deny(ctx, "landlock_add_rule", ENOSYS);
		r |= deny(ctx, "landlock_restrict_self", ENOSYS);
	}
	if (openat2)
		r |= deny(ctx, "openat2", ENOSYS);
	if (sec) {
		r |= deny(ctx, "seccomp", ENOSYS);
		r |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1,
				      SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP));
	}
	if (userns) {
		r |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
		r |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
		r |= deny(ctx, "clone3", ENOSYS);
	}
	if (r != 0 || seccomp_load(ctx) != 0) {
		fprintf(stderr, "no-feature: cannot install the filter\n");
		seccomp_release(ctx);
		return 125;
	}
	seccomp_release(ctx);
	execvp(argv[i], argv + i);
	fprintf(stderr, "no-feature: cannot run '%s': %s\n", argv[i], strerror(errno));
	return 127;
}
