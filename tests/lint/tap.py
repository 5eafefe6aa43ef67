"""The lints' shared TAP report: one line per rule, each hit as a comment."""


def report(rules, hint=None):
    """RULES: [(what, [hit, ...])]; HINT: a comment after the hits of a failed rule.
    Prints TAP and returns the exit status (1 when a rule has hits)."""
    print("1..%d" % len(rules))
    failed = 0
    for i, (what, hits) in enumerate(rules, 1):
        if not hits:
            print("ok %d - %s" % (i, what))
            continue
        failed += 1
        print("not ok %d - %s" % (i, what))
        for h in hits:
            print("#   " + h)
        if hint:
            print("#   " + hint)
    return 1 if failed else 0


def main(argv, doc, run, self_test):
    """`SCRIPT SRC_DIR` runs RUN(SRC_DIR); `SCRIPT --self-test` runs SELF_TEST()."""
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        import sys
        print(doc, file=sys.stderr)
        return 2
    return run(argv[1])
