#!/usr/bin/env python3
"""Every document the code cites is in the repository, with the section and rule it cites.

    check_doc_refs.py SOURCE_DIR      check the tree; exit 1 listing every broken citation
    check_doc_refs.py --self-test     check the checker on a small planted tree

What is checked, in src/ probes/ report/ kernels/ scripts/ tests/ cmake files, README.md and
docs/*.md:

- a page named as docs/<name>.md exists;
- a section reference "§N.M" (also "§7.6-7.9" ranges and "§8.2 rule 11") names a heading of the
  page it refers to (a heading that starts with N.M, as "### 7.6 `fc`" or "## 1. Validation"),
  and the rule is a numbered item ("11. ...") of that section. A § refers to the page cited
  closest before it: on the same line, else (source files) earlier in the file, else (docs
  pages) the page itself. A § after a citation of an outside standard on its line ("OpenCL 1.2
  §7.4", "Higham ... §3.1") is not ours and is skipped;
- a heading cited by its title, as in docs/verdicts.md "Output tolerance" or
  docs/design.md, "Backends", is a heading of that page (its text contains the title);
- nothing cites a document that lives outside the repository (DESIGN.md, "nb-format" without
  docs/, ../shared/docs, the field notes): cite the docs/ page instead.
"""
import os
import re
import sys
import tempfile

SCAN_DIRS = ("src", "probes", "report", "kernels", "scripts", "tests", "cmake")
TEXT_EXT = (".c", ".h", ".cc", ".cpp", ".cl", ".py", ".sh", ".cmake", ".md", ".txt", ".in")
SKIP_DIRS = {"seeds", "regressions", "__pycache__"}
SELF_REL = os.path.join("tests", "docs", "check_doc_refs.py")  # cites broken pages on purpose

DOC_RE = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_-]+)\.md")
TITLE_RE = re.compile(r'(?<![\w/.-])docs/([A-Za-z0-9_-]+)\.md[,;:]? ?\(?"([^"]{2,80})"')
SECTION_RE = re.compile(r"§\s?(\d+(?:\.\d+)*[a-z]?)(?:\s*[-–]\s*§?(\d+(?:\.\d+)*[a-z]?))?(?:\s+rules?\s+(\d+))?")
# Outside standards whose sections the code may cite: a § after one of these (on its line, with
# no docs/ page cited in between) is not a reference to our documents.
FOREIGN_RE = re.compile(r"OpenCL \d|Higham|Stability|IEEE|ISO|RFC \d|POSIX|C11|C99|ONNX|PEP \d")
OUTSIDE = [
    (re.compile(r"(?<![\w/])DESIGN\.md"), "DESIGN.md is not in the repository: cite docs/design.md"),
    (re.compile(r"(?<![\w/])nb-format(?!\.md)"),
     "'nb-format' names a document outside the repository: cite docs/nb-format.md"),
    (re.compile(r"(?<!docs/)(?<![\w(])nb-format\.md"), "cite the page as docs/nb-format.md"),
    (re.compile(r"shared/docs/"), "../shared/docs is outside the repository: cite the docs/ page"),
    (re.compile(r"field-notes"), "the field notes are outside the repository: say what they say"),
]


def headings(path):
    """[(level, number, line index)] of a markdown page's numbered headings, and its lines."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    out = []
    fence = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        m = re.match(r"(#{1,6})\s+§?(\d+(?:\.\d+)*[a-z]?)(?:\.?\s|\.?$)", line)
        if m:
            out.append((len(m.group(1)), m.group(2), i))
    return out, lines


def titles(lines):
    """The text of every heading of a page, lower case, without markup."""
    fence = False
    out = []
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"#{1,6}\s", line):
            out.append(re.sub(r"[`*_]", "", line.lstrip("#")).strip().lower())
    return out


class Docs:
    def __init__(self, root):
        self.root = root
        self.cache = {}

    def page(self, name):
        if name not in self.cache:
            p = os.path.join(self.root, "docs", name + ".md")
            self.cache[name] = headings(p) if os.path.isfile(p) else None
        return self.cache[name]

    def title_problem(self, name, title):
        got = self.page(name)
        if got is None:
            return None  # reported as a missing page
        want = re.sub(r"[`*_]", "", title).strip().lower()
        if any(want in t for t in titles(got[1])):
            return None
        return 'docs/%s.md has no heading "%s"' % (name, title)

    def section_problem(self, name, sec, rule):
        got = self.page(name)
        if got is None:
            return "docs/%s.md does not exist" % name
        heads, lines = got
        for k, (lvl, num, i) in enumerate(heads):
            if num != sec:
                continue
            if rule is None:
                return None
            end = heads[k + 1][2] if k + 1 < len(heads) else len(lines)
            for line in lines[i + 1:end]:
                if re.match(r"\s*%s\.\s" % re.escape(rule), line):
                    return None
            return "docs/%s.md §%s has no rule %s" % (name, sec, rule)
        return "docs/%s.md has no section %s" % (name, sec)


def files_to_scan(root):
    for top in ("README.md", "CMakeLists.txt"):
        p = os.path.join(root, top)
        if os.path.isfile(p):
            yield p
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        for f in sorted(os.listdir(docs)):
            if f.endswith(".md"):
                yield os.path.join(docs, f)
    for d in SCAN_DIRS:
        base = os.path.join(root, d)
        for dp, dn, fn in os.walk(base):
            dn[:] = sorted(x for x in dn if x not in SKIP_DIRS)
            for f in sorted(fn):
                p = os.path.join(dp, f)
                if os.path.relpath(p, root) == SELF_REL:
                    continue
                if f.endswith(TEXT_EXT) or f == "CMakeLists.txt":
                    yield p


def check(root):
    """List of 'path:line: problem' strings."""
    root = os.path.abspath(root)
    docs = Docs(root)
    problems = []
    for path in files_to_scan(root):
        rel = os.path.relpath(path, root)
        is_page = rel.startswith("docs" + os.sep) and rel.endswith(".md")
        own = os.path.splitext(os.path.basename(rel))[0] if is_page else None
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        current = None  # source files: the page cited last
        for ln, line in enumerate(text.split("\n"), 1):
            if not any(k in line for k in ("§", "docs/", "DESIGN", "nb-format", "field-notes")):
                continue
            for rx, advice in OUTSIDE:
                for m in rx.finditer(line):
                    problems.append("%s:%d: %s" % (rel, ln, advice))
            cites = [(m.start(), m.group(1)) for m in DOC_RE.finditer(line)]
            for _, name in cites:
                if docs.page(name) is None:
                    problems.append("%s:%d: cites docs/%s.md, which does not exist" % (rel, ln, name))
            for m in TITLE_RE.finditer(line):
                why = docs.title_problem(m.group(1), m.group(2))
                if why:
                    problems.append("%s:%d: %s" % (rel, ln, why))
            for m in SECTION_RE.finditer(line):
                before = [n for pos, n in cites if pos < m.start()]
                last_doc = max((pos for pos, _ in cites if pos < m.start()), default=-1)
                foreign = [x.end() for x in FOREIGN_RE.finditer(line, 0, m.start())]
                if foreign and foreign[-1] > last_doc:
                    continue
                target = before[-1] if before else (own if is_page else current)
                if target is None:
                    problems.append("%s:%d: '%s' names a section of no document: cite the page (docs/<name>.md §N)"
                                    % (rel, ln, m.group(0).strip()))
                    continue
                for sec in (m.group(1), m.group(2)):
                    if sec is None:
                        continue
                    why = docs.section_problem(target, sec, m.group(3) if sec == m.group(1) else None)
                    if why:
                        problems.append("%s:%d: '%s': %s" % (rel, ln, m.group(0).strip(), why))
            if cites:
                current = cites[-1][1]
    return problems


def self_test():
    """The checker finds each planted fault and nothing else."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "docs"))
        os.makedirs(os.path.join(d, "src", "m"))
        with open(os.path.join(d, "docs", "fmt.md"), "w") as f:
            f.write("# fmt\n\n## 1. One\n\n### 1.2 Two\n\n## 8. Rules\n\n### 8.1 First\n\n1. a rule\n2. b rule\n"
                    "\n### 8.2 Next\n\n3. c rule\n\n```\n## 9. in a code fence, not a heading\n```\n")
        with open(os.path.join(d, "docs", "other.md"), "w") as f:
            f.write("# other\n\nSee §1 and docs/fmt.md §1.2 (and its §8.2).\nThis page's §2 is missing.\n\n## 1. Only\n")
        with open(os.path.join(d, "src", "m", "a.c"), "w") as f:
            f.write("/* Reader (docs/fmt.md §1, §1.2, §8.1 rule 2).\n"
                    " * continued: §8.2 rule 3, §1.2-8.1 */\n"
                    "/* bad: §1.3, §8.1 rule 3, §9 */\n"
                    "/* Higham, Accuracy and Stability, §3.1 is not ours; OpenCL 1.2 §7.4 neither */\n"
                    "/* docs/gone.md and DESIGN.md and nb-format §1 and ../shared/docs/x.md */\n"
                    "/* docs/fmt.md \"Two\" and docs/fmt.md, \"`Rules`\" exist; docs/fmt.md (\"Three\") does not */\n")
        with open(os.path.join(d, "src", "m", "b.h"), "w") as f:
            f.write("/* a bare §1 with no page before it */\n")
        got = sorted(check(d))
        want = sorted([
            "docs/other.md:4: '§2': docs/other.md has no section 2",
            "src/m/a.c:3: '§1.3': docs/fmt.md has no section 1.3",
            "src/m/a.c:3: '§8.1 rule 3': docs/fmt.md §8.1 has no rule 3",
            "src/m/a.c:3: '§9': docs/fmt.md has no section 9",
            "src/m/a.c:5: cites docs/gone.md, which does not exist",
            "src/m/a.c:5: DESIGN.md is not in the repository: cite docs/design.md",
            "src/m/a.c:5: 'nb-format' names a document outside the repository: cite docs/nb-format.md",
            "src/m/a.c:5: ../shared/docs is outside the repository: cite the docs/ page",
            "src/m/a.c:5: '§1': docs/gone.md does not exist",
            "src/m/b.h:1: '§1' names a section of no document: cite the page (docs/<name>.md §N)",
            'src/m/a.c:6: docs/fmt.md has no heading "Three"',
        ])
        if got != want:
            print("self-test FAILED\n  expected:\n    %s\n  got:\n    %s" % ("\n    ".join(want), "\n    ".join(got)))
            return 1
    print("self-test: %d planted faults found, nothing else" % len(want))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_doc_refs.py SOURCE_DIR | --self-test", file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    if problems:
        print("%d broken document citation(s): fix the citation or the page (docs/design.md, "
              "docs/nb-format.md keep their section numbers for this)" % len(problems))
        return 1
    print("every cited document, section and rule exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
