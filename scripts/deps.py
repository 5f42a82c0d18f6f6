#!/usr/bin/env python3
"""The shape of cldiff's dependencies: includes between modules, calls between files.

    deps.py SOURCE_DIR [--build BUILD_DIR]   check; exit 1 listing every circle and wrong include
    deps.py SOURCE_DIR --build -             the same, calls read from the sources (no build)
    deps.py ... --known FILE                 problems listed in FILE pass (and must still occur)
    deps.py SOURCE_DIR --stats               sizes: lines of src/cli/*.c, the longest functions
    deps.py --self-test                      plant a circle and an upward include; check both are found

What is checked (docs/design.md §2):

- includes: every `#include "..."` of a file under src/, probes/ or report/ that names another
  module's header must name a module that the includer's row of the level table in
  docs/design.md §2 lists under "may use" (the table is read from the page, so the page and the
  code cannot drift apart). A header of a lower level that the row does not list, one of the same
  level, and one of a higher level are all reported; the last as "upward";
- include circles between files (a header including, through others, itself);
- calls between files: with --build, the object files of the library and the executable
  (BUILD_DIR/CMakeFiles/cldiff_lib.dir, cldiff.dir) are read with `nm`: file X depends on file Y
  when X's object leaves a symbol undefined that Y's object defines (a function called, or a
  global read). A strongly connected set of two or more files is a circle. Objects whose source
  is gone (a stale build after a move) are skipped.

Python 3 standard library and binutils' nm only.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCAN_DIRS = ("src", "probes", "report")
SRC_EXT = (".c", ".h")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


# ------------------------------------------------------------------ the level table (§2)

def read_level_table(design_path):
    """{module: (level, set of modules it may use or None for 'everything')} from §2's table."""
    text = open(design_path, encoding="utf-8").read()
    m = re.search(r"^## 2\..*?$(.*?)^## 3\.", text, re.M | re.S)
    if not m:
        raise SystemExit("deps.py: no section 2 in %s" % design_path)
    rows = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not re.fullmatch(r"\d+(\.\d+)?", cells[0]):
            continue
        mod = cells[1].strip("`")
        rows.append((float(cells[0]), mod, cells[2]))
    names = [r[1] for r in rows]
    table = {}
    for level, mod, uses in rows:
        if uses.startswith("everything"):
            table[mod] = (level, None)
            continue
        allowed = set()
        for other in names:
            if re.search(r"(?<![\w/])" + re.escape(other) + r"(?![\w/])", uses):
                allowed.add(other)
        table[mod] = (level, allowed)
    if not table:
        raise SystemExit("deps.py: no level table in section 2 of %s" % design_path)
    return table


def module_of(rel, table):
    """The module of a path relative to the source dir: the longest table name that is a
    directory prefix of it (src/ stripped), or a file stem (backends/registry)."""
    p = rel[4:] if rel.startswith("src/") else rel
    stem = os.path.splitext(p)[0]
    best = None
    for mod in table:
        if p.startswith(mod + "/") or stem == mod:
            if best is None or len(mod) > len(best):
                best = mod
    return best


# ------------------------------------------------------------------ sources and includes

def source_files(root):
    out = []
    for d in SCAN_DIRS:
        top = os.path.join(root, d)
        for dirpath, dirnames, files in os.walk(top):
            dirnames.sort()
            for f in sorted(files):
                if f.endswith(SRC_EXT):
                    out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def resolve_include(root, rel, name):
    for base in (os.path.dirname(rel), "src", ""):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def include_graph(root, files):
    edges = {f: set() for f in files}
    for f in files:
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for name in INCLUDE_RE.findall(text):
            tgt = resolve_include(root, f, name)
            if tgt and tgt in edges and tgt != f:
                edges[f].add(tgt)
    return edges


def include_problems(edges, table):
    """[(kind, includer, included)] for includes the table does not allow."""
    bad = []
    for f in sorted(edges):
        mf = module_of(f, table)
        for t in sorted(edges[f]):
            mt = module_of(t, table)
            if mf is None or mt is None or mf == mt:
                continue
            lf, allowed = table[mf]
            lt = table[mt][0]
            if allowed is None:
                ok = True
            else:
                ok = mt in allowed
            if lt > lf:
                bad.append(("upward", f, t, mf, mt))
            elif not ok:
                bad.append(("same level" if lt == lf else "not listed", f, t, mf, mt))
    # "nothing includes X" for a row whose uses say so
    return bad


# ------------------------------------------------------------------ calls (nm)

def object_files(build):
    out = []
    for tgt in ("cldiff_lib.dir", "cldiff.dir"):
        top = os.path.join(build, "CMakeFiles", tgt)
        for dirpath, dirnames, files in os.walk(top):
            dirnames.sort()
            for f in sorted(files):
                if f.endswith(".c.o"):
                    full = os.path.join(dirpath, f)
                    out.append((os.path.relpath(full, top)[:-2], full))
    return out


def call_graph(root, build, nm="nm", why=None):
    """{file: set of files whose symbols it uses}, files relative to root; why, when given,
    receives {(file, file): set of symbols} behind each edge."""
    objs = {}
    for rel, full in object_files(build):
        if os.path.isfile(os.path.join(root, rel)):
            objs[full] = rel  # else a stale object: its source moved or was removed
    syms = {rel: (set(), set()) for rel in objs.values()}
    names = sorted(objs)
    for i in range(0, len(names), 200):  # one nm for many objects: "file.o: symbol type ..."
        res = subprocess.run([nm, "-g", "-P", "-A"] + names[i:i + 200], capture_output=True, text=True, check=True)
        for line in res.stdout.splitlines():
            head, _, rest = line.partition(": ")
            parts = rest.split()
            if head not in objs or len(parts) < 2:
                continue
            d, u = syms[objs[head]]
            if parts[1] == "U":
                u.add(parts[0])
            elif parts[1] not in ("w", "v"):
                d.add(parts[0])
    owner = {}
    for f, (d, _) in syms.items():
        for s in d:
            owner.setdefault(s, f)
    edges = {f: set() for f in syms}
    for f, (_, u) in syms.items():
        for s in u:
            o = owner.get(s)
            if o and o != f:
                edges[f].add(o)
                if why is not None:
                    why.setdefault((f, o), set()).add(s)
    return edges


def source_call_graph(root, why=None):
    """The same graph as call_graph, read from the sources (no build): file X depends on file Y
    when an identifier of X's code is an external definition of Y. Approximate (a local name
    that shadows another file's function counts); used for trees that were not built."""
    files = [f for f in source_files(root) if f.endswith(".c") and not f.endswith(("/main.c",)) or f == "src/cli/main.c"]
    owner, idents = {}, {}
    for f in files:
        g = set()
        functions(os.path.join(root, f), g)
        for name in g:
            owner.setdefault(name, f)
        code = strip_code(open(os.path.join(root, f), encoding="utf-8", errors="replace").read())
        code = re.sub(r"^\s*#.*$", "", code, flags=re.M)
        idents[f] = set(re.findall(r"[A-Za-z_]\w*", code))
    edges = {f: set() for f in files}
    for f in files:
        for name in idents[f]:
            o = owner.get(name)
            if o and o != f:
                edges[f].add(o)
                if why is not None:
                    why.setdefault((f, o), set()).add(name)
    return edges


# ------------------------------------------------------------------ circles

def circles(edges):
    """Strongly connected sets of two or more nodes (Tarjan, iterative), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def module_graph(edges, table):
    mg = {}
    for f, ts in edges.items():
        mf = module_of(f, table)
        if mf is None:
            continue
        mg.setdefault(mf, set())
        for t in ts:
            mt = module_of(t, table)
            if mt and mt != mf:
                mg[mf].add(mt)
    return mg


# ------------------------------------------------------------------ stats

FUNC_HEAD_RE = re.compile(r"([A-Za-z_]\w*)\s*\(")


def strip_code(text):
    """Comments, strings and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path, globals_out=None):
    """[(name, first line, last line)] of the function definitions of a C file; globals_out, when
    given, receives the names of the file's external definitions (functions and variables)."""
    code = strip_code(open(path, encoding="utf-8", errors="replace").read())
    out, depth, line, head_start, head = [], 0, 1, 1, ""
    start = None
    name = None
    for c in code:
        if c in "{;=" and depth == 0 and globals_out is not None:
            h = " ".join(head.split())
            if h and not re.match(r"(static|extern|typedef|struct\s+\w+\s*$|enum|union)\b", h):
                pre = h.split("(")[0] if "(" in h and (c == "{" or "=" not in h.split("(")[0]) else h
                ids = re.findall(r"[A-Za-z_]\w*", pre.split("[")[0])
                if ids and (c != ";" or "(" not in h):
                    globals_out.add(ids[-1])
        if c == "{":
            if depth == 0:
                h = head.strip()
                m = FUNC_HEAD_RE.findall(h.split("(")[0] + "(") if "(" in h else []
                if m and "=" not in h.split("(")[0] and not h.startswith(("struct", "typedef", "enum", "union")):
                    name, start = m[-1], head_start
                else:
                    name, start = None, None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if name:
                    out.append((name, start, line))
                name, head = None, ""
                head_start = line + 1
        elif c == ";" and depth == 0:
            head = ""
            head_start = line + 1
        elif depth == 0:
            if not head.strip() and not c.isspace():
                head_start = line
            if c == "#":
                head = ""
            head += c
        if c == "\n":
            line += 1
            if depth == 0 and head.strip().startswith("#"):
                head = ""
    return out


def stats(root):
    cli = sorted(f for f in source_files(root) if f.startswith("src/cli/") and f.endswith(".c"))
    total = 0
    print("lines of src/cli/*.c:")
    for f in cli:
        n = sum(1 for _ in open(os.path.join(root, f), encoding="utf-8", errors="replace"))
        total += n
        print("  %6d %s" % (n, f))
    print("  %6d total (%d files)" % (total, len(cli)))
    funcs = []
    for f in source_files(root):
        if f.endswith(".c"):
            for name, a, b in functions(os.path.join(root, f)):
                funcs.append((b - a + 1, f, name, a))
    funcs.sort(reverse=True)
    print("longest functions (lines, signature to closing brace), of %d in src/ probes/ report/:" % len(funcs))
    for n, f, name, a in funcs[:10]:
        print("  %6d %s:%d %s" % (n, f, a, name))
    for prefix in ("src/cli/", "src/verdict/"):
        sub = [x for x in funcs if x[1].startswith(prefix)]
        if sub:
            n, f, name, a = sub[0]
            print("longest in %s: %d %s:%d %s" % (prefix, n, f, a, name))


# ------------------------------------------------------------------ the check

def read_known(path):
    """The problems a known list accepts, one per line as deps.py prints them (# comments)."""
    known = []
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if line:
            known.append(line)
    return known


def check(root, build, design, nm="nm", out=sys.stdout, known=None):
    """Prints every problem; returns 1 when one is not in known (a list of lines), or when a
    known one is no longer found (the list only shrinks), else 0."""
    table = read_level_table(design)
    files = source_files(root)
    unknown = sorted({f for f in files if module_of(f, table) is None})
    found = []

    def problem(line, detail=()):
        found.append(line)
        tag = "known: " if known is not None and line in known else ""
        print(tag + line, file=out)
        for d in detail:
            print(d, file=out)

    for f in unknown:
        problem("no module: %s (not under a directory of the table in docs/design.md §2)" % f)
    inc = include_graph(root, files)
    for kind, f, t, mf, mt in include_problems(inc, table):
        problem("include %s: %s (%s) includes %s (%s)" % (kind, f, mf, t, mt))
    for c in circles(inc):
        problem("include circle: %s" % " <-> ".join(c))
    for c in circles(module_graph(inc, table)):
        problem("module include circle: %s" % " <-> ".join(c))
    n_call = None
    if build:
        why = {}
        calls = source_call_graph(root, why) if build == "-" else call_graph(root, build, nm, why)
        if not calls:
            print("no object files under %s/CMakeFiles/cldiff_lib.dir: build first" % build, file=out)
            return 1
        cc = circles(calls)
        n_call = len(cc)
        for c in cc:
            members = set(c)
            detail = []
            for f in c:
                for t in sorted(calls[f] & members):
                    syms = sorted(why.get((f, t), ()))
                    detail.append("    %s -> %s: %s%s" % (f, t, ", ".join(syms[:6]), " ..." if len(syms) > 6 else ""))
            problem("call circle (%d files): %s" % (len(c), " <-> ".join(c)), detail)
    new = [p for p in found if known is None or p not in known]
    gone = [k for k in (known or []) if k not in found and (build or not k.startswith("call circle"))]
    for k in gone:
        print("no longer found (remove it from the known list): %s" % k, file=out)
    print("deps: %d files, %d include edges%s; %d problem%s, %d new, %d known gone" %
          (len(files), sum(len(v) for v in inc.values()), "" if n_call is None else ", %d call circles" % n_call,
           len(found), "" if len(found) == 1 else "s", len(new), len(gone)), file=out)
    return 1 if new or gone else 0


# ------------------------------------------------------------------ self-test

DESIGN_FIXTURE = """# fixture
## 2. Modules
| level | module | may use |
|---|---|---|
| 0 | `util` | libc only |
| 1 | `model` | util |
| 2 | `cli` | everything; nothing includes `cli` |
## 3. Next
"""


def self_test():
    failures = []
    tmp = tempfile.mkdtemp(prefix="cd_deps_")
    try:
        def write(rel, text):
            p = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        write("docs/design.md", DESIGN_FIXTURE)
        write("src/util/u.h", "int u(void);\n")
        write("src/util/u.c", '#include "util/u.h"\nint u(void) { return 1; }\n')
        write("src/model/a.h", '#include "util/u.h"\nint a(int);\n')
        write("src/model/a.c", '#include "model/a.h"\nint b(int);\nint a(int x) { return x > 0 ? b(x - 1) : u(); }\n')
        write("src/model/b.c", '#include "model/a.h"\nint b(int x) { return x; }\n')
        write("src/cli/c.c", '#include "model/a.h"\nint main(void) { return a(2); }\n')
        design = os.path.join(tmp, "docs/design.md")
        table = read_level_table(design)
        if table.get("model") != (1.0, {"util"}) or table.get("cli", (0, 1))[1] is not None:
            failures.append("level table read wrong: %r" % table)

        def run_check(build=None):
            import io
            buf = io.StringIO()
            rc = check(tmp, build, design, out=buf)
            return rc, buf.getvalue()

        rc, text = run_check()
        if rc != 0:
            failures.append("clean fixture reported problems:\n" + text)
        # an upward include: util includes model
        write("src/util/u.c", '#include "util/u.h"\n#include "model/a.h"\nint u(void) { return 1; }\n')
        rc, text = run_check()
        if rc != 1 or "include upward: src/util/u.c (util) includes src/model/a.h (model)" not in text:
            failures.append("upward include not found:\n" + text)
        write("src/util/u.c", '#include "util/u.h"\nint u(void) { return 1; }\n')
        # a known list accepts exactly the problems it names, and fails when one is gone
        write("src/util/u.c", '#include "util/u.h"\n#include "model/a.h"\nint u(void) { return 1; }\n')
        import io
        line = "include upward: src/util/u.c (util) includes src/model/a.h (model)"
        buf = io.StringIO()
        both = [line, "module include circle: model <-> util"]
        if check(tmp, None, design, out=buf, known=both) != 0 or "known: " + line not in buf.getvalue():
            failures.append("known problem not accepted:\n" + buf.getvalue())
        write("src/util/u.c", '#include "util/u.h"\nint u(void) { return 1; }\n')
        buf = io.StringIO()
        if check(tmp, None, design, out=buf, known=both) != 1 or "no longer found" not in buf.getvalue():
            failures.append("a known problem that is gone was not reported:\n" + buf.getvalue())
        # an include circle between two headers
        write("src/model/a.h", '#include "util/u.h"\n#include "model/b.h"\nint a(int);\n')
        write("src/model/b.h", '#include "model/a.h"\n')
        rc, text = run_check()
        if rc != 1 or "include circle: src/model/a.h <-> src/model/b.h" not in text:
            failures.append("include circle not found:\n" + text)
        os.remove(os.path.join(tmp, "src/model/b.h"))
        write("src/model/a.h", '#include "util/u.h"\nint a(int);\n')
        # calls: compile the fixture and read it with nm; then plant a circle (b calls a)
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc and shutil.which("nm"):
            def build_objs(build):
                for rel in ("src/util/u.c", "src/model/a.c", "src/model/b.c", "src/cli/c.c"):
                    tgt = "cldiff.dir" if rel.endswith("c.c") else "cldiff_lib.dir"
                    o = os.path.join(build, "CMakeFiles", tgt, rel + ".o")
                    os.makedirs(os.path.dirname(o), exist_ok=True)
                    subprocess.run([cc, "-c", "-I", os.path.join(tmp, "src"), os.path.join(tmp, rel), "-o", o],
                                   check=True)
            b1 = os.path.join(tmp, "build1")
            build_objs(b1)
            # a stale object of a moved file must not count
            stale = os.path.join(b1, "CMakeFiles", "cldiff_lib.dir", "src", "model", "gone.c.o")
            shutil.copy(os.path.join(b1, "CMakeFiles", "cldiff_lib.dir", "src", "model", "b.c.o"), stale)
            rc, text = run_check(b1)
            if rc != 0 or "0 call circles" not in text:
                failures.append("clean objects reported problems:\n" + text)
            write("src/model/b.c", '#include "model/a.h"\nint b(int x) { return x > 5 ? a(x - 5) : x; }\n')
            b2 = os.path.join(tmp, "build2")
            build_objs(b2)
            rc, text = run_check(b2)
            if rc != 1 or "call circle (2 files): src/model/a.c <-> src/model/b.c" not in text:
                failures.append("planted call circle not found:\n" + text)
        else:
            print("self-test: no C compiler or nm; the call graph part is checked on a synthetic graph only")
        # longer circles on a synthetic graph, and none in a chain
        g = {"x": {"y"}, "y": {"z"}, "z": {"x"}, "p": {"q"}, "q": set(), "x2": {"x"}}
        if circles(g) != [["x", "y", "z"]]:
            failures.append("three-file circle: %r" % circles(g))
        # the function measure
        write("src/cli/f.c", "static int f(int x)\n{\n    if (x) { return 1; }\n    return 0;\n}\n"
                             "int g(void) { return f(1); }\nstatic const int t[] = {1, 2};\n")
        fs = functions(os.path.join(tmp, "src/cli/f.c"))
        if fs != [("f", 1, 5), ("g", 6, 6)]:
            failures.append("functions measured wrong: %r" % fs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("SELF-TEST FAIL: " + f)
    print("self-test: %s" % ("FAIL" if failures else "ok"))
    return 1 if failures else 0


def main(argv):
    args = argv[1:]
    if args[:1] == ["--self-test"]:
        return self_test()
    if not args or args[0].startswith("-"):
        print(__doc__)
        return 2
    root = os.path.abspath(args[0])
    build, design, want_stats, nm, known = None, os.path.join(root, "docs", "design.md"), False, "nm", None
    i = 1
    while i < len(args):
        if args[i] == "--build" and i + 1 < len(args):
            build = args[i + 1]
            i += 2
        elif args[i] == "--design" and i + 1 < len(args):
            design = args[i + 1]
            i += 2
        elif args[i] == "--nm" and i + 1 < len(args):
            nm = args[i + 1]
            i += 2
        elif args[i] == "--known" and i + 1 < len(args):
            known = read_known(args[i + 1])
            i += 2
        elif args[i] == "--stats":
            want_stats = True
            i += 1
        else:
            print("deps.py: unknown argument %s" % args[i])
            return 2
    if want_stats:
        stats(root)
        return 0
    return check(root, build, design, nm, known=known)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
