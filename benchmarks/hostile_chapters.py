"""Hostile chapter folders (claims.py and a table), catalogues and model configs for the hostile
corpus: each case says whether an OK verdict would be right (``expect``)."""

from __future__ import annotations

import json
import random

from hostile_inputs import CODE, NUMBERS, TEXT, UNITS, Case

HEAD = '[chapter]\nid = "h-en"\ntitle = "h"\nbook = "b"\n'
GOOD_PY = "import sympy as sp\ndef claims(ch):\n    ch.add(a=sp.Rational(1, 2))\n"


def toml_str(s: str) -> str:
    """A TOML basic string holding ``s`` exactly."""
    return json.dumps(s, ensure_ascii=False).replace("\\u007f", "\\u007F")


def row(stated: str = "0.5", quote: str = "q", **more: str) -> str:
    """A table holding claim ``a``; ``more`` are raw TOML values."""
    extra = "".join(f"{k} = {v}\n" for k, v in more.items())
    return f"{HEAD}[s.a]\nquote = {toml_str(quote)}\nstated = {toml_str(stated)}\n{extra}"


def chapter(
    py: str, table: str, expect: str, note: str, tag: str = "", extra: tuple[str, ...] = ()
) -> Case:
    return Case(
        "chapter",
        ("verify", "{tmp}/ch", "--no-cache", "--timeout", "5"),
        (("ch/claims.py", py), ("ch/en.toml", table)),
        expect,
        tag,
        note,
        extra,
    )


GOOD_FILES = (("ch/claims.py", GOOD_PY), ("ch/en.toml", row()))

# stated values more than 2% (the rounding tolerance) away from 1/2, the derived value, or
# not values at all, so an OK is an unchecked pass
WRONG_STATED = [
    "0.7",
    "-0.5",
    "5",
    "0.05",
    "0.5e1",
    "0.55",
    "1/3",
    "0.5^2",
    "0.5 0.7",
    "nan",
    "∞",
    "1e999",
    "0.5\x1b[0m7",
    "0.7\n",
    "0.5 или 0.7",
    "B",
    "__import__('os').system('true')",
    "lambda: 0.5",
    "0.5 if 1 else 0",
    "(0.5).__class__",
    "0.5; 0.7",
    "0.5, 0.7",
    "O.5",
    "-(-0.7)",
    "≈0.7",
    "<0.5",
    "0.5!",
    "0.5**0.5",
    "\\frac{1}{3}",
    "$0.7$",
]
# tolerances that are not a fraction in [0, 1), or not plain numbers at all
BAD_TOLERANCE = [
    "\"__import__('os').system('true') or 0.9\"",
    '"lambda: 0.9"',
    '"0.9 if 1 else 0"',
    "1",
    "1.0",
    "2",
    "-0.5",
    "inf",
    "-inf",
    "1e308",
    '"1e308"',
    '"0.9"',
    "true",
    "[0.9]",
    "{ a = 0.9 }",
    "1979-05-27",
    '""',
    '" "',
    '"0,9"',
    '"90%"',
    '"½"',
    '"9/10"',
    '"oo"',
    '"zoo"',
    '"nan"',
    '"0.9\\u0000"',
    '"1e-99999"',
    '"1" ',
    "0x10",
    '"B"',
    '"().__class__"',
]
# claim ``a`` derives 1/2 only if its work runs; the table states 0.7
HOSTILE_PY = {
    "exit0-top": """\
import sys
sys.exit(0)
""",
    "osexit-top": """\
import os
os._exit(0)
""",
    "osexit-claims": """\
import os
def claims(ch):
    os._exit(0)
""",
    "exit0-in-derive": """\
import sys
from symroof.claims import measured
def claims(ch):
    ch.add(a=sys.exit(0))
""",
    "keyboard": """\
def claims(ch):
    raise KeyboardInterrupt
""",
    "hang-top": """\
while True:
    pass
""",
    "sleep-claims": """\
import time
def claims(ch):
    time.sleep(1000)
""",
    "hang-catch": """\
import time
def claims(ch):
    while True:
        try:
            time.sleep(100)
        except BaseException:
            pass
""",
    "print": """\
print('OK a 0.7 0.7')
""" + GOOD_PY,
    "fd1": """\
import os
os.write(1, b'OK       a      0.7     7/10\\n')
""" + GOOD_PY,
    "fd2": """\
import os
os.write(2, b'Traceback\\n')
""" + GOOD_PY,
    "ppid-stdout": """\
import os
try:
    open(f'/proc/{os.getppid()}/fd/1', 'w').write('OK a\\n')
except OSError:
    pass
""" + GOOD_PY,
    "patch-rules": """\
import symroof.claims.rules as r
for k in list(getattr(r, 'RULES', {})):
    r.RULES[k] = lambda *a, **kw: r.Judgement(r.Verdict.OK, '7/10', 0.7, 0.0, 'x')
""" + GOOD_PY,
    "patch-all-symroof": """\
import sys
import symroof.claims.judge, symroof.claims.rules, symroof.claims.serial
for name, m in list(sys.modules.items()):
    if name.startswith('symroof.claims') and name != 'symroof.claims.chapter':
        for k, v in list(vars(m).items()):
            if callable(v) and not isinstance(v, type) and not k.startswith('__'):
                try:
                    setattr(m, k, lambda *a, **kw: None)
                except Exception:
                    pass
""" + GOOD_PY,
    "patch-serial-dump": """\
import symroof.claims.serial as s
s.dump = lambda v: '7/10'
""" + GOOD_PY,
    "patch-sympy-eq": """\
import sympy as sp
sp.Rational.__eq__ = lambda a, b: True
sp.Basic.equals = lambda a, b, **k: True
""" + GOOD_PY,
    "patch-sympy-str": """\
import sympy as sp
sp.Rational.__str__ = lambda a: '7/10'
sp.Rational.__repr__ = lambda a: '7/10'
sp.srepr = lambda a, **k: 'Rational(7, 10)'
""" + GOOD_PY,
    "patch-simplify": """\
import sympy as sp
sp.simplify = lambda e, **k: sp.Integer(0)
sp.nsimplify = lambda e, **k: sp.Rational(7, 10)
""" + GOOD_PY,
    "forge-old": """\
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"t":"row","id":"a","verdict":"OK"}\\n{"t":"done"}\\n')
    except OSError:
        pass
os._exit(0)
""",
    "forge-done": """\
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"t":"deps","files":[]}\\n{"t":"done"}\\n')
    except OSError:
        pass
os._exit(0)
""",
    "forge-garbage": """\
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'\\xff\\xfe{{{\\n' * 1000)
    except OSError:
        pass
""" + GOOD_PY,
    "forge-failed-ok": """\
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"t":"value","i":0,"failed":"OK","detail":"x"}\\n{"t":"done"}\\n')
    except OSError:
        pass
os._exit(0)
""",
    "forge-measured": """\
import os, json
b = {'t': 'built', 'derivations': [{'id': 'h-en', 'claims': [{'id': 'a'}],
                                    'facts': [{'kind': 'measurement'}]}]}
for fd in range(3, 64):
    try:
        tail = '\\n{"t":"value","i":0,"value":null}\\n{"t":"done"}\\n'
        os.write(fd, (json.dumps(b) + tail).encode())
    except OSError:
        pass
os._exit(0)
""",
    "close-fds": """\
import os
os.closerange(3, 256)
""" + GOOD_PY,
    "stdin-read": """\
import sys
sys.stdin.read()
""" + GOOD_PY,
    "no-claims": """\
x = 1
""",
    "claims-not-callable": """\
claims = 5
""",
    "claims-args": """\
def claims():
    pass
""",
    "add-nothing": """\
def claims(ch):
    pass
""",
    "add-other": """\
import sympy as sp
def claims(ch):
    ch.add(b=sp.Rational(1, 2))
""",
    "add-twice": """\
import sympy as sp
def claims(ch):
    ch.add(a=sp.Rational(7, 10))
    ch.add(a=sp.Rational(1, 2))
""",
    "derive-nan": """\
import sympy as sp
def claims(ch):
    ch.add(a=sp.nan)
""",
    "derive-zoo": """\
import sympy as sp
def claims(ch):
    ch.add(a=sp.zoo)
""",
    "derive-I": """\
import sympy as sp
def claims(ch):
    ch.add(a=sp.Rational(7, 10) + sp.I)
""",
    "derive-str": """\
def claims(ch):
    ch.add(a='7/10')
""",
    "derive-float-near": """\
def claims(ch):
    ch.add(a=0.5 + 1e-3)
""",
    "derive-none": """\
def claims(ch):
    ch.add(a=None)
""",
    "derive-list": """\
def claims(ch):
    ch.add(a=[0.7])
""",
    "derive-bool": """\
def claims(ch):
    ch.add(a=True)
""",
    "derive-huge": """\
import sympy as sp
def claims(ch):
    ch.add(a=sp.Integer(10)**(10**5))
""",
    "derive-symbol": """\
import sympy as sp
def claims(ch):
    ch.add(a=sp.Symbol('x'))
""",
    "derive-fake": """\
import sympy as sp
class F(sp.Rational):
    def __new__(cls):
        return sp.Rational.__new__(cls, 1, 2)
    def __str__(self):
        return '7/10'
def claims(ch):
    ch.add(a=F())
""",
    "law-nan": """\
import sympy as sp
from symroof.claims import law
def claims(ch):
    ch.add(a=law(sp.Float('nan')))
""",
    "law-obj": """\
from symroof.claims import law
class T:
    def __bool__(self):
        return True
def claims(ch):
    ch.add(a=law(T()))
""",
    "law-int": """\
from symroof.claims import law
def claims(ch):
    ch.add(a=law(1))
""",
    "within-str": """\
from symroof.claims import within
def claims(ch):
    ch.add(a=within(0.5, '0.1', '__import__("os").getpid()'))
""",
    "measured-fake": """\
from symroof.claims import measured
def claims(ch):
    ch.add(a=measured('trust me'))
""",
    "definition": """\
from symroof.claims import definition
def claims(ch):
    ch.add(a=definition(0.7))
""",
    "given-evil": """\
def claims(ch):
    ch.add(a=ch.given('a', 0.5))
""",
}
# grandchildren that outlive the worker unless its group is killed
SPAWN_PY = {
    "fork-sleep": """\
import os, time
if os.fork() == 0:
    os.execvp('sleep', ['sleep', '{tag}'])
""" + GOOD_PY,
    "popen-sleep": """\
import subprocess
subprocess.Popen(['sleep', '{tag}'])
""" + GOOD_PY,
    "setsid-sleep": """\
import subprocess
subprocess.Popen(['sleep', '{tag}'], start_new_session=True)
""" + GOOD_PY,
    "double-fork": """\
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp('sleep', ['sleep', '{tag}'])
    os._exit(0)
""" + GOOD_PY,
}
# expressions unequal to B for some positive B; an OK is an unchecked pass
UNEQUAL = [
    "B + sp.floor(B/1000)",
    "sp.Max(B, 10**6)",
    "B*(1 + sp.Rational(1, 10**40))",
    "sp.Abs(B - 50) + 50",
    "B + sp.sin(sp.pi*B)",
    "sp.floor(B)",
    "sp.ceiling(B)",
    "sp.Piecewise((B, B < 10**5), (B + 1, True))",
    "sp.Min(B, 2**40)",
    "B + sp.exp(-1000*B**2)",
    "B + sp.Heaviside(B - 1000)",
    "sp.Max(B, 1)",
    "B + sp.sign(B - 7) + 1",
    "sp.Mod(B, 10**9)",
    "B + sp.frac(B)",
    "B + sp.Min(0, B - 10**3)",
]
HOSTILE_QUOTE = [
    "q $^^5cinput{/etc/hostname}$",
    "q $^^5cdef^^5cx{^^5cx}^^5cx$",
    "q $\\catcode`\\#=12 x$",
    "q $\\input{/etc/hostname}$",
    "q $\\write18{true}$",
    "q \\write18{true}",
    "q $^^0a x$",
    "q $\\immediate\\write18{true}$",
    "q $\\csname relax\\endcsname$",
    "q $\\def\\x{1}$",
    "q $x^^^^005c y$",
    "q $\\x^^40$",
    "q $\\href{javascript:alert(1)}{x}$",
    "q $</span><script>$",
    "q $\\text{\\input{x}}$",
    "q \x1b[31m x",
    "q \x07\x08\x0b",
    "q \u202e x",
    "q $" + "{" * 5000 + "$",
    "q " + "Ω" * 200_000,
    "q $\\\\$",
    "q $$$$",
    "q $\\begin{verbatim}x$",
    "q ^^5cinput{x}",
    "q $\\string\\input$",
    "q $\\expandafter\\input$",
    "q $\\newcommand{\\x}{1}$",
    "q %\n\\input{x}",
    "q $\\usepackage{x}$",
    "q $\\openin1=x$",
    "q $\\read1to\\x$",
    "q $\\special{x}$",
]
TEX_MARKS = (
    "^^5c",
    "\\input",
    "\\write",
    "\\catcode",
    "\\csname",
    "\\openin",
    "\\read",
    "\\special",
    "\\def\\x",
    "\\newcommand",
    "\\usepackage",
    "\\immediate",
    "\\expandafter",
)


def chapter_case(rng: random.Random, n: int) -> Case:
    kind = rng.choice(
        ["stated", "tolerance", "py", "py", "py", "spawn", "unequal", "quote", "field", "toml"]
    )
    if kind == "stated":
        s = rng.choice(WRONG_STATED)
        return chapter(GOOD_PY, row(s), "not-ok", f"stated {s!r} against 1/2")
    if kind == "tolerance":
        t = rng.choice(BAD_TOLERANCE)
        return chapter(GOOD_PY, row("0.7", tolerance=t), "not-ok", f"tolerance {t}")
    if kind == "py":
        name = rng.choice(sorted(HOSTILE_PY))
        return chapter(HOSTILE_PY[name], row("0.7"), "not-ok", f"claims.py {name}")
    if kind == "spawn":
        name = rng.choice(sorted(SPAWN_PY))
        tag = f"{900 + n}.{rng.randrange(10**6)}"
        return chapter(
            SPAWN_PY[name].replace("{tag}", tag), row("0.7"), "not-ok", f"claims.py {name}", tag
        )
    if kind == "unequal":
        e = rng.choice(UNEQUAL)
        py = (f"import sympy as sp\nB = sp.Symbol('B', positive=True)\n"
              f"def claims(ch):\n    ch.add(a={e})\n")
        return chapter(py, row("B"), "not-ok", f"{e} against B")
    if kind == "quote":
        q = rng.choice(HOSTILE_QUOTE)
        return chapter(
            GOOD_PY,
            row("0.5", q),
            "tex",
            f"quote {q[:40]!r}",
            extra=(
                "report",
                "{tmp}/ch",
                "--out",
                "{tmp}/out",
                "--format",
                "md,tex,pdf" if rng.random() < 0.25 else "md,tex",  # pdflatex: a few
                "--timeout",
                "5",
            ),
        )
    if kind == "field":
        key = rng.choice(
            [
                "statement",
                "meaning",
                "assumes",
                "omits",
                "figures",
                "section",
                "conflicts",
                "unit",
                "kind",
                "note",
            ]
        )
        raw = rng.choice(
            [
                toml_str(pick_text(rng)),
                "5",
                "true",
                "[1, 2]",
                "{ a = 1 }",
                "1979-05-27",
                "[" + ", ".join([toml_str("x")] * 2000) + "]",
            ]
        )
        return chapter(GOOD_PY, row("0.7", **{key: raw}), "not-ok", f"field {key} = {raw[:30]}")
    # the table file itself
    body = rng.choice(
        [
            "\ufeff" + row("0.7"),
            row("0.7") + '[s.a]\nstated = "0.7"\n',
            row("0.7").replace("[s.a]", '[s."a\\u0000"]'),
            HEAD.replace("h-en", "\x1b[31m") + '[s.a]\nquote = "q"\nstated = "0.7"\n',
            HEAD + '[s.a]\nquote = "q"\nstated = 0.7\n',
            HEAD + '[s.a]\nquote = "q"\nstated = [0.7]\n',
            HEAD + '[s.a]\nquote = "q"\nstated = true\n',
            HEAD + '[s.a]\nquote = 5\nstated = "0.7"\n',
            HEAD + '[s.a]\nstated = "0.7"\n',
            '[chapter]\nid = 5\n[s.a]\nstated = "0.7"\n',
            "a = " + "[" * 5000 + "]" * 5000 + "\n" + row("0.7"),
            row("0.7") + "# " + "x" * 3_000_000 + "\n",
            row("0.7") + '\n[s.b]\nquote = "q"\nstated = "0.5"\n' * 1,
            "\x00" + row("0.7"),
            row("0.7").replace('title = "h"', 'title = "h' + "\\u0007" * 50 + '"'),
            row("0.7").replace('book = "b"', 'book = "' + "b" * 1_000_000 + '"'),
            row("0.7").replace("[chapter]", '[chapter]\nlanguage = "xx"\ncache = "maybe"'),
            row("0.7").replace("[chapter]", "[chapter]\ncache = false"),
        ]
    )
    return chapter(GOOD_PY, body, "not-ok", f"table {body[:40]!r}")


def pick_text(rng: random.Random) -> str:
    return rng.choice(rng.choice([TEXT, CODE, NUMBERS]))


def catalogue_case(rng: random.Random) -> Case:
    value = rng.choice(UNITS + NUMBERS + CODE[:30])
    where = rng.choice(
        [
            "peak",
            "bw",
            "cap",
            "count",
            "latency",
            "direction",
            "per",
            "source",
            "alt",
            "name",
            "topology",
        ]
    )
    fig = {
        "peak": '[chips.x.peak.mxu.bf16]\nvalue = {v}\nsource = "a"\n',
        "bw": '[chips.x.memory.hbm]\nbandwidth = {{ value = {v}, source = "a" }}\n',
        "cap": ('[chips.x.memory.hbm]\n'
                'bandwidth = {{ value = "1 TB/s", source = "a" }}\n'
                'capacity = {{ value = {v}, source = "a" }}\n'),
        "count": ('[chips.x.links.ici]\n'
                  'bandwidth = {{ value = "1 GB/s", source = "a" }}\n'
                  'direction = "one-way"\n'
                  'per = "link"\n'
                  'count = {v}\n'),
        "latency": ('[chips.x.links.ici]\n'
                    'bandwidth = {{ value = "1 GB/s", source = "a" }}\n'
                    'latency = {{ value = {v}, source = "a" }}\n'),
        "direction": ('[chips.x.links.ici]\n'
                      'bandwidth = {{ value = "1 GB/s", source = "a" }}\n'
                      'direction = {v}\n'),
        "per": '[chips.x.links.ici]\nbandwidth = {{ value = "1 GB/s", source = "a" }}\nper = {v}\n',
        "source": '[chips.x.peak.mxu.bf16]\nvalue = "1e12 FLOP/s"\nsource = {v}\n',
        "alt": ('[chips.x.peak.mxu.bf16]\n'
                'value = "1e12 FLOP/s"\n'
                'source = "a"\n'
                'alternatives = [ {{ label = {v}, value = {v}, source = "a" }} ]\n'),
        "name": '[chips.{n}.peak.mxu.bf16]\nvalue = "1e12 FLOP/s"\nsource = "a"\n',
        "topology": "[chips.x]\ntopologies = [{v}]\n[topologies.t]\nkind = {v}\nsize = {v}\n",
    }[where]
    raw = (
        toml_str(value)
        if rng.random() < 0.8
        else rng.choice(["5", "-1", "nan", "inf", "true", "[]", "{}", "1e308"])
    )
    body = '[sources]\na = "b"\n' + fig.format(v=raw, n=toml_str(value))
    if where in ("count", "latency", "direction", "per", "cap", "topology"):
        body += '[chips.x.peak.mxu.bf16]\nvalue = "1e12 FLOP/s"\nsource = "a"\n'
    verb = rng.choice(
        [
            ("chips", "--catalog", "{tmp}/c.toml"),
            ("chip", "x", "--catalog", "{tmp}/c.toml"),
            (
                "derive",
                "--catalog",
                "{tmp}/c.toml",
                "--chip",
                "x",
                "--einsum",
                "B D, D F -> B F",
                "--timeout",
                "10",
            ),
            (
                "collective",
                "allreduce",
                "--bytes",
                "P",
                "--axes",
                "X",
                "--mesh",
                "X=4",
                "--catalog",
                "{tmp}/c.toml",
                "--chip",
                "x",
            ),
        ]
    )
    return Case("catalogue", verb, (("c.toml", body),), note=f"{where} = {raw[:30]}")


def config_case(rng: random.Random) -> Case:
    cfg = {
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 1000,
        "max_position_embeddings": 512,
    }
    key = rng.choice(
        [
            *sorted(cfg),
            "head_dim",
            "tie_word_embeddings",
            "num_local_experts",
            "sliding_window",
            "torch_dtype",
            "rope_scaling",
        ]
    )
    bad: object = rng.choice(
        [
            0,
            -1,
            1.5,
            10**30,
            "8",
            None,
            True,
            [],
            {},
            "nan",
            1e308,
            pick_text(rng),
            2**63,
            -(2**63),
            [4] * 1000,
        ]
    )
    cfg[key] = bad  # type: ignore[assignment]
    text = json.dumps(cfg)
    if rng.random() < 0.15:
        text = rng.choice(
            [
                text[:-5],
                text.replace("256", "1" + "0" * 4400),
                "[" * 50000,
                text.replace("{", '{"x": ' + "[" * 3000 + "]" * 3000 + ",", 1),
                "",
            ]
        )
    mode = rng.choice([(), ("--decode",), ("--fit",), ("--prefill",), ("--symbolic",), ("--json",)])
    return Case(
        "config",
        ("model", "{tmp}/config.json", *mode),
        (("config.json", text),),
        note=f"{key} = {str(bad)[:30]}",
    )


# issue 38: hostile run 3's attacks on the protocol, the parent's output and the cache
_PIPES = """\
import os, stat, fcntl, time, threading
def pipe_fds():
    out = []
    for n in os.listdir('/proc/self/fd'):
        fd = int(n)
        try:
            st = os.fstat(fd)
            if fd > 2 and stat.S_ISFIFO(st.st_mode) and \\
                    (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE) == os.O_WRONLY:
                out.append(fd)
        except OSError:
            pass
    return out
def beat(line, seconds, pause):
    t0 = time.time()
    while time.time() - t0 < seconds:
        try:
            for fd in pipe_fds():
                os.write(fd, line)
            time.sleep(pause)
        except BaseException:
            pass
"""
HOSTILE_PY.update({
    "heartbeat-start": _PIPES + "beat(b'{\"t\":\"start\",\"i\":0}\\n', 40, 0.5)\n" + GOOD_PY,
    "heartbeat-unknown": _PIPES + "beat(b'{\"t\":\"ping\"}\\n', 40, 0.5)\n" + GOOD_PY,
    "heartbeat-thread": _PIPES + "threading.Thread(target=beat, args=(b'{\"t\":\"value\","
                        "\"i\":0,\"value\":null}\\n', 40, 0.5), daemon=True).start()\n"
                        "time.sleep(40)\n" + GOOD_PY,
    "flood-lines": _PIPES + "beat(b'{\"t\":\"start\",\"i\":0}\\n' * 100000, 40, 0)\n" + GOOD_PY,
    "flood-no-newline": _PIPES + "beat(b'x' * (1 << 24), 40, 0)\n" + GOOD_PY,
    "ppid-fd1-spaced": "import os\ntry:\n    open(f'/proc/{os.getppid()}/fd/1', 'w')"
                       ".write('OK        a      0.7     0.7\\n')\nexcept OSError:\n"
                       "    pass\n" + GOOD_PY,
    "ppid-fd2": "import os\ntry:\n    open(f'/proc/{os.getppid()}/fd/2', 'w')"
                ".write('OK a\\n')\nexcept OSError:\n    pass\n" + GOOD_PY,
    "sigstop-parent": "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGSTOP)\n"
                      "except OSError:\n    pass\n" + GOOD_PY,
    "devzero-dep": "import symroof.claims.worker as w\nw._real_file = lambda p: True\n"
                   "open('/dev/zero', 'rb').read(1)\n" + GOOD_PY,
    "rewrite-own-table": "import pathlib\nt = pathlib.Path(__file__).parent / 'en.toml'\n"
                         "try:\n    t.write_text(t.read_text().replace('0.7', '0.5'))\n"
                         "except OSError:\n    pass\n" + GOOD_PY,
})
# a cache entry forged, flipped or pre-written by a derivation, then the run again: the
# second run must not serve an OK for the wrong table (each run with the case's cache)
_FORGE = """\
import os, glob, json
for f in glob.glob(os.path.join(os.environ.get('SYMROOF_CACHE_DIR', '.'), '*')):
    try:
        text = open(f).read().replace('MISMATCH', 'OK').replace('1/2', '7/10')
        open(f, 'w').write(text)
    except OSError:
        pass
try:
    from symroof.claims.cache import VerdictCache
    from pathlib import Path
    here = Path(__file__).resolve().parent
    for t in (5.0, 5, 30.0):
        p = VerdictCache().slot(here, t)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"entry": "{}", "mac": ""}))
except Exception:
    pass
"""
_OTHER_PY = "import sympy as sp\ndef claims(ch):\n    ch.add(b=sp.Rational(1, 2))\n"
_OTHER_TABLE = HEAD.replace('"h-en"', '"p-en"') + '[s.b]\nquote = "q"\nstated = "0.5"\n'
_chapter_case_before_38 = chapter_case


def chapter_case(rng: random.Random, n: int) -> Case:  # type: ignore[no-redef]
    """The cases above, one in ten a cache attack (two runs with a cache) or --json; drawn
    from a generator of its own, so that the corpus of a seed is otherwise unchanged."""
    before = _chapter_case_before_38(rng, n)
    rng = random.Random(f"issue-38:{n}:{rng.getstate()[1][:8]}")
    if rng.random() >= 0.1:
        return before
    kind = rng.choice(["self-forge", "flip-other", "json"])
    run = ("verify", "{tmp}/ch", "--timeout", "5")
    if kind == "self-forge":
        return Case("chapter", run, (("ch/claims.py", _FORGE + GOOD_PY),
                                     ("ch/en.toml", row("0.7"))), "not-ok",
                    note="claims.py forges its own cache entry", extra=run)
    if kind == "flip-other":
        return Case("chapter", (*run, "{tmp}/p"),
                    (("ch/claims.py", GOOD_PY), ("ch/en.toml", row("0.7")),
                     ("p/claims.py", _FORGE + _OTHER_PY), ("p/en.toml", _OTHER_TABLE)),
                    "not-ok", note="another chapter flips this chapter's entry", extra=run)
    name = rng.choice(sorted(HOSTILE_PY))
    return Case("chapter", ("verify", "{tmp}/ch", "--no-cache", "--timeout", "5", "--json"),
                (("ch/claims.py", HOSTILE_PY[name]), ("ch/en.toml", row("0.7"))), "not-ok",
                note=f"claims.py {name}, --json")
