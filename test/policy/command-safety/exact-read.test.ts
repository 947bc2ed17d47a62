import { describe, expect, it } from "vitest";
import { inexactRead } from "../../../src/policy/command-safety/exact-read.js";

/*
 * Exact reads (decisions version 5, docs/security.md "Without a sandbox"): what may run unasked
 * where nothing contains it. Each dangerous spelling keeps a benign twin that stays exact.
 */
describe("inexactRead", () => {
  const cases: [dangerous: string, twin: string][] = [
    ["GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch /tmp/x' git status", "git status"],
    [`GIT_CONFIG_PARAMETERS="'core.fsmonitor'='x'" git status`, "git status --short"],
    ["GIT_EXTERNAL_DIFF=./evil.sh git diff", "git diff"],
    ["GIT_TRACE=/outside/path git status", "git status -sb"],
    ["PATH=.:$PATH ls", "ls"],
    ["env PATH=. ls", "ls -la"],
    ["export PATH=.; ls", "ls; ls src"],
    ["declare -x PATH=.; ls", "ls && ls src"],
    ["alias cat=./evil; cat README.md", "cat README.md"],
    ["set -a; ls", "ls || true"],
    ["cd sub && git status", "git status && git log -n 1"],
    ["git -c core.pager=./x log", "git log"],
    ["git --config-env=core.fsmonitor=X status", "git --no-pager status"],
    ["git --exec-path=. status", "git status"],
    ["git --git-dir=../other/.git log", "git log --oneline"],
    ["git --work-tree=/ status", "git status"],
    ["git --namespace=x log", "git log"],
    ["git -C /elsewhere status", "git status"],
    ["git diff --ext-diff", "git diff --no-ext-diff"],
    ["git diff --ext", "git diff --exit-code"],
    ["git diff --textconv", "git diff --stat"],
    ["git diff --output=/tmp/x", "git diff --name-only"],
    ["git log --show-signature", "git log --format=%H"],
    ["./ls", "ls"],
    ["/tmp/bin/ls", "ls"],
    ["ls $HOME", "ls src"],
    ["ls \"$X\"", "ls 'a$b'"],
    ["cat $(echo README.md)", "cat README.md"],
    ["cat `echo README.md`", "cat README.md"],
    ["cat <(ls)", "cat README.md"],
    ["ls *", "ls src"],
    ["rg foo --pre=./evil", "rg foo src"],
    ["sort --compress-program=./evil a.txt", "sort a.txt"],
    ["find . -fprint /tmp/x", "find . -name '*.ts'"],
    ["printf -v PATH . ; ls", "printf '%s' a"],
    ["echo {a,b}", "echo a b"],
    ["git diff {--ext-diff,}", "git show HEAD@{1}"],
    ["{ ls; }", "ls"],
    ["ls x{1..3}", "ls x1 x2 x3"],
    ["ls > /tmp/out", "ls > /dev/null"],
    ["ls 2> /tmp/err", "ls 2>/dev/null"],
    ["ls &", "ls"],
    ["(ls)", "ls"],
    ["ls\nls", "ls; ls"],
    ["ls\u202e", "ls"],
    ["ｌｓ", "ls"],
    ["cat <<EOF", "wc -l < README.md"],
    // shell-quote reads `a#b` as `a` and a comment; a shell runs what follows.
    ["ls a#b; GIT_TRACE=/tmp/x git status", "ls 'a#b'; git status"],
    ["ls # x", "ls"],
  ];

  for (const [dangerous, twin] of cases) {
    it(`${JSON.stringify(dangerous)} is not exact; ${JSON.stringify(twin)} is`, () => {
      expect(inexactRead(dangerous), dangerous).toEqual(expect.any(String));
      expect(inexactRead(twin), twin).toBeUndefined();
    });
  }

  it("says why, in a phrase", () => {
    expect(inexactRead("GIT_TRACE=/tmp/x git status")).toBe("it assigns the variable GIT_TRACE");
    expect(inexactRead("git diff --ext")).toContain("--ext-diff");
  });

  it("fails closed on what it cannot read", () => {
    expect(inexactRead("")).toBe("there is no command");
    expect(inexactRead("ls &&")).toBe("it ends with an operator");
    expect(inexactRead(undefined as never)).toBe("it is not text");
  });
});
