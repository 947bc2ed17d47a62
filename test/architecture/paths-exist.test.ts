import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The repository carries its own design (docs/design.md), and every citation resolves: each
// repository path the docs and the comments name is real, each anchor into a docs page names one
// of its headings, and each section cited by its title is one of its sections. A stale citation is
// reported as `file:line: path (why)`.
//
// test/fixtures/logs/ is left out: its files are recorded decisions, never edited (its README names
// paths of the time it was written; docs/replay.md describes the golden logs as they are now).
const root = resolve(import.meta.dirname, "../..");

/** Folders never read: installed packages, build output, the frozen golden logs. */
const skipped = new Set(["node_modules", ".git", "dist", "test/fixtures/logs"]);

/**
 * Paths that name a file of a user's workspace, not of this repository: `src/git.ts` is the file
 * the v5 golden log's session writes (docs/replay.md) and the benign twin of `.git` that stays
 * writable (docs/security.md).
 */
const workspacePaths = new Set(["src/git.ts"]);

/** The folders whose source comments are checked. */
const commentedFolders = ["src", "machines", "bench", "soak", "scripts", "test", "property-tests"];
const sourceExtensions = [".ts", ".tsx", ".mts", ".js", ".mjs"];

/**
 * A repository path as prose writes it: a top-level folder of this repository, then a file with
 * an extension or a folder with a trailing slash, optionally `#anchor`. Not preceded by a path
 * character, so `dist/src/x.js`, a URL or `../src` is not read as one.
 */
const repositoryPath =
  /(?<![\w./@~$-])((?:src|docs|test|machines|bench|soak|scripts|property-tests|bin)\/[\w./-]*|\.ci\/run)(#[\w-]+)?/g;

/** A relative Markdown link target: `[text](log.md#durability)`, `(#fork)`, `(../src/x.ts)`. */
const markdownLink = /\]\(([^()\s]+)\)/g;

/**
 * A section cited by its title: `docs/log.md, "Event data"`, `(log.md, "Durability")`. The title
 * must be (part of) a heading or a bold lead-in (`**What the runtime asks for**`) of that page.
 */
const titledCitation = /(?<![\w./-])((?:docs\/)?[a-z][\w-]*\.md)(?:#[\w-]+)?\)?[,:]?(?:\s|\*(?!\*)|\/\/)+["“]([^"”\n]{2,100})["”]/g;

/**
 * A bare section number (a section sign and a number, nothing else): it names a section of no
 * page. A standard's section (`RFC 9110 §11.4`) and design.md's links to its own sections
 * (`[§6](#6-replay-and-decision-versions)`) say where they point.
 */
const bareSection = /(?<!RFC \d+ |\[)§\s?\d[\d.]*/g;

/** How the design was cited before the repository had its own: a file it never held. */
const foreignDesign = new RegExp(["\\bDESIGN", "\\b|\\.\\./shared/"].join(""), "g");

interface Mention {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

function walk(dir: string, keep: (path: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (skipped.has(relative(root, path))) return [];
    if (statSync(path).isDirectory()) return walk(path, keep);
    return keep(path) ? [path] : [];
  });
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let at = text.indexOf("\n"); at !== -1 && at < index; at = text.indexOf("\n", at + 1)) line++;
  return line;
}

/** The comments of one source file, each with its offset, found by TypeScript's own parser. */
function comments(path: string, text: string): { offset: number; text: string }[] {
  const kind = path.endsWith(".tsx") ? ts.ScriptKind.TSX : /\.m?js$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  const found = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) found.set(range.pos, text.slice(range.pos, range.end));
  };
  // getChildren includes tokens, so a comment before a closing brace or the end of the file is seen.
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...found].map(([offset, comment]) => ({ offset, text: comment }));
}

/** The repository paths written in one piece of text that starts at `offset` of its file. */
function pathMentions(file: string, whole: string, piece: string, offset: number): Mention[] {
  const mentions: Mention[] = [];
  for (const match of piece.matchAll(repositoryPath)) {
    const after = piece[match.index + match[0].length] ?? "";
    // A glob (`test/**/*.test.ts`), a placeholder (`src/providers/<format>/`) or an elision names no one file.
    if ("*<{…".includes(after) && after !== "") continue;
    const path = (match[1] as string).replace(/[.]+$/, "");
    const lastSegment = path.slice(path.lastIndexOf("/") + 1);
    if (!path.endsWith("/") && !/\.[A-Za-z0-9]+$/.test(lastSegment) && path !== ".ci/run") continue;
    if (workspacePaths.has(path)) continue;
    mentions.push({ file, line: lineOf(whole, offset + match.index), target: path + (match[2] ?? "") });
  }
  return mentions;
}

/** The sections cited by title in one piece of text that starts at `offset` of its file. */
function titleMentions(file: string, whole: string, piece: string, offset: number): (Mention & { title: string })[] {
  const mentions: (Mention & { title: string })[] = [];
  for (const match of piece.matchAll(titledCitation)) {
    const name = match[1] as string;
    const page = name.startsWith("docs/") ? name : existsSync(join(root, "docs", name)) ? `docs/${name}` : name;
    // A name that is no page of this repository (a file in a user's workspace) is not a citation.
    if (!existsSync(join(root, page))) continue;
    mentions.push({ file, line: lineOf(whole, offset + match.index), target: page, title: match[2] as string });
  }
  return mentions;
}

/** What a page's sections can be cited by: its headings and its bold lead-ins, lower case, without backticks. */
function titlesOf(markdown: string): string[] {
  const titles: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) titles.push(heading[1] as string);
    for (const bold of line.matchAll(/\*\*(.+?)\*\*/g)) titles.push(bold[1] as string);
  }
  return titles.map(plainTitle);
}

function plainTitle(title: string): string {
  return title.replace(/[`*]/g, "").toLowerCase();
}

/** The relative link targets of a Markdown page, made relative to the repository. */
function linkMentions(file: string, text: string): Mention[] {
  const mentions: Mention[] = [];
  for (const match of text.matchAll(markdownLink)) {
    const target = match[1] as string;
    if (/^[a-z]+:/i.test(target)) continue;
    const [path, anchor] = target.split("#", 2) as [string, string | undefined];
    const resolved = path === "" ? file : relative(root, resolve(root, dirname(file), path)) + (path.endsWith("/") ? "/" : "");
    mentions.push({ file, line: lineOf(text, match.index), target: resolved + (anchor === undefined ? "" : `#${anchor}`) });
  }
  return mentions;
}

/**
 * GitHub's anchor for a heading (github-slugger's rule): lower case, punctuation other than `-` and
 * `_` dropped, each space a hyphen; a repeated heading gets `-1`, `-2`, ….
 */
function headingAnchor(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "");
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = headingAnchor(heading[1] as string);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** Why a mention does not resolve, or null when it does. */
function problemOf(target: string): string | null {
  const [path, anchor] = target.split("#", 2) as [string, string | undefined];
  const absolute = join(root, path);
  if (!existsSync(absolute)) return "no such file";
  if (path.endsWith("/") && !statSync(absolute).isDirectory()) return "not a folder";
  if (anchor === undefined || extname(path) !== ".md") return null;
  return anchorsOf(readFileSync(absolute, "utf8")).has(anchor) ? null : "no heading has this anchor";
}

function markdownPages(): string[] {
  return [join(root, "README.md"), ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => join(root, "docs", name))];
}

/** Every piece of text that is read: each docs page and the README whole, each source comment. */
function texts(): { file: string; whole: string; piece: string; offset: number; markdown: boolean }[] {
  const found: { file: string; whole: string; piece: string; offset: number; markdown: boolean }[] = [];
  for (const page of markdownPages()) {
    const text = readFileSync(page, "utf8");
    found.push({ file: relative(root, page), whole: text, piece: text, offset: 0, markdown: true });
  }
  for (const folder of commentedFolders) {
    for (const path of walk(join(root, folder), (path) => sourceExtensions.includes(extname(path)))) {
      const text = readFileSync(path, "utf8");
      for (const comment of comments(path, text)) found.push({ file: relative(root, path), whole: text, piece: comment.text, offset: comment.offset, markdown: false });
    }
  }
  return found;
}

describe("every repository path the docs and comments name exists", () => {
  it("reads paths, links and anchors the way a reader follows them", () => {
    expect(headingAnchor("4. The log")).toBe("4-the-log");
    expect(headingAnchor("`recordedAt` never decreases")).toBe("recordedat-never-decreases");
    expect(headingAnchor("The global order, and why positions come with the transaction ID")).toBe(
      "the-global-order-and-why-positions-come-with-the-transaction-id",
    );
    expect(headingAnchor("Speed-ups — and their references")).toBe("speed-ups--and-their-references");
    const text = "see src/log/event-log.ts, docs/log.md#durability and `test/**/*.test.ts` or src/providers/<format>/.";
    expect(pathMentions("x.md", text, text, 0).map((mention) => mention.target)).toEqual(["src/log/event-log.ts", "docs/log.md#durability"]);
    expect(pathMentions("x.md", "dist/src/index.js and https://example.com/src/a.ts", "dist/src/index.js and https://example.com/src/a.ts", 0)).toEqual([]);
    expect(linkMentions("docs/policy.md", "[log](log.md#durability) [here](#secrets) [web](https://x.org/a.md)").map((mention) => mention.target)).toEqual([
      "docs/log.md#durability",
      "docs/policy.md#secrets",
    ]);
    expect(problemOf("docs/no-such-page.md")).toBe("no such file");
    expect(problemOf("docs/log.md#no-such-heading")).toBe("no heading has this anchor");
    expect(problemOf("src/log/")).toBeNull();
    const cited = 'as log.md, "What a consumer is handed" says; (docs/policy.md, "No such section"); notes.md, "a file"';
    expect(titleMentions("x.ts", cited, cited, 0).map(({ target, title }) => `${target}: ${title}`)).toEqual([
      "docs/log.md: What a consumer is handed",
      "docs/policy.md: No such section",
    ]);
    expect(titlesOf("## `recordedAt` never decreases\n- **What the runtime asks for** (x)\n```\n# not a heading\n```")).toEqual([
      "recordedat never decreases",
      "what the runtime asks for",
    ]);
  });

  it("finds the comments of a source file, wherever they sit", () => {
    const text = "const a = `x ${1} // not a comment`;\n/** one */\nfunction f() {\n  g(); // two\n  // three\n}\n// four\n";
    expect(comments("x.ts", text).map((comment) => comment.text)).toEqual(["/** one */", "// two", "// three", "// four"]);
  });

  it("holds for docs/*.md, README.md and the comments of the source, tests, bench and scripts", () => {
    const problems = texts().flatMap(({ file, whole, piece, offset, markdown }) =>
      [...pathMentions(file, whole, piece, offset), ...(markdown ? linkMentions(file, whole) : [])].flatMap((mention) => {
        const problem = problemOf(mention.target);
        return problem === null ? [] : [`${mention.file}:${mention.line}: ${mention.target} (${problem})`];
      }),
    );
    expect(problems).toEqual([]);
  });

  it("a section cited by its title is a heading or a bold lead-in of that page", () => {
    const titles = new Map<string, string[]>();
    const titlesOfPage = (page: string) => titles.get(page) ?? titles.set(page, titlesOf(readFileSync(join(root, page), "utf8"))).get(page)!;
    const problems = texts().flatMap(({ file, whole, piece, offset }) =>
      titleMentions(file, whole, piece, offset).flatMap((mention) => {
        const title = plainTitle(mention.title);
        return titlesOfPage(mention.target).some((candidate) => candidate.includes(title)) ? [] : [`${mention.file}:${mention.line}: ${mention.target}, "${mention.title}" (no such section)`];
      }),
    );
    expect(problems).toEqual([]);
  });

  it("names no section by a bare number", () => {
    expect("the §15 scenario, RFC 9110 §11.4, [§6](#6-replay-and-decision-versions), as in §8.3".match(bareSection)).toEqual(["§15", "§8.3"]);
    const numbers = texts().flatMap(({ file, whole, piece, offset }) =>
      [...piece.matchAll(bareSection)].map((match) => `${file}:${lineOf(whole, offset + match.index)}: ${match[0]}`),
    );
    expect(numbers).toEqual([]);
  });

  it("cites the design in docs/, never a design file the repository does not hold", () => {
    // Spelled in parts, so that this file does not hold what it looks for.
    const design = ["DES", "IGN"].join("");
    const shared = ["..", "shared", ""].join("/");
    expect([`${design}.md §3`, `(${design} §8.2)`, `${design}'s rule`, `${shared}STYLE.md`, "docs/design.md#4-the-log", `${design}_NOTE`].map((text) => text.match(foreignDesign)?.[0] ?? null)).toEqual([
      design,
      design,
      design,
      shared,
      null,
      null,
    ]);
    const citations = walk(root, (path) => !/\.(png|jpg|ico|woff2?)$/.test(path)).flatMap((path) => {
      const text = readFileSync(path, "utf8");
      return [...text.matchAll(foreignDesign)].map((match) => `${relative(root, path)}:${lineOf(text, match.index)}: ${match[0]}`);
    });
    expect(citations).toEqual([]);
  });
});
