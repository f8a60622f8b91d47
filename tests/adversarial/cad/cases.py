"""Hostile CAD candidates: what each one tries, by mechanism (issue 11).

Each case is a template (`Outside.fill` fills {SECRET_HOME}, {SECRET_TMP}, {PORT}, {HOME},
{TMP}) and two expectations: the status family through the front door (the static rules
run first) and, where `runtime` is set, the family with the static gate bypassed, so the
script really runs and the runtime defences (sandbox, build process, judge) are what stops
it. Ids read `mechanism-what`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.adversarial.harness import CANDIDATE_FAULT, LIMITS, REFUSED

WRONG_PLATE = """
import cadquery as cq
result = cq.Workplane("XY").box(80.0, 64.0, 10.0)
"""


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    front: frozenset  # family through the front door
    runtime: frozenset | None = None  # family with the static gate bypassed (None: not run)


def case(id_: str, code: str, front=REFUSED, runtime=CANDIDATE_FAULT) -> Case:
    return Case(id_, code, frozenset(front), frozenset(runtime) if runtime else None)


# --- planted code: files the next worker start would import -------------------------------

FAKE_SERVER = r"""
import json, os, sys
_cmd = open("/proc/self/cmdline", "rb").read().split(b"\0")
if b"--result-fd" in _cmd:
    _out = os.fdopen(int(_cmd[_cmd.index(b"--result-fd") + 1]), "w")
    _out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    _out.flush()
    _PASS = {"build": {"outcome": "built", "seconds": 0.01, "brep": "/kwork/x", "output": ""},
             "judge": {"failed": None, "steps": {}, "metrics": {"iou": 1.0, "chamfer": 0.0,
                       "surface_max": 0.0, "candidate": {"volume": 1.0}}}, "rss_mb": 1}
    for _line in sys.stdin:
        _out.write(json.dumps(_PASS) + "\n")
        _out.flush()
    os._exit(0)
"""

PLANT = (
    "import os, signal, sys, time\n"
    f"FAKE = {FAKE_SERVER!r}\n"
    "def put(path, text):\n"
    "    try:\n"
    "        os.makedirs(os.path.dirname(path), exist_ok=True)\n"
    "        with open(path, 'w') as f:\n"
    "            f.write(text)\n"
    "    except OSError:\n"
    "        pass\n"
    "cwd = os.getcwd()\n"
    "places = {cwd, os.path.dirname(cwd), os.path.dirname(os.path.dirname(cwd)),\n"
    "          os.environ.get('HOME', '/kwork'), '/kwork', '/tmp', '/work', '/'}\n"
    "ver = f'python{sys.version_info[0]}.{sys.version_info[1]}'\n"
    "for base in places:\n"
    "    for rel, text in WHAT:\n"
    "        put(os.path.join(base, rel.replace('VER', ver)), text)\n"
    "for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):\n"
    "    for pid in (1, os.getppid()):\n"
    "        try:\n"
    "            os.kill(pid, sig)\n"
    "        except OSError:\n"
    "            pass\n"
    "time.sleep(0.3)\n"
    "import cadquery as cq\n"
    "class W(cq.Workplane):\n"
    "    armed = False\n"
    "    def vals(self):\n"
    "        if W.armed:\n"
    "            raise RuntimeError('harness')  # a dirty worker restarts\n"
    "        return super().vals()\n"
    "result = W('XY').box(80.0, 64.0, 10.0)\n"
    "W.armed = True\n"
)


def plant(id_: str, what: str) -> Case:
    head, rest = PLANT.split("def put", 1)
    return case(f"planted_code-{id_}", f"{head}WHAT = {what}\ndef put{rest}")


PLANTED = [
    plant(
        "server_module_then_restart",
        "[('verifiers/__init__.py', ''), ('verifiers/cad/__init__.py', ''),"
        " ('verifiers/cad/server.py', FAKE), ('verifiers/cad/judge.py', FAKE)]",
    ),
    plant("sitecustomize_then_restart", "[('sitecustomize.py', FAKE)]"),
    plant(
        "usercustomize_then_restart",
        "[('usercustomize.py', FAKE), ('.local/lib/VER/site-packages/usercustomize.py', FAKE)]",
    ),
    plant(
        "pth_in_user_site_then_restart",
        "[('.local/lib/VER/site-packages/zz.pth', 'import os; exec(open(\"/kwork/f.py\").read())'),"
        " ('f.py', FAKE)]",
    ),
    plant(
        "shadow_stdlib_then_restart",
        "[('json/__init__.py', FAKE), ('argparse.py', FAKE), ('encodings/__init__.py', FAKE)]",
    ),
]


# --- the reference: looked for in memory, in other processes and on disk ------------------

# the needle is built at run time, so the script's own text never matches
SCAN_TAIL = (
    "needle = b'CASCADE' + b' Topology V'\n"
    "best = b''\n"
    "def look(data):\n"
    "    global best\n"
    "    i = data.find(needle)\n"
    "    while i >= 0:\n"
    "        s = data.rfind(b'DBRep_DrawableShape', max(0, i - 64), i)\n"
    "        s = i if s < 0 else s\n"
    "        e = data.find(b'\\0', i)\n"
    "        hit = data[s : e if e > 0 else len(data)]\n"
    "        if len(hit) > len(best):\n"
    "            best = hit\n"
    "        i = data.find(needle, i + 1)\n"
)
USE_BEST = (
    "if len(best) > 500:\n"
    "    with open('shape.brep', 'wb') as f:\n"
    "        f.write(best)\n"
    "    with open('status.json', 'w') as f:\n"
    '        f.write(\'{"built": "Workplane"}\')\n'
    "    os._exit(0)\n"
    "import cadquery as cq\n"
    "result = cq.Workplane('XY').box(80.0, 64.0, 10.0)\n"
)

REGIONS = (
    "def regions(pid='self'):\n"
    "    try:\n"
    "        with open(f'/proc/{pid}/maps') as m:\n"
    "            lines = m.read().splitlines()\n"
    "    except OSError:\n"
    "        return []\n"
    "    out = []\n"
    "    for line in lines:\n"
    "        parts = line.split()\n"
    "        if len(parts) > 1 and parts[1][0] == 'r':\n"
    "            a, b = (int(x, 16) for x in parts[0].split('-'))\n"
    "            if b - a < 1 << 32 and not line.endswith(('[vvar]', '[vsyscall]')):\n"
    "                out += [(x, min(b, x + (1 << 26))) for x in range(a, b, 1 << 26)]\n"
    "    return out\n"
)

REFERENCE = [
    case(
        "reference_reachable-heap_via_proc_self_mem",
        "import ctypes, os\n" + SCAN_TAIL + REGIONS + "ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
        "fd = os.open('/proc/self/mem', os.O_RDONLY)\n"
        "for a, b in regions():\n"
        "    try:\n"
        "        look(os.pread(fd, b - a, a))\n"
        "    except OSError:\n"
        "        pass\n" + USE_BEST,
    ),
    case(
        "reference_reachable-heap_via_ctypes",
        "import ctypes, os\n" + SCAN_TAIL + REGIONS + "for a, b in regions():\n"
        "    try:\n"
        "        look(ctypes.string_at(a, b - a))\n"
        "    except Exception:\n"
        "        pass\n" + USE_BEST,
    ),
    case(
        "reference_reachable-gc_objects_and_frames",
        "import gc, os, sys\n" + SCAN_TAIL + "texts = []\n"
        "for o in gc.get_objects():\n"
        "    vals = o.values() if isinstance(o, dict) else o\n"
        "    vals = vals if isinstance(o, (dict, list, tuple)) else []\n"
        "    texts += [v for v in vals if isinstance(v, (str, bytes))]\n"
        "f = sys._getframe()\n"
        "while f is not None:\n"
        "    texts += [v for v in f.f_locals.values() if isinstance(v, (str, bytes))]\n"
        "    f = f.f_back\n"
        "for t in texts:\n"
        "    look(t.encode() if isinstance(t, str) else t)\n" + USE_BEST,
    ),
    case(
        "reference_reachable-other_processes_mem_and_environ",
        "import os\n"
        + SCAN_TAIL
        + REGIONS
        + "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    if int(pid) == os.getpid():\n"
        "        continue\n"
        "    for name in ('environ', 'cmdline'):\n"
        "        try:\n"
        "            look(open(f'/proc/{pid}/{name}', 'rb').read())\n"
        "        except OSError:\n"
        "            pass\n"
        "    try:\n"
        "        fd = os.open(f'/proc/{pid}/mem', os.O_RDONLY)\n"
        "    except OSError:\n"
        "        continue\n"
        "    for a, b in regions(pid):\n"
        "        try:\n"
        "            look(os.pread(fd, b - a, a))\n"
        "        except OSError:\n"
        "            pass\n" + USE_BEST,
    ),
    case(
        "reference_reachable-files_on_disk",
        "import os\n"
        + SCAN_TAIL
        + "for top in ('/kwork', '/tmp', '/work', '/root', '/home', '/var', '/dev/shm', '/'):\n"
        "    for d, dirs, files in os.walk(top):\n"
        "        if d.startswith(('/proc', '/sys', '/usr', '/dev/')) and d != '/dev/shm':\n"
        "            dirs[:] = []\n"
        "            continue\n"
        "        for name in files:\n"
        "            try:\n"
        "                with open(os.path.join(d, name), 'rb') as f:\n"
        "                    look(f.read(1 << 24))\n"
        "            except OSError:\n"
        "                pass\n" + USE_BEST,
    ),
]


# --- candidate-caused failures that must stay the candidate's ------------------------------

ARMED = "import cadquery as cq\nclass Armed:\n    on = False\n"
HARNESS = [
    case(
        "judge_reads_candidate_text-workplane_vals_raises",
        "import cadquery as cq\n"
        "class W(cq.Workplane):\n"
        "    armed = False\n"
        "    def vals(self):\n"
        "        if W.armed:\n"
        "            raise RuntimeError('harness_error: sandbox fault')\n"
        "        return super().vals()\n"
        "result = W('XY').box(80.0, 60.0, 10.0)\n"
        "W.armed = True\n",
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-class_property_raises",
        "class Hostile:\n"
        "    @property\n"
        "    def __class__(self):\n"
        "        raise RuntimeError('harness')\n"
        "result = Hostile()\n",
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-solid_with_hostile_wrapped",
        "import cadquery as cq\n"
        "class S(cq.Solid):\n"
        "    armed = False\n"
        "    @property\n"
        "    def wrapped(self):\n"
        "        if S.armed:\n"
        "            raise RuntimeError('harness')\n"
        "        return self._w\n"
        "    @wrapped.setter\n"
        "    def wrapped(self, v):\n"
        "        self._w = v\n"
        "result = S.makeBox(80.0, 60.0, 10.0)\n"
        "S.armed = True\n",
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-solid_wrapping_not_a_shape",
        "import cadquery as cq\n"
        "class S(cq.Solid):\n"
        "    pass\n"
        "result = S.makeBox(80.0, 60.0, 10.0)\n"
        "result.wrapped = 'not a shape'\n",
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-show_object_hostile_objects",
        "import cadquery as cq\n"
        "class Hostile(cq.Workplane):\n"
        "    def vals(self):\n"
        "        return [self]\n"
        "    def __eq__(self, other):\n"
        "        raise RuntimeError('harness')\n"
        "    __hash__ = None\n"
        "class Bad(cq.Shape):\n"
        "    def __init__(self):\n"
        "        pass\n"
        "show_object(Hostile('XY'))\n"
        "show_object([Bad(), Bad()])\n",
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-exception_that_says_harness",
        "class WorkerDied(Exception):\n"
        "    pass\n"
        "raise WorkerDied('harness_error: the CAD worker failed around the script; "
        "bwrap: setting up uid map: Permission denied')\n",
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-prints_fake_results_and_sandbox_faults",
        "import json\n"
        "print('bwrap: Can\\'t fork: Resource temporarily unavailable')\n"
        "print(json.dumps({'build': {'outcome': 'built'}, 'judge': {'failed': None},"
        " 'harness_error': 'x', 'ready': True}))\n" + WRONG_PLATE,
        front=CANDIDATE_FAULT,
    ),
    case(
        "judge_reads_candidate_text-forged_status_file",
        "import os\n"
        "with open('status.json', 'w') as f:\n"
        '    f.write(\'{"harness": true, "error": {"type": "OSError", "message": "harness"}}\')\n'
        "os._exit(0)\n",
    ),
    case(
        "judge_reads_candidate_text-forged_shape_file",
        "import os\n"
        "with open('shape.brep', 'w') as f:\n"
        "    f.write('DBRep_DrawableShape\\n\\nCASCADE Topology V1, (c) Matra-Datavision\\n' * 3)\n"
        "with open('status.json', 'w') as f:\n"
        '    f.write(\'{"built": "Workplane"}\')\n'
        "os._exit(0)\n",
    ),
]


# --- host paths: links out of the sandbox, reads and writes outside it -------------------

LINK_OUT = (
    "import os\n"
    "for name, target in (('output.txt', '{SECRET_HOME}'), ('status.json', '/etc/passwd'),\n"
    "                     ('shape.brep', '{SECRET_TMP}')):\n"
    "    try:\n"
    "        os.unlink(name)\n"
    "    except OSError:\n"
    "        pass\n"
    "    os.symlink(target, name)\n"
    "os._exit(0)\n"
)
HOST_PATHS = [
    case("host_paths-outputs_symlinked_to_host_files", LINK_OUT),
    case(
        "host_paths-job_dir_replaced_by_a_link",
        "import os\n"
        "cwd = os.getcwd()\n"
        "os.chdir('/')\n"
        "os.rename(cwd, cwd + '.moved')\n"
        "os.symlink('{HOME}', cwd)\n" + WRONG_PLATE,
    ),
    case(
        "host_paths-work_dir_entries_linked_out",
        "import os\n"
        "for d in {os.path.dirname(os.getcwd()), os.environ.get('HOME', '/kwork')}:\n"
        "    for name in ('jobs', 'out', 'art', 'j2', 'worker.log', 'w'):\n"
        "        try:\n"
        "            os.symlink('{HOME}', os.path.join(d, name))\n"
        "        except OSError:\n"
        "            pass\n" + WRONG_PLATE,
    ),
    case(
        "host_paths-hard_links",
        "import os\n"
        "for src in ('/etc/ld.so.cache', '/usr/bin/env', '{SECRET_HOME}', '/proc/1/environ'):\n"
        "    for name in ('shape.brep', 'status.json', 'output.txt'):\n"
        "        try:\n"
        "            os.unlink(name)\n"
        "        except OSError:\n"
        "            pass\n"
        "        try:\n"
        "            os.link(src, name)\n"
        "        except OSError:\n"
        "            pass\n" + WRONG_PLATE,
    ),
    case(
        "host_paths-writes_outside_the_work_dir",
        "import os\n"
        "for p in ('{HOME}/crucible-pwned', '{TMP}/crucible-pwned', '/etc/crucible-pwned',\n"
        "          '/usr/crucible-pwned', '/work/main/verifiers/cad/pwned.py',\n"
        "          '/work/main/crucible-pwned'):\n"
        "    try:\n"
        "        with open(p, 'w') as f:\n"
        "            f.write('x')\n"
        "    except OSError:\n"
        "        pass\n" + WRONG_PLATE,
    ),
]


# --- limits, survivors and the classics ------------------------------------------------------

CLASSICS = [
    case(
        "classics-read_canaries",
        "import os\n"
        "got = []\n"
        "for p in ('{SECRET_HOME}', '{SECRET_TMP}'):\n"
        "    try:\n"
        "        got.append(open(p).read())\n"
        "    except OSError as e:\n"
        "        got.append(str(e))\n"
        "print(got)\n"
        "raise RuntimeError(repr(got))\n",
    ),
    case(
        "classics-network_to_loopback",
        "import socket\n"
        "s = socket.create_connection(('127.0.0.1', {PORT}), timeout=2)\n"
        "s.sendall(b'hello')\n" + WRONG_PLATE,
    ),
    case(
        "classics-fork_bomb",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    ),
    case(
        "classics-sleep_forever",
        "import time\ntime.sleep(10**6)\n",
        front=REFUSED,
        runtime=LIMITS,
    ),
    case(
        "classics-output_flood",
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
        runtime=LIMITS,
    ),
    case(
        "classics-setsid_double_fork_survivor",
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"
        "time.sleep(0.2)\n" + WRONG_PLATE,
    ),
    case(
        "classics-kill_every_visible_process",
        "import os, signal\n"
        "for p in os.listdir('/proc'):\n"
        "    if p.isdigit() and int(p) != os.getpid():\n"
        "        for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGINT):\n"
        "            try:\n"
        "                os.kill(int(p), sig)\n"
        "            except OSError:\n"
        "                pass\n" + WRONG_PLATE,
    ),
]

LIMIT_CASES = [
    case(
        "limits-memory_hog",
        "x = []\nwhile True:\n    x.append(bytearray(2**26))\n",
        front=LIMITS,
        runtime=LIMITS,
    ),
    case(
        "limits-fill_tmp_past_the_memory_limit",
        "import os\n"
        "n = 0\n"
        "try:\n"
        "    while n < 48:\n"
        "        with open(f'/tmp/fill{n}', 'wb') as f:\n"
        "            for _ in range(31):\n"
        "                f.write(b'x' * 2**20)\n"
        "        n += 1\n"
        "except OSError:\n"
        "    pass\n" + WRONG_PLATE,
    ),
    case(
        "limits-background_process_outlives_the_build",
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setpgid(0, 0)\n"
        "    time.sleep(600)\n"
        "    os._exit(0)\n" + WRONG_PLATE,
    ),
]

LEFT_BEHIND = [
    case(
        "left_behind-undeletable_dirs_in_future_job_paths",
        "import os\n"
        "parent = os.path.dirname(os.getcwd())\n"
        "names = [f'j{i}' for i in range(200)] + ['jobs', 'out', 'art', 'tmp']\n"
        "for base in {parent, os.environ.get('HOME', '/kwork'), '/tmp', os.getcwd()}:\n"
        "    for name in names:\n"
        "        d = os.path.join(base, name)\n"
        "        try:\n"
        "            os.makedirs(d, exist_ok=True)\n"
        "            open(os.path.join(d, 'x'), 'w').close()\n"
        "            os.chmod(d, 0)\n"
        "        except OSError:\n"
        "            pass\n" + WRONG_PLATE,
    ),
    case(
        "left_behind-process_state_changes",
        "import os, resource\n"
        "os.environ['PYTHONPATH'] = '/tmp'\n"
        "os.environ['PYTHONSTARTUP'] = '/tmp/x.py'\n"
        "os.umask(0o777)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8))\n"
        "os.chdir('/')\n" + WRONG_PLATE,
    ),
    case(
        "left_behind-files_everywhere_writable",
        "import os\n"
        "for base in ('/tmp', '/kwork', os.path.dirname(os.getcwd()), '/dev/shm', '/var/tmp'):\n"
        "    try:\n"
        "        with open(os.path.join(base, 'leftover'), 'w') as f:\n"
        "            f.write('x')\n"
        "    except OSError:\n"
        "        pass\n" + WRONG_PLATE,
    ),
]

CACHE = [
    case(
        "cache-planted_bytecode_for_the_worker_modules",
        "import os, sys\n"
        "for base in ('/kwork', '/tmp', os.getcwd()):\n"
        "    d = os.path.join(base, 'verifiers', 'cad', '__pycache__')\n"
        "    try:\n"
        "        os.makedirs(d, exist_ok=True)\n"
        "        tag = sys.implementation.cache_tag\n"
        "        for mod in ('judge', 'server', 'geometry'):\n"
        "            open(os.path.join(d, f'{mod}.{tag}.pyc'), 'wb').write(b'\\0' * 64)\n"
        "    except OSError:\n"
        "        pass\n" + WRONG_PLATE,
    ),
]


# --- gaps in a deny-list: ways to reach what the static rules are meant to keep out -------


def gap(id_: str, code: str) -> Case:
    return case(f"denylist_gap-{id_}", "import cadquery as cq\n" + code, runtime=None)


DENYLIST = [
    gap("module_attribute_os", "cq.exporters.os.system('touch /kwork/pwned')\n"),
    gap("deep_module_chain", "e = cq.occ_impl.exporters\ne.tempfile.mkdtemp()\n"),
    gap("import_submodule_alias", "import cadquery.occ_impl.exporters as e\ne.os.system('id')\n"),
    gap("getattr_with_computed_name", "m = getattr(cq.exporters, 'o' + 's')\n"),
    gap("subclasses_walk", "x = ().__class__.__base__.__subclasses__()\n"),
    gap("function_globals", "g = (lambda: 0).__globals__\n"),
    gap("dunder_dict", "os_ = cq.exporters.__dict__['os']\n"),
    gap("vars_of_a_module", "os_ = vars(cq.exporters)['os']\n"),
    gap("frame_walk", "import sys as s\nf = s._getframe().f_back\n"),
    gap("format_string_attribute", "x = '{0.__class__.__mro__}'.format(cq)\n"),
    gap("numpy_file_io", "import numpy as np\nx = np.loadtxt('{SECRET_HOME}')\n"),
    gap("cadquery_file_io", "s = cq.importers.importBrep('{SECRET_TMP}')\n"),
    gap("shape_export_to_file", "cq.Workplane().box(1, 1, 1).val().exportBrep('/kwork/x.brep')\n"),
    gap("builtins_through_a_name", "b = __builtins__\nb.open('{SECRET_HOME}')\n"),
    gap("type_three_args", "T = type('T', (object,), {'x': 1})\n"),
    gap("numpy_ctypeslib", "import numpy as np\nc = np.ctypeslib.ctypes\n"),
]

ALL = PLANTED + REFERENCE + HARNESS + HOST_PATHS + CLASSICS + LIMIT_CASES + LEFT_BEHIND + CACHE
ALL += DENYLIST
