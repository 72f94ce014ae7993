#!/usr/bin/env python3
"""The Extrae.jl path, with Python's ctypes standing in for Julia's ccall.

Extrae.jl binds "libseqtrace" by name and calls its C symbols; Extrae_jll
sets EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE=1 and the package calls
Extrae_init by hand; with Distributed, each process gives Extrae a task
id function (myid() - 1) and a task count (nworkers()).  Here two
processes (the master, myid 1, and a worker, myid 2) do exactly that
through ctypes against dwork's libseqtrace.so, found on LD_LIBRARY_PATH,
into one trace directory; `dwork merge` must then make one Paraver trace
with both tasks, their labelled events 20 ms apart (they sleep), their
user function enter/exit, and Running between init and fini.

usage: extrae_ctypes_test.py DWORK_TOOL   (LD_LIBRARY_PATH: libseqtrace)
"""
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PHASE = 7000
NTASKS = 2


def process(myid, trace_dir):
    """One Julia process of the Distributed program, as Extrae.jl runs."""
    os.environ["EXTRAE_ON"] = "1"
    os.environ["EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE"] = "1"
    os.environ["EXTRAE_FINAL_DIR"] = trace_dir
    lib = ctypes.CDLL("libseqtrace.so")  # const lib = "libseqtrace"
    cb = ctypes.CFUNCTYPE(ctypes.c_uint)
    taskid = cb(lambda: myid - 1)  # dist_taskid: myid() - 1
    numtasks = cb(lambda: NTASKS)  # dist_numtasks
    lib.Extrae_set_taskid_function(taskid)
    lib.Extrae_set_numtasks_function(numtasks)
    lib.Extrae_is_initialized.restype = ctypes.c_int
    assert lib.Extrae_is_initialized() == 0, "initialised before init"
    lib.Extrae_init()
    assert lib.Extrae_is_initialized() == 1, "Extrae_init did not start"
    v = [ctypes.c_uint(0) for _ in range(3)]
    lib.Extrae_get_version(*[ctypes.byref(x) for x in v])
    assert [x.value for x in v] == [5, 1, 2], [x.value for x in v]
    # Extrae.register(type, description, values, descriptions)
    t = ctypes.c_uint(PHASE)
    n = ctypes.c_uint(3)
    vals = (ctypes.c_uint64 * 3)(0, 1, 2)
    names = (ctypes.c_char_p * 3)(b"End", b"Compute", b"Send")
    lib.Extrae_define_event_type(ctypes.byref(t), b"Phase", ctypes.byref(n),
                                 vals, names)
    lib.Extrae_event.argtypes = [ctypes.c_uint, ctypes.c_uint64]
    lib.Extrae_user_function.argtypes = [ctypes.c_uint]
    lib.Extrae_user_function.restype = ctypes.c_uint64
    lib.Extrae_event(PHASE, 1)  # Extrae.emit
    assert lib.Extrae_user_function(1) != 0  # @user_function enter
    time.sleep(0.02)
    assert lib.Extrae_user_function(0) == 0
    types = (ctypes.c_uint * 2)(PHASE, PHASE + 1)
    values = (ctypes.c_uint64 * 2)(2, myid)
    lib.Extrae_nevent(2, types, values)
    lib.Extrae_event(PHASE, 0)
    lib.Extrae_fini()  # Extrae.finish


def fail(msg):
    print("extrae_ctypes: FAIL:", msg)
    sys.exit(1)


def events(prv):
    """(task, time, type, value) of every event of the .prv."""
    out = []
    for line in prv.splitlines():
        f = line.split(":")
        if f[0] != "2":
            continue
        for i in range(6, len(f) - 1, 2):
            out.append((int(f[3]), int(f[5]), int(f[i]), int(f[i + 1])))
    return out


def check(out):
    prv = open(out + ".prv").read()
    pcf = open(out + ".pcf").read()
    head = prv.splitlines()[0]
    if not re.match(r"#Paraver \(\d\d/\d\d/\d{4} at \d\d:\d\d\):\d+_ns:"
                    r"1\(\d+\):1:2\(1:1,1:1\),0$", head):
        fail("header %r: expected 2 tasks of 1 thread, Extrae's form" % head)
    ev = events(prv)
    for task in (1, 2):
        mine = [e for e in ev if e[0] == task]
        begin = [e[1] for e in mine if e[2] == PHASE and e[3] == 1]
        send = [e[1] for e in mine if e[2] == PHASE and e[3] == 2]
        who = [e[3] for e in mine if e[2] == PHASE + 1]
        funcs = [e[3] for e in mine if e[2] == 60000019]
        if len(begin) != 1 or len(send) != 1:
            fail("task %d: Phase events %s" % (task, mine))
        # never shorter than the sleep; longer on a loaded machine
        if not 20e6 <= send[0] - begin[0] <= 1e9:
            fail("task %d: %d ns between Compute and Send, slept 20 ms"
                 % (task, send[0] - begin[0]))
        if who != [task]:
            fail("task %d: its myid event says %s" % (task, who))
        if len(funcs) != 2 or funcs[0] < 2 or funcs[1] != 0:
            fail("task %d: user function values %s (want id, 0)"
                 % (task, funcs))
        appl = [e[3] for e in mine if e[2] == 40000001]
        if appl != [1, 0]:
            fail("task %d: application begin/end %s" % (task, appl))
    if not re.search(r"EVENT_TYPE\n0 +7000 +Phase\nVALUES\n0 +End\n"
                     r"1 +Compute\n2 +Send\n", pcf):
        fail("the .pcf does not label Phase and its values")
    running = [l for l in prv.splitlines()
               if l.startswith("1:") and l.endswith(":1")]
    if len(running) < 4:
        fail("Running is not shown on both tasks: %s" % running)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--process":
        process(int(sys.argv[2]), os.environ["XT_DIR"])
        return
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    tool = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="dwtest-ctypes-")
    try:
        trace = os.path.join(tmp, "trace")
        env = dict(os.environ, XT_DIR=trace)
        procs = [subprocess.Popen([sys.executable, __file__, "--process",
                                   str(i)], env=env) for i in (1, 2)]
        for p in procs:
            if p.wait() != 0:
                fail("a process exited with %d" % p.returncode)
        out = os.path.join(tmp, "out")
        r = subprocess.run([tool, "merge", trace, "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("dwork merge: %s" % r.stderr)
        check(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("extrae_ctypes: ok")


if __name__ == "__main__":
    main()
